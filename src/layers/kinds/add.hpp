#pragma once
// The add layer kind: inputs[0] + inputs[1] (+ ...), same shapes.

#include <array>

#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::add> {
  static constexpr std::array<FieldUse, 0> fields{};
  static constexpr KindRecord record{LayerKind::add,
                                     "add",
                                     kTraitSum,
                                     2,
                                     k_any_inputs,
                                     fields,
                                     "inputs[0] + inputs[1] (+ ...), same shapes"};

  static std::vector<Index> shape(const LayerChecker& c);
  /// The map it is, in the passes' vocabulary (kinds/kind.hpp): every pass is a visitor v.
  template <class V>
  static decltype(auto) map(V&& v) {
    return v.sum(false);
  }
};

}  // namespace pathlift::detail
