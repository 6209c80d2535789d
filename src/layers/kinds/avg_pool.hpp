#pragma once
// The avg_pool layer kind: the mean of each window: fixed edges 1 / (the window's size).

#include <array>

#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::avg_pool> {
  static constexpr std::array<FieldUse, 6> fields{
      FieldUse{Field::kernel, true},     FieldUse{Field::stride, false},
      FieldUse{Field::padding, false},   FieldUse{Field::dilation, false},
      FieldUse{Field::ceil_mode, false}, FieldUse{Field::count_include_pad, false}};
  static constexpr KindRecord record{LayerKind::avg_pool,
                                     "avg_pool",
                                     std::nullopt,
                                     PlainKind::avg_pool,
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
