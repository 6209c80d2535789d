// The add layer kind's rules (kinds/add.hpp).

#include "src/layers/kinds/add.hpp"

#include <fmt/format.h>

#include "src/layers/detail/layer_rules.hpp"

namespace pathlift::detail {

std::vector<Index> Kind<LayerKind::add>::shape(const LayerChecker& c) {
  for (std::size_t k = 1; k < c.layer().inputs.size(); ++k) {
    if (c.in(k) != c.in(0)) {
      c.fail(fmt::format("input {} has shape {} but input 0 has shape {}", k, shape_text(c.in(k)),
                         shape_text(c.in(0))));
    }
  }
  return c.in(0);
}

}  // namespace pathlift::detail
