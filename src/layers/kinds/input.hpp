#pragma once
// The input layer kind: layer 0: the data (any other layer of this kind is an error).

#include <array>

#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::input> {
  static constexpr std::array<FieldUse, 0> fields{};
  static constexpr KindRecord record{
      LayerKind::input, "input", std::nullopt, std::nullopt, kNoTrait, 1, 1, fields};

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
