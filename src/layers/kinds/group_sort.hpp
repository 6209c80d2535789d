#pragma once
// The group_sort layer kind: groups of group_size entries along axis 0 sorted: an order-statistic
// node per entry.

#include <array>

#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::group_sort> {
  static constexpr std::array<FieldUse, 2> fields{FieldUse{Field::group_size, true},
                                                  FieldUse{Field::descending, false}};
  static constexpr KindRecord record{LayerKind::group_sort,
                                     "group_sort",
                                     std::nullopt,
                                     PlainKind::group_sort,
                                     kTraitMaxNodes | kTraitReadsValues,
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
    u.mark_groups(l);
  }
  template <class U, class Sink>
  static void emit(const U& u, std::size_t l, Index e, int block, Sink& sink) {
    u.emit_group(l, e, block, sink);
  }
};

}  // namespace pathlift::detail
