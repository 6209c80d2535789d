#pragma once
// The conv_transpose layer kind: ConvTranspose1d / 2d: the transposed map of a convolution (its
// adjoint).

#include <array>

#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::conv_transpose> {
  static constexpr std::array<FieldUse, 9> fields{FieldUse{Field::out_channels, true},
                                                  FieldUse{Field::kernel, true},
                                                  FieldUse{Field::stride, false},
                                                  FieldUse{Field::padding, false},
                                                  FieldUse{Field::dilation, false},
                                                  FieldUse{Field::output_padding, false},
                                                  FieldUse{Field::groups, false},
                                                  k_weight_offset,
                                                  k_bias_offset};
  static constexpr KindRecord record{LayerKind::conv_transpose,
                                     "conv_transpose",
                                     kTraitSum | kTraitWindow | kTraitReadsValues,
                                     1,
                                     1,
                                     fields,
                                     "ConvTranspose1d / 2d: weight (in_channels, out_channels / "
                                     "groups, *kernel), bias (out_channels)"};

  static std::vector<Index> shape(const LayerChecker& c);
  /// The map it is, in the passes' vocabulary (kinds/kind.hpp): every pass is a visitor v.
  template <class V>
  static decltype(auto) map(V&& v) {
    return v.adjoint_window();
  }
};

}  // namespace pathlift::detail
