// The conv layer kind's rules (kinds/conv.hpp).

#include "src/layers/kinds/conv.hpp"

#include "src/layers/detail/layer_rules.hpp"

namespace pathlift::detail {

std::vector<Index> Kind<LayerKind::conv>::shape(const LayerChecker& c) {
  return c.window(true, false);
}

}  // namespace pathlift::detail
