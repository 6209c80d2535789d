// The interpolate layer kind's rules (kinds/interpolate.hpp).

#include "src/layers/kinds/interpolate.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include "src/core/checked.hpp"
#include "src/layers/detail/layer_rules.hpp"

namespace pathlift::detail {

std::vector<Index> Kind<LayerKind::interpolate>::shape(const LayerChecker& c) {
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

}  // namespace pathlift::detail
