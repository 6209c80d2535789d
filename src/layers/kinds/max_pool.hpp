#pragma once
// The max_pool layer kind: the max of each window: a max node per entry.

#include <array>

#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::max_pool> {
  static constexpr std::array<FieldUse, 5> fields{
      FieldUse{Field::kernel, true}, FieldUse{Field::stride, false},
      FieldUse{Field::padding, false}, FieldUse{Field::dilation, false},
      FieldUse{Field::ceil_mode, false}};
  static constexpr KindRecord record{LayerKind::max_pool,
                                     "max_pool",
                                     std::nullopt,
                                     PlainKind::max_pool,
                                     kTraitWindow | kTraitMaxNodes | kTraitReadsValues,
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
    u.emit_window(l, e, block, sink, 1.0);
  }
};

}  // namespace pathlift::detail
