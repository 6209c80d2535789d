#pragma once
// The activation layer kind: relu, leaky_relu or identity, entry-wise.

#include <array>

#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::activation> {
  static constexpr std::array<FieldUse, 1> fields{FieldUse{Field::activation, true}};
  static constexpr KindRecord record{LayerKind::activation,
                                     "activation",
                                     std::nullopt,
                                     PlainKind::activation,
                                     kNoTrait,
                                     1,
                                     1,
                                     fields};

  static std::vector<Index> shape(const LayerChecker& c);
};

}  // namespace pathlift::detail
