#pragma once
// The group_sort layer kind: groups of group_size entries along axis 0 sorted: an order-statistic
// node per entry.

#include <fmt/format.h>

#include <array>
#include <vector>

#include "src/layers/detail/layer_rules.hpp"
#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::group_sort> {
  static constexpr std::array<FieldUse, 2> fields{FieldUse{Field::group_size, true},
                                                  FieldUse{Field::descending, false}};
  static constexpr KindSpec spec{.traits = kTraitMaxNodes | kTraitReadsValues, .fields = fields};

  /// Its builder rule: checks the layer (c.fail names it) and returns its output shape.
  static std::vector<Index> shape(const LayerChecker& c) {
    const Layer& ly = c.layer();
    const std::vector<Index>& x = c.in(0);
    if (ly.group_size < 1 || ly.group_size > x[0] || x[0] % ly.group_size != 0) {
      c.fail(fmt::format("group_size {} must divide the {} entries of axis 0 of the input {}",
                         ly.group_size, x[0], shape_text(x)));
    }
    return x;
  }
  /// The map it is, in the passes' vocabulary (kinds/kind.hpp): every pass is a visitor v.
  template <class V>
  static decltype(auto) map(V&& v) {
    return v.group();
  }
};

}  // namespace pathlift::detail
