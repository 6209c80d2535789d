// The activation layer kind's rules (kinds/activation.hpp).

#include "src/layers/kinds/activation.hpp"

#include <fmt/format.h>

#include <cmath>

#include "src/layers/detail/layer_rules.hpp"

namespace pathlift::detail {

std::vector<Index> Kind<LayerKind::activation>::shape(const LayerChecker& c) {
  const Activation& a = c.layer().activation;
  if (a.kind == ActivationKind::max) {
    c.fail("activation 'max' is not an entry-wise activation (use a max_pool layer)");
  }
  if (!std::isfinite(a.negative_slope)) {
    c.fail(fmt::format("negative slope {} is not finite", a.negative_slope));
  }
  return c.in(0);
}

}  // namespace pathlift::detail
