// The avg_pool layer kind's rules (kinds/avg_pool.hpp).

#include "src/layers/kinds/avg_pool.hpp"

#include "src/layers/detail/layer_rules.hpp"

namespace pathlift::detail {

std::vector<Index> Kind<LayerKind::avg_pool>::shape(const LayerChecker& c) {
  return c.window(false, false);
}

}  // namespace pathlift::detail
