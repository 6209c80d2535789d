#pragma once
// The sub layer kind: inputs[0] - inputs[1], same shapes.

#include <vector>

#include "src/layers/detail/layer_rules.hpp"
#include "src/layers/kinds/add.hpp"
#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::sub> {
  static constexpr KindSpec spec{.traits = kTraitSum, .min_inputs = 2, .max_inputs = 2};

  /// Its builder rule: checks the layer (c.fail names it) and returns its output shape.
  static std::vector<Index> shape(const LayerChecker& c) {
    return Kind<LayerKind::add>::shape(c);  // the same rule: equal shapes
  }
  /// The map it is, in the passes' vocabulary (kinds/kind.hpp): every pass is a visitor v.
  template <class V>
  static decltype(auto) map(V&& v) {
    return v.sum(true);
  }
};

}  // namespace pathlift::detail
