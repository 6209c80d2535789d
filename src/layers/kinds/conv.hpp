#pragma once
// The conv layer kind: Conv1d / Conv2d: windows of weights over a {C, L} or {C, H, W} input.

#include <array>
#include <vector>

#include "src/layers/detail/layer_rules.hpp"
#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::conv> {
  static constexpr std::array<FieldUse, 8> fields{FieldUse{Field::out_channels, true},
                                                  FieldUse{Field::kernel, true},
                                                  FieldUse{Field::stride, false},
                                                  FieldUse{Field::padding, false},
                                                  FieldUse{Field::dilation, false},
                                                  FieldUse{Field::groups, false},
                                                  k_weight_offset,
                                                  k_bias_offset};
  static constexpr KindSpec spec{.traits = kTraitSum | kTraitWindow | kTraitReadsValues,
                                 .fields = fields};

  /// Its builder rule: checks the layer (c.fail names it) and returns its output shape.
  static std::vector<Index> shape(const LayerChecker& c) { return c.window(true, false); }
  /// The map it is, in the passes' vocabulary (kinds/kind.hpp): every pass is a visitor v.
  template <class V>
  static decltype(auto) map(V&& v) {
    return v.window();
  }
};

}  // namespace pathlift::detail
