#pragma once
// The gather layer kind: entries picked along axis (output index i reads input index indices[i]):
// no node, no edge.

#include <fmt/format.h>

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "src/core/checked.hpp"
#include "src/layers/detail/layer_rules.hpp"
#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::gather> {
  static constexpr std::array<FieldUse, 2> fields{FieldUse{Field::axis, false},
                                                  FieldUse{Field::indices, true}};
  static constexpr KindSpec spec{.traits = kTraitView, .fields = fields};

  /// Its builder rule: checks the layer (c.fail names it) and returns its output shape.
  static std::vector<Index> shape(const LayerChecker& c) {
    const Layer& ly = c.layer();
    const std::vector<Index>& x = c.in(0);
    if (ly.axis < 0 || std::cmp_greater_equal(ly.axis, x.size())) {
      c.fail(fmt::format("axis {} is out of range for input shape {}", ly.axis, shape_text(x)));
    }
    const auto axis = static_cast<std::size_t>(ly.axis);
    if (ly.indices.empty()) {
      c.fail("has no indices");
    }
    for (std::size_t i = 0; i < ly.indices.size(); ++i) {
      const Index j = ly.indices[i];
      if (j < 0 || j >= x[axis]) {
        c.fail(
            fmt::format("index {} (entry {} of indices) is out of range 0..{} of dimension {} "
                        "of the input shape {}",
                        j, i, x[axis] - 1, axis, shape_text(x)));
      }
    }
    std::vector<Index> out = x;
    out[axis] = static_cast<Index>(ly.indices.size());
    checked_entries(out, "the output of shape");
    return out;
  }
  /// The map it is, in the passes' vocabulary (kinds/kind.hpp): every pass is a visitor v.
  template <class V>
  static decltype(auto) map(V&& v) {
    return v.pick();
  }
};

/// A layer of this kind named `name`: the entries of layer `input` picked along `axis`, output
/// index i reading input index indices[i] (the ONNX importer's gathers, gather_along).
inline Layer pick_layer(std::string name, Index input, Index axis, std::vector<Index> indices) {
  Layer l;
  l.kind = LayerKind::gather;
  l.name = std::move(name);
  l.inputs = {input};
  l.axis = axis;
  l.indices = std::move(indices);
  return l;
}

}  // namespace pathlift::detail
