// The gather layer kind's rules (kinds/gather.hpp).

#include "src/layers/kinds/gather.hpp"

#include <fmt/format.h>

#include <utility>

#include "src/core/checked.hpp"
#include "src/layers/detail/layer_rules.hpp"

namespace pathlift::detail {

std::vector<Index> Kind<LayerKind::gather>::shape(const LayerChecker& c) {
  const Layer& ly = c.layer();
  const std::vector<Index>& x = c.in(0);
  if (ly.axis < 0 || std::cmp_greater_equal(ly.axis, x.size())) {
    c.fail(fmt::format("axis {} is out of range for input shape {}", ly.axis, shape_text(x)));
  }
  const auto axis = static_cast<std::size_t>(ly.axis);
  if (ly.indices.empty()) {
    c.fail("has no indices");
  }
  for (std::size_t i = 0; i < ly.indices.size(); ++i) {
    const Index j = ly.indices[i];
    if (j < 0 || j >= x[axis]) {
      c.fail(
          fmt::format("index {} (entry {} of indices) is out of range 0..{} of dimension {} "
                      "of the input shape {}",
                      j, i, x[axis] - 1, axis, shape_text(x)));
    }
  }
  std::vector<Index> out = x;
  out[axis] = static_cast<Index>(ly.indices.size());
  checked_entries(out, "the output of shape");
  return out;
}

}  // namespace pathlift::detail
