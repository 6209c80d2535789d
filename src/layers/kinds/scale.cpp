// The scale layer kind's rules (kinds/scale.hpp).

#include "src/layers/kinds/scale.hpp"

#include <fmt/format.h>

#include <cmath>

#include "src/layers/detail/layer_rules.hpp"

namespace pathlift::detail {

std::vector<Index> Kind<LayerKind::scale>::shape(const LayerChecker& c) {
  if (!std::isfinite(c.layer().factor)) {
    c.fail(fmt::format("factor {} is not finite", c.layer().factor));
  }
  return c.in(0);
}

}  // namespace pathlift::detail
