#pragma once
// The input layer kind: layer 0: the data (any other layer of this kind is an error).

#include <vector>

#include "src/layers/detail/layer_rules.hpp"
#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::input> {
  static constexpr KindSpec spec{};

  /// Its builder rule: checks the layer (c.fail names it) and returns its output shape.
  static std::vector<Index> shape(const LayerChecker& c) {
    c.fail("only layer 0 may be the input");
  }
  /// The map it is, in the passes' vocabulary (kinds/kind.hpp): every pass is a visitor v.
  template <class V>
  static decltype(auto) map(V&& v) {
    return v.input();
  }
};

}  // namespace pathlift::detail
