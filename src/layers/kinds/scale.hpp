#pragma once
// The scale layer kind: y = factor x, entry-wise: fixed edges of weight factor.

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <vector>

#include "src/layers/detail/layer_rules.hpp"
#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::scale> {
  static constexpr std::array<FieldUse, 1> fields{FieldUse{Field::factor, true}};
  static constexpr KindSpec spec{.traits = kTraitSum | kTraitReadsValues, .fields = fields};

  /// Its builder rule: checks the layer (c.fail names it) and returns its output shape.
  static std::vector<Index> shape(const LayerChecker& c) {
    if (!std::isfinite(c.layer().factor)) {
      c.fail(fmt::format("factor {} is not finite", c.layer().factor));
    }
    return c.in(0);
  }
  /// The map it is, in the passes' vocabulary (kinds/kind.hpp): every pass is a visitor v.
  template <class V>
  static decltype(auto) map(V&& v) {
    return v.scaled();
  }
};

}  // namespace pathlift::detail
