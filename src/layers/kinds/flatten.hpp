#pragma once
// The flatten layer kind: to {product of the shape}: no node, no edge.

#include <vector>

#include "src/layers/detail/layer_rules.hpp"
#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::flatten> {
  static constexpr KindSpec spec{.traits = kTraitView};

  /// Its builder rule: checks the layer (c.fail names it) and returns its output shape.
  static std::vector<Index> shape(const LayerChecker& c) {
    return {checked_entries(c.in(0), "the input of shape")};
  }
  /// The map it is, in the passes' vocabulary (kinds/kind.hpp): every pass is a visitor v.
  template <class V>
  static decltype(auto) map(V&& v) {
    return v.reshape();
  }
};

}  // namespace pathlift::detail
