#pragma once
// The avg_pool layer kind: the mean of each window: fixed edges 1 / (the window's size).

#include <array>
#include <vector>

#include "src/layers/detail/layer_rules.hpp"
#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::avg_pool> {
  static constexpr std::array<FieldUse, 6> fields{
      FieldUse{Field::kernel, true},     FieldUse{Field::stride, false},
      FieldUse{Field::padding, false},   FieldUse{Field::dilation, false},
      FieldUse{Field::ceil_mode, false}, FieldUse{Field::count_include_pad, false}};
  static constexpr KindSpec spec{.traits = kTraitSum | kTraitWindow | kTraitReadsValues,
                                 .fields = fields};

  /// Its builder rule: checks the layer (c.fail names it) and returns its output shape.
  static std::vector<Index> shape(const LayerChecker& c) { return c.window(false, false); }
  /// The map it is, in the passes' vocabulary (kinds/kind.hpp): every pass is a visitor v.
  template <class V>
  static decltype(auto) map(V&& v) {
    return v.pool(false);
  }
};

}  // namespace pathlift::detail
