#pragma once
// The batch_norm layer kind: eval-mode per-channel affine y = a x + b.

#include <array>

#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::batch_norm> {
  static constexpr std::array<FieldUse, 2> fields{k_weight_offset, k_bias_offset};
  static constexpr KindRecord record{LayerKind::batch_norm,
                                     "batch_norm",
                                     ParamKind::batch_norm,
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
    u.mark_entrywise(l, 0, true);
  }
  template <class U, class Sink>
  static void emit(const U& u, std::size_t l, Index e, int block, Sink& sink) {
    u.emit_channel_affine(l, e, block, sink);
  }
};

}  // namespace pathlift::detail
