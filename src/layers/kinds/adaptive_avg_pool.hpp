#pragma once
// The adaptive_avg_pool layer kind: PyTorch's adaptive windows [floor(i In/Out), ceil((i+1)
// In/Out)).

#include <array>

#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::adaptive_avg_pool> {
  static constexpr std::array<FieldUse, 1> fields{FieldUse{Field::output_size, true}};
  static constexpr KindRecord record{LayerKind::adaptive_avg_pool,
                                     "adaptive_avg_pool",
                                     std::nullopt,
                                     PlainKind::adaptive_avg_pool,
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
    u.mark_window(l, false);
  }
  template <class U, class Sink>
  static void emit(const U& u, std::size_t l, Index e, int block, Sink& sink) {
    u.emit_window(l, e, block, sink, 0.0);
  }
};

}  // namespace pathlift::detail
