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
      LayerKind::gather, "gather", std::nullopt, PlainKind::gather, kTraitView, 1, 1, fields};

  static std::vector<Index> shape(const LayerChecker& c);
};

}  // namespace pathlift::detail
