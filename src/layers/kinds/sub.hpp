#pragma once
// The sub layer kind: inputs[0] - inputs[1], same shapes.

#include <array>

#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::sub> {
  static constexpr std::array<FieldUse, 0> fields{};
  static constexpr KindRecord record{
      LayerKind::sub, "sub", std::nullopt, PlainKind::sub, kTraitSum, 2, 2, fields};

  static std::vector<Index> shape(const LayerChecker& c);
  // The unroller (Unroller, layers_unroll.hpp): at most how many terms an entry's sum has
  // besides its bias (operand 0 of shape `in`), the operand entries its live entries read,
  // the terms of entry e.
  static double max_terms(const Layer& ly, const std::vector<Index>& in);
  template <class U>
  static void mark(U& u, std::size_t l) {
    u.mark_entrywise(l, 0, false);
    u.mark_entrywise(l, 1, true);
  }
  template <class U, class Sink>
  static void emit(const U& u, std::size_t l, Index e, int block, Sink& sink) {
    u.emit_operands(l, e, block, sink, true);
  }
};

}  // namespace pathlift::detail
