#pragma once
// The k_max_pool layer kind: the k-th largest of each window: a max:k node per entry.

#include <array>

#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::k_max_pool> {
  static constexpr std::array<FieldUse, 6> fields{
      FieldUse{Field::kernel, true},     FieldUse{Field::stride, false},
      FieldUse{Field::padding, false},   FieldUse{Field::dilation, false},
      FieldUse{Field::ceil_mode, false}, FieldUse{Field::k, false}};
  static constexpr KindRecord record{
      LayerKind::k_max_pool,
      "k_max_pool",
      kTraitWindow | kTraitMaxNodes | kTraitReadsValues,
      1,
      1,
      fields,
      "a max_pool's fields and k: the k-th largest of each window (k = 1: max_pool)"};

  static std::vector<Index> shape(const LayerChecker& c);
  /// The map it is, in the passes' vocabulary (kinds/kind.hpp): every pass is a visitor v.
  template <class V>
  static decltype(auto) map(V&& v) {
    return v.pool(true);
  }
};

}  // namespace pathlift::detail
