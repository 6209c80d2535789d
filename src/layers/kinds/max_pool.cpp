// The max_pool layer kind's rules (kinds/max_pool.hpp).

#include "src/layers/kinds/max_pool.hpp"

#include "src/layers/detail/layer_rules.hpp"

namespace pathlift::detail {

std::vector<Index> Kind<LayerKind::max_pool>::shape(const LayerChecker& c) {
  return c.window(false, false);
}

}  // namespace pathlift::detail
