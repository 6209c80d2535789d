#pragma once
// The activation layer kind: relu, leaky_relu or identity, entry-wise.

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <vector>

#include "src/layers/detail/layer_rules.hpp"
#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::activation> {
  static constexpr std::array<FieldUse, 1> fields{FieldUse{Field::activation, true}};
  static constexpr KindSpec spec{.fields = fields};

  /// Its builder rule: checks the layer (c.fail names it) and returns its output shape.
  static std::vector<Index> shape(const LayerChecker& c) {
    const Activation& a = c.layer().activation;
    if (a.kind == ActivationKind::max) {
      c.fail("activation 'max' is not an entry-wise activation (use a max_pool layer)");
    }
    if (!std::isfinite(a.negative_slope)) {
      c.fail(fmt::format("negative slope {} is not finite", a.negative_slope));
    }
    return c.in(0);
  }
  /// The map it is, in the passes' vocabulary (kinds/kind.hpp): every pass is a visitor v.
  template <class V>
  static decltype(auto) map(V&& v) {
    return v.entrywise();
  }
};

}  // namespace pathlift::detail
