#pragma once
// The group_sort layer kind: groups of group_size entries along axis 0 sorted: an order-statistic
// node per entry.

#include <array>

#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::group_sort> {
  static constexpr std::array<FieldUse, 2> fields{FieldUse{Field::group_size, true},
                                                  FieldUse{Field::descending, false}};
  static constexpr KindRecord record{
      LayerKind::group_sort,
      "group_sort",
      kTraitMaxNodes | kTraitReadsValues,
      1,
      1,
      fields,
      "group_size consecutive entries along axis 0 sorted (descending: largest first)"};

  static std::vector<Index> shape(const LayerChecker& c);
  /// The map it is, in the passes' vocabulary (kinds/kind.hpp): every pass is a visitor v.
  template <class V>
  static decltype(auto) map(V&& v) {
    return v.group();
  }
};

}  // namespace pathlift::detail
