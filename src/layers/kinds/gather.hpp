#pragma once
// The gather layer kind: entries picked along axis (output index i reads input index indices[i]):
// no node, no edge.

#include <array>

#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::gather> {
  static constexpr std::array<FieldUse, 2> fields{FieldUse{Field::axis, false},
                                                  FieldUse{Field::indices, true}};
  static constexpr KindRecord record{
      LayerKind::gather,
      "gather",
      kTraitView,
      1,
      1,
      fields,
      "entries picked along axis: output index i reads input index indices[i] (repeats allowed)"};

  static std::vector<Index> shape(const LayerChecker& c);
  /// The map it is, in the passes' vocabulary (kinds/kind.hpp): every pass is a visitor v.
  template <class V>
  static decltype(auto) map(V&& v) {
    return v.pick();
  }
};

}  // namespace pathlift::detail
