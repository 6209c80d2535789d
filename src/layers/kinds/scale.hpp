#pragma once
// The scale layer kind: y = factor x, entry-wise: fixed edges of weight factor.

#include <array>

#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::scale> {
  static constexpr std::array<FieldUse, 1> fields{FieldUse{Field::factor, true}};
  static constexpr KindRecord record{
      LayerKind::scale,          "scale", kTraitSum | kTraitReadsValues, 1, 1, fields,
      "y = factor x, entry-wise"};

  static std::vector<Index> shape(const LayerChecker& c);
  /// The map it is, in the passes' vocabulary (kinds/kind.hpp): every pass is a visitor v.
  template <class V>
  static decltype(auto) map(V&& v) {
    return v.scaled();
  }
};

}  // namespace pathlift::detail
