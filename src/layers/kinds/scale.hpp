#pragma once
// The scale layer kind: y = factor x, entry-wise: fixed edges of weight factor.

#include <array>

#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::scale> {
  static constexpr std::array<FieldUse, 1> fields{FieldUse{Field::factor, true}};
  static constexpr KindRecord record{LayerKind::scale,
                                     "scale",
                                     std::nullopt,
                                     PlainKind::scale,
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
    u.emit_scaled(l, e, block, sink);
  }
};

}  // namespace pathlift::detail
