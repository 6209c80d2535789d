#pragma once
// The flatten layer kind: to {product of the shape}: no node, no edge.

#include <array>
#include <vector>

#include "src/layers/detail/layer_rules.hpp"
#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::flatten> {
  static constexpr std::array<FieldUse, 0> fields{};
  static constexpr KindRecord record{
      LayerKind::flatten, "flatten", kTraitView, 1, 1, fields, "to {product of the shape}"};

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
