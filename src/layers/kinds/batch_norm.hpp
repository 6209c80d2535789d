#pragma once
// The batch_norm layer kind: eval-mode per-channel affine y = a x + b.

#include <array>
#include <vector>

#include "src/layers/detail/layer_rules.hpp"
#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::batch_norm> {
  static constexpr std::array<FieldUse, 2> fields{k_weight_offset, k_bias_offset};
  static constexpr KindSpec spec{.traits = kTraitSum | kTraitReadsValues, .fields = fields};

  /// Its builder rule: checks the layer (c.fail names it) and returns its output shape.
  static std::vector<Index> shape(const LayerChecker& c) { return c.in(0); }
  /// The map it is, in the passes' vocabulary (kinds/kind.hpp): every pass is a visitor v.
  template <class V>
  static decltype(auto) map(V&& v) {
    return v.channel_affine();
  }
};

}  // namespace pathlift::detail
