// The sub layer kind's rules (kinds/sub.hpp).

#include "src/layers/kinds/sub.hpp"

#include "src/layers/detail/layer_rules.hpp"
#include "src/layers/kinds/add.hpp"

namespace pathlift::detail {

std::vector<Index> Kind<LayerKind::sub>::shape(const LayerChecker& c) {
  return Kind<LayerKind::add>::shape(c);  // the same rule: equal shapes
}

}  // namespace pathlift::detail
