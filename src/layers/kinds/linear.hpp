#pragma once
// The linear layer kind: y = W x + b on a {F} input.

#include <array>

#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::linear> {
  static constexpr std::array<FieldUse, 3> fields{FieldUse{Field::out_features, true},
                                                  k_weight_offset, k_bias_offset};
  static constexpr KindRecord record{LayerKind::linear,
                                     "linear",
                                     ParamKind::linear,
                                     std::nullopt,
                                     kTraitSum | kTraitReadsValues,
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
    u.mark_dense(l);
  }
  template <class U, class Sink>
  static void emit(const U& u, std::size_t l, Index e, int block, Sink& sink) {
    u.emit_dense(l, e, block, sink);
  }
};

}  // namespace pathlift::detail
