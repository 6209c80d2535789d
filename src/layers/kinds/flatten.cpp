// The flatten layer kind's rules (kinds/flatten.hpp).

#include "src/layers/kinds/flatten.hpp"

#include "src/layers/detail/layer_rules.hpp"

namespace pathlift::detail {

std::vector<Index> Kind<LayerKind::flatten>::shape(const LayerChecker& c) {
  return {checked_entries(c.in(0), "the input of shape")};
}

}  // namespace pathlift::detail
