#pragma once
// The interpolate layer kind: linear (1-D) / bilinear (2-D) interpolation with PyTorch's weights:
// fixed edges.

#include <array>

#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::interpolate> {
  static constexpr std::array<FieldUse, 3> fields{FieldUse{Field::output_size, true},
                                                  FieldUse{Field::align_corners, false},
                                                  FieldUse{Field::scales, false}};
  static constexpr KindRecord record{
      LayerKind::interpolate,
      "interpolate",
      kTraitSum | kTraitReadsValues,
      1,
      1,
      fields,
      "linear (1-D) / bilinear (2-D) interpolation to output_size with PyTorch's weights "
      "(align_corners; scales: PyTorch's scale_factor)"};

  static std::vector<Index> shape(const LayerChecker& c);
  /// The map it is, in the passes' vocabulary (kinds/kind.hpp): every pass is a visitor v.
  template <class V>
  static decltype(auto) map(V&& v) {
    return v.lerp();
  }
};

}  // namespace pathlift::detail
