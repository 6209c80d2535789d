#pragma once
// The activation layer kind: relu, leaky_relu or identity, entry-wise.

#include <array>

#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::activation> {
  static constexpr std::array<FieldUse, 1> fields{FieldUse{Field::activation, true}};
  static constexpr KindRecord record{LayerKind::activation,
                                     "activation",
                                     std::nullopt,
                                     PlainKind::activation,
                                     kNoTrait,
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
    u.mark_entrywise(l, 0, false);
  }
  template <class U, class Sink>
  static void emit(const U& /*u*/, std::size_t /*l*/, Index /*e*/, int /*block*/, Sink& /*sink*/) {
    // its entries have no terms of their own
  }
};

}  // namespace pathlift::detail
