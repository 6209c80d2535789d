// The linear layer kind's rules (kinds/linear.hpp).

#include "src/layers/kinds/linear.hpp"

#include <fmt/format.h>

#include "src/layers/detail/layer_rules.hpp"

namespace pathlift::detail {

std::vector<Index> Kind<LayerKind::linear>::shape(const LayerChecker& c) {
  const Layer& ly = c.layer();
  const std::vector<Index>& x = c.in(0);
  if (x.size() != 1) {
    c.fail(fmt::format("a linear layer needs a vector input {{F}}, got shape {} (flatten first)",
                       shape_text(x)));
  }
  if (ly.out_features < 1 || ly.out_features > k_max_dim) {
    c.fail(fmt::format("out_features must be in 1..{}, got {}", k_max_dim, ly.out_features));
  }
  if (x[0] > k_max_dim / ly.out_features) {
    c.fail(fmt::format("{} x {} weights is too many", ly.out_features, x[0]));
  }
  return {ly.out_features};
}

}  // namespace pathlift::detail
