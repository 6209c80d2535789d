// The input layer kind's rules (kinds/input.hpp).

#include "src/layers/kinds/input.hpp"

#include "src/layers/detail/layer_rules.hpp"

namespace pathlift::detail {

std::vector<Index> Kind<LayerKind::input>::shape(const LayerChecker& c) {
  c.fail("only layer 0 may be the input");
}

double Kind<LayerKind::input>::max_terms(const Layer& /*ly*/, const std::vector<Index>& /*in*/) {
  return 0;  // never a term: layer 0's entries are the input nodes
}

}  // namespace pathlift::detail
