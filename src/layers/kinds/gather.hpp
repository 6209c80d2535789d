#pragma once
// The gather layer kind: entries picked along axis (output index i reads input index indices[i]):
// no node, no edge.

#include <array>

#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::gather> {
  static constexpr std::array<FieldUse, 2> fields{FieldUse{Field::axis, false},
                                                  FieldUse{Field::indices, true}};
  static constexpr KindRecord record{
      LayerKind::gather, "gather", std::nullopt, PlainKind::gather, kTraitView, 1, 1, fields};

  static std::vector<Index> shape(const LayerChecker& c);
  // The unroller (Unroller, layers_unroll.hpp): at most how many terms an entry's sum has
  // besides its bias (operand 0 of shape `in`), the operand entries its live entries read,
  // the terms of entry e.
  static double max_terms(const Layer& ly, const std::vector<Index>& in);
  template <class U>
  static void mark(U& /*u*/, std::size_t /*l*/) {
    // no operand entry is read through this layer
  }
  template <class U, class Sink>
  static void emit(const U& /*u*/, std::size_t /*l*/, Index /*e*/, int /*block*/, Sink& /*sink*/) {
    // its entries have no terms of their own
  }
};

}  // namespace pathlift::detail
