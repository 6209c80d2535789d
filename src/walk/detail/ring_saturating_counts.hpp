#pragma once
// A ring of dag_dp.hpp (src/network/dag_dp.hpp): Path counts saturated at a cap: the
// linearization's column counts.

#include "src/core/checked.hpp"
#include "src/network/dag.hpp"

namespace pathlift::detail {

/// Counts saturated at `cap` ("more than cap - 1"; cap small enough that two of them add
/// without overflow): the linearization's P, whose columns are 32-bit.
struct SaturatingCounts {
  using value_type = Index;
  Index cap;
  [[nodiscard]] static Index zero() { return 0; }
  [[nodiscard]] static Index start(NodeId /*v*/) { return 1; }
  [[nodiscard]] static Index extend(EdgeId /*e*/, Index x) { return x; }
  void add(Index& acc, Index x) const { acc = saturating_add(acc, x, cap); }
  static void finish(NodeId /*v*/, Index& /*acc*/) {}
};

}  // namespace pathlift::detail
