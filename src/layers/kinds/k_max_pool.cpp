// The k_max_pool layer kind's rules (kinds/k_max_pool.hpp).

#include "src/layers/kinds/k_max_pool.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "src/layers/detail/layer_rules.hpp"
#include "src/layers/layers_geometry.hpp"

namespace pathlift::detail {

std::vector<Index> Kind<LayerKind::k_max_pool>::shape(const LayerChecker& c) {
  const Layer& ly = c.layer();
  if (ly.k < 1 || ly.k > k_max_dim) {
    c.fail(fmt::format("k = {} must be in 1..{}", ly.k, k_max_dim));
  }
  std::vector<Index> out = c.window(false, false);
  const Window win = window_of(ly, c.in(0));
  if (const Index fewest = tap_range(win).fewest; ly.k > fewest) {
    c.fail(
        fmt::format("k = {} but a window (kernel {}) holds only {} entries of the input {}: "
                    "its {}-th largest does not exist",
                    ly.k, fmt::join(ly.kernel, ","), fewest, shape_text(c.in(0)), ly.k));
  }
  return out;
}

}  // namespace pathlift::detail
