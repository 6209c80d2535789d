#pragma once
// The concat layer kind: the inputs side by side along axis: no node, no edge.

#include <array>

#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::concat> {
  static constexpr std::array<FieldUse, 1> fields{FieldUse{Field::axis, false}};
  static constexpr KindRecord record{
      LayerKind::concat,
      "concat",
      kTraitView,
      1,
      k_any_inputs,
      fields,
      "the inputs side by side along axis (0: channels), the other dimensions equal"};

  static std::vector<Index> shape(const LayerChecker& c);
  /// The map it is, in the passes' vocabulary (kinds/kind.hpp): every pass is a visitor v.
  template <class V>
  static decltype(auto) map(V&& v) {
    return v.concat();
  }
};

}  // namespace pathlift::detail
