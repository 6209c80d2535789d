#pragma once
// The max_pool layer kind: the max of each window: a max node per entry.

#include <array>
#include <vector>

#include "src/layers/detail/layer_rules.hpp"
#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::max_pool> {
  static constexpr std::array<FieldUse, 5> fields{
      FieldUse{Field::kernel, true}, FieldUse{Field::stride, false},
      FieldUse{Field::padding, false}, FieldUse{Field::dilation, false},
      FieldUse{Field::ceil_mode, false}};
  static constexpr KindSpec spec{.traits = kTraitWindow | kTraitMaxNodes | kTraitReadsValues,
                                 .fields = fields};

  /// Its builder rule: checks the layer (c.fail names it) and returns its output shape.
  static std::vector<Index> shape(const LayerChecker& c) { return c.window(false, false); }
  /// The map it is, in the passes' vocabulary (kinds/kind.hpp): every pass is a visitor v.
  template <class V>
  static decltype(auto) map(V&& v) {
    return v.pool(true);
  }
};

}  // namespace pathlift::detail
