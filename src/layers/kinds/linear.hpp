#pragma once
// The linear layer kind: y = W x + b on a {F} input.

#include <fmt/format.h>

#include <array>
#include <vector>

#include "src/layers/detail/layer_rules.hpp"
#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::linear> {
  static constexpr std::array<FieldUse, 3> fields{FieldUse{Field::out_features, true},
                                                  k_weight_offset, k_bias_offset};
  static constexpr KindSpec spec{.traits = kTraitSum | kTraitReadsValues, .fields = fields};

  /// Its builder rule: checks the layer (c.fail names it) and returns its output shape.
  static std::vector<Index> shape(const LayerChecker& c) {
    const Layer& ly = c.layer();
    const std::vector<Index>& x = c.in(0);
    if (x.size() != 1) {
      c.fail(fmt::format("a linear layer needs a vector input {{F}}, got shape {} (flatten first)",
                         shape_text(x)));
    }
    if (ly.out_features < 1 || ly.out_features > k_max_dim) {
      c.fail(fmt::format("out_features must be in 1..{}, got {}", k_max_dim, ly.out_features));
    }
    if (x[0] > k_max_dim / ly.out_features) {
      c.fail(fmt::format("{} x {} weights is too many", ly.out_features, x[0]));
    }
    return {ly.out_features};
  }
  /// The map it is, in the passes' vocabulary (kinds/kind.hpp): every pass is a visitor v.
  template <class V>
  static decltype(auto) map(V&& v) {
    return v.dense();
  }
};

}  // namespace pathlift::detail
