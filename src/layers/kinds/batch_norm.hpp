#pragma once
// The batch_norm layer kind: eval-mode per-channel affine y = a x + b.

#include <array>

#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::batch_norm> {
  static constexpr std::array<FieldUse, 2> fields{k_weight_offset, k_bias_offset};
  static constexpr KindRecord record{LayerKind::batch_norm,
                                     "batch_norm",
                                     ParamKind::batch_norm,
                                     std::nullopt,
                                     kTraitSum | kTraitReadsValues,
                                     1,
                                     1,
                                     fields};

  static std::vector<Index> shape(const LayerChecker& c);
};

}  // namespace pathlift::detail
