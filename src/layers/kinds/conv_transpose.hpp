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
                                     ParamKind::conv_transpose,
                                     std::nullopt,
                                     kTraitSum | kTraitWindow | kTraitReadsValues,
                                     1,
                                     1,
                                     fields};

  static std::vector<Index> shape(const LayerChecker& c);
  // The unroller (Unroller, layers_unroll.hpp): at most how many terms an entry's sum has
  // besides its bias (operand 0 of shape `in`), the operand entries its live entries read,
  // the terms of entry e.
  static double max_terms(const Layer& ly, const std::vector<Index>& in);
  template <class U>
  static void mark(U& u, std::size_t l) {
    u.mark_adjoint_window(l);
  }
  template <class U, class Sink>
  static void emit(const U& u, std::size_t l, Index e, int block, Sink& sink) {
    u.emit_adjoint_window(l, e, block, sink);
  }
};

}  // namespace pathlift::detail
