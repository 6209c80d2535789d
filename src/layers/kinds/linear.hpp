#pragma once
// The linear layer kind: y = W x + b on a {F} input.

#include <array>

#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::linear> {
  static constexpr std::array<FieldUse, 3> fields{FieldUse{Field::out_features, true},
                                                  k_weight_offset, k_bias_offset};
  static constexpr KindRecord record{
      LayerKind::linear,
      "linear",
      kTraitSum | kTraitReadsValues,
      1,
      1,
      fields,
      "y = W x + b on a {F} input: weight (out_features, in_features), bias (out_features)"};

  static std::vector<Index> shape(const LayerChecker& c);
  /// The map it is, in the passes' vocabulary (kinds/kind.hpp): every pass is a visitor v.
  template <class V>
  static decltype(auto) map(V&& v) {
    return v.dense();
  }
};

}  // namespace pathlift::detail
