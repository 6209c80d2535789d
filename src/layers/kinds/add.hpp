#pragma once
// The add layer kind: inputs[0] + inputs[1] (+ ...), same shapes.

#include <array>

#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::add> {
  static constexpr std::array<FieldUse, 0> fields{};
  static constexpr KindRecord record{LayerKind::add, "add", std::nullopt, PlainKind::add,
                                     kTraitSum,      2,     k_any_inputs, fields};

  static std::vector<Index> shape(const LayerChecker& c);
  // The unroller (Unroller, layers_unroll.hpp): at most how many terms an entry's sum has
  // besides its bias (operand 0 of shape `in`), the operand entries its live entries read,
  // the terms of entry e.
  static double max_terms(const Layer& ly, const std::vector<Index>& in);
  template <class U>
  static void mark(U& u, std::size_t l) {
    for (std::size_t k = 0; k < u.operands(l); ++k) {
      u.mark_entrywise(l, k, false);
    }
  }
  template <class U, class Sink>
  static void emit(const U& u, std::size_t l, Index e, int block, Sink& sink) {
    u.emit_operands(l, e, block, sink, false);
  }
};

}  // namespace pathlift::detail
