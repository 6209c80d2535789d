// The batch_norm layer kind's rules (kinds/batch_norm.hpp).

#include "src/layers/kinds/batch_norm.hpp"

#include "src/layers/detail/layer_rules.hpp"

namespace pathlift::detail {

std::vector<Index> Kind<LayerKind::batch_norm>::shape(const LayerChecker& c) {
  return c.in(0);
}

}  // namespace pathlift::detail
