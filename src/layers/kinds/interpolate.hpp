#pragma once
// The interpolate layer kind: linear (1-D) / bilinear (2-D) interpolation with PyTorch's weights:
// fixed edges.

#include <array>

#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::interpolate> {
  static constexpr std::array<FieldUse, 3> fields{FieldUse{Field::output_size, true},
                                                  FieldUse{Field::align_corners, false},
                                                  FieldUse{Field::scales, false}};
  static constexpr KindRecord record{LayerKind::interpolate,
                                     "interpolate",
                                     std::nullopt,
                                     PlainKind::interpolate,
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
    u.mark_lerp(l);
  }
  template <class U, class Sink>
  static void emit(const U& u, std::size_t l, Index e, int block, Sink& sink) {
    u.emit_lerp(l, e, block, sink);
  }
};

}  // namespace pathlift::detail
