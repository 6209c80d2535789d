// The input layer kind's rules (kinds/input.hpp).

#include "src/layers/kinds/input.hpp"

#include "src/layers/detail/layer_rules.hpp"

namespace pathlift::detail {

std::vector<Index> Kind<LayerKind::input>::shape(const LayerChecker& c) {
  c.fail("only layer 0 may be the input");
}

}  // namespace pathlift::detail
