#pragma once
// The interpolate layer kind: linear (1-D) / bilinear (2-D) interpolation with PyTorch's weights:
// fixed edges.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <cmath>
#include <vector>

#include "src/core/checked.hpp"
#include "src/layers/detail/layer_rules.hpp"
#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::interpolate> {
  static constexpr std::array<FieldUse, 3> fields{FieldUse{Field::output_size, true},
                                                  FieldUse{Field::align_corners, false},
                                                  FieldUse{Field::scales, false}};
  static constexpr KindSpec spec{.traits = kTraitSum | kTraitReadsValues, .fields = fields};

  /// Its builder rule: checks the layer (c.fail names it) and returns its output shape.
  static std::vector<Index> shape(const LayerChecker& c) {
    const Layer& ly = c.layer();
    const std::vector<Index>& x = c.in(0);
    const std::size_t dims = c.spatial_dims();
    c.check_list("output_size", ly.output_size, dims, 1, true);
    if (!ly.scales.empty() && ly.scales.size() != dims) {
      c.fail(fmt::format("scales has {} entries but the input {} has {} spatial dimension{}",
                         ly.scales.size(), shape_text(x), dims, dims == 1 ? "" : "s"));
    }
    for (const double f : ly.scales) {
      if (!(std::isfinite(f) && f > 0)) {
        c.fail(fmt::format("scales {} must be finite and > 0", fmt::join(ly.scales, ",")));
      }
    }
    std::vector<Index> out{x[0]};
    out.insert(out.end(), ly.output_size.begin(), ly.output_size.end());
    checked_entries(out, "the output of shape");
    return out;
  }
  /// The map it is, in the passes' vocabulary (kinds/kind.hpp): every pass is a visitor v.
  template <class V>
  static decltype(auto) map(V&& v) {
    return v.lerp();
  }
};

}  // namespace pathlift::detail
