#pragma once
// The add layer kind: inputs[0] + inputs[1] (+ ...), same shapes.

#include <fmt/format.h>

#include <vector>

#include "src/layers/detail/layer_rules.hpp"
#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::add> {
  static constexpr KindSpec spec{.traits = kTraitSum, .min_inputs = 2, .max_inputs = k_any_inputs};

  /// Its builder rule: checks the layer (c.fail names it) and returns its output shape.
  static std::vector<Index> shape(const LayerChecker& c) {
    for (std::size_t k = 1; k < c.layer().inputs.size(); ++k) {
      if (c.in(k) != c.in(0)) {
        c.fail(fmt::format("input {} has shape {} but input 0 has shape {}", k, shape_text(c.in(k)),
                           shape_text(c.in(0))));
      }
    }
    return c.in(0);
  }
  /// The map it is, in the passes' vocabulary (kinds/kind.hpp): every pass is a visitor v.
  template <class V>
  static decltype(auto) map(V&& v) {
    return v.sum(false);
  }
};

}  // namespace pathlift::detail
