// The adaptive_avg_pool layer kind's rules (kinds/adaptive_avg_pool.hpp).

#include "src/layers/kinds/adaptive_avg_pool.hpp"

#include "src/layers/detail/layer_rules.hpp"

namespace pathlift::detail {

std::vector<Index> Kind<LayerKind::adaptive_avg_pool>::shape(const LayerChecker& c) {
  return c.window(false, true);
}

}  // namespace pathlift::detail
