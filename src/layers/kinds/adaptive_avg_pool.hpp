#pragma once
// The adaptive_avg_pool layer kind: PyTorch's adaptive windows [floor(i In/Out), ceil((i+1)
// In/Out)).

#include <array>
#include <vector>

#include "src/layers/detail/layer_rules.hpp"
#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::adaptive_avg_pool> {
  static constexpr std::array<FieldUse, 1> fields{FieldUse{Field::output_size, true}};
  static constexpr KindSpec spec{.traits = kTraitSum | kTraitWindow | kTraitReadsValues,
                                 .fields = fields};

  /// Its builder rule: checks the layer (c.fail names it) and returns its output shape.
  static std::vector<Index> shape(const LayerChecker& c) { return c.window(false, true); }
  /// The map it is, in the passes' vocabulary (kinds/kind.hpp): every pass is a visitor v.
  template <class V>
  static decltype(auto) map(V&& v) {
    return v.pool(false);
  }
};

}  // namespace pathlift::detail
