#pragma once
// The concat layer kind: the inputs side by side along axis: no node, no edge.

#include <fmt/format.h>

#include <array>
#include <utility>
#include <vector>

#include "src/core/checked.hpp"
#include "src/layers/detail/layer_rules.hpp"
#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::concat> {
  static constexpr std::array<FieldUse, 1> fields{FieldUse{Field::axis, false}};
  static constexpr KindSpec spec{
      .traits = kTraitView, .max_inputs = k_any_inputs, .fields = fields};

  /// Its builder rule: checks the layer (c.fail names it) and returns its output shape.
  static std::vector<Index> shape(const LayerChecker& c) {
    const Layer& ly = c.layer();
    const std::vector<Index>& first = c.in(0);
    if (ly.axis < 0 || std::cmp_greater_equal(ly.axis, first.size())) {
      c.fail(fmt::format("axis {} is out of range for input shape {}", ly.axis, shape_text(first)));
    }
    std::vector<Index> out = first;
    const auto axis = static_cast<std::size_t>(ly.axis);
    for (std::size_t k = 1; k < ly.inputs.size(); ++k) {
      const std::vector<Index>& s = c.in(k);
      bool ok = s.size() == first.size();
      for (std::size_t i = 0; ok && i < s.size(); ++i) {
        ok = i == axis || s[i] == first[i];
      }
      if (!ok) {
        c.fail(fmt::format(
            "input {} has shape {} but input 0 has shape {}: only dimension {} may differ", k,
            shape_text(s), shape_text(first), axis));
      }
      if (add_overflows(out[axis], s[axis], out[axis]) || out[axis] > k_max_dim) {
        c.fail(fmt::format("the concatenated dimension {} exceeds {}", axis, k_max_dim));
      }
    }
    return out;
  }
  /// The map it is, in the passes' vocabulary (kinds/kind.hpp): every pass is a visitor v.
  template <class V>
  static decltype(auto) map(V&& v) {
    return v.concat();
  }
};

}  // namespace pathlift::detail
