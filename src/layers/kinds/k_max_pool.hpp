#pragma once
// The k_max_pool layer kind: the k-th largest of each window: a max:k node per entry.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <vector>

#include "src/layers/detail/layer_rules.hpp"
#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::k_max_pool> {
  static constexpr std::array<FieldUse, 6> fields{
      FieldUse{Field::kernel, true},     FieldUse{Field::stride, false},
      FieldUse{Field::padding, false},   FieldUse{Field::dilation, false},
      FieldUse{Field::ceil_mode, false}, FieldUse{Field::k, false}};
  static constexpr KindSpec spec{.traits = kTraitWindow | kTraitMaxNodes | kTraitReadsValues,
                                 .fields = fields};

  /// Its builder rule: checks the layer (c.fail names it) and returns its output shape.
  static std::vector<Index> shape(const LayerChecker& c) {
    const Layer& ly = c.layer();
    if (ly.k < 1 || ly.k > k_max_dim) {
      c.fail(fmt::format("k = {} must be in 1..{}", ly.k, k_max_dim));
    }
    std::vector<Index> out = c.window(false, false);
    const Window win = c.window_geometry();
    if (const Index fewest = tap_range(win).fewest; ly.k > fewest) {
      c.fail(
          fmt::format("k = {} but a window (kernel {}) holds only {} entries of the input {}: "
                      "its {}-th largest does not exist",
                      ly.k, fmt::join(ly.kernel, ","), fewest, shape_text(c.in(0)), ly.k));
    }
    return out;
  }
  /// The map it is, in the passes' vocabulary (kinds/kind.hpp): every pass is a visitor v.
  template <class V>
  static decltype(auto) map(V&& v) {
    return v.pool(true);
  }
};

}  // namespace pathlift::detail
