// The conv layer kind's rules (kinds/conv.hpp).

#include "src/layers/kinds/conv.hpp"

#include "src/layers/detail/layer_rules.hpp"
#include "src/layers/layers_geometry.hpp"

namespace pathlift::detail {

std::vector<Index> Kind<LayerKind::conv>::shape(const LayerChecker& c) {
  return c.window(true, false);
}

double Kind<LayerKind::conv>::max_terms(const Layer& ly, const std::vector<Index>& in) {
  const Window w = window_of(ly, in);
  return window_length(w.h) * window_length(w.w) * static_cast<double>(w.channels_in / w.groups);
}

}  // namespace pathlift::detail
