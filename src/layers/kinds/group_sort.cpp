// The group_sort layer kind's rules (kinds/group_sort.hpp).

#include "src/layers/kinds/group_sort.hpp"

#include <fmt/format.h>

#include "src/layers/detail/layer_rules.hpp"

namespace pathlift::detail {

std::vector<Index> Kind<LayerKind::group_sort>::shape(const LayerChecker& c) {
  const Layer& ly = c.layer();
  const std::vector<Index>& x = c.in(0);
  if (ly.group_size < 1 || ly.group_size > x[0] || x[0] % ly.group_size != 0) {
    c.fail(fmt::format("group_size {} must divide the {} entries of axis 0 of the input {}",
                       ly.group_size, x[0], shape_text(x)));
  }
  return x;
}

}  // namespace pathlift::detail
