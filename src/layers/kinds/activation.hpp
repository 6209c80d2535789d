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
                                     kNoTrait,
                                     1,
                                     1,
                                     fields,
                                     "relu, leaky_relu:<slope> or identity, entry-wise"};

  static std::vector<Index> shape(const LayerChecker& c);
  /// The map it is, in the passes' vocabulary (kinds/kind.hpp): every pass is a visitor v.
  template <class V>
  static decltype(auto) map(V&& v) {
    return v.entrywise();
  }
};

}  // namespace pathlift::detail
