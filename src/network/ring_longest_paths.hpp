#pragma once
// A ring of dag_dp.hpp (src/network/dag_dp.hpp): Longest path lengths by max-plus: depths for
// the parameter checks and the walk plan.

#include "src/network/dag.hpp"

namespace pathlift::detail {

/// Longest path length in edges, by max-plus (never overflows: lengths are below m).
struct LongestPaths {
  using value_type = int;
  [[nodiscard]] static int zero() { return 0; }
  [[nodiscard]] static int start(NodeId /*v*/) { return 0; }
  [[nodiscard]] static int extend(EdgeId /*e*/, int x) { return x + 1; }
  static void add(int& acc, int x) { acc = acc > x ? acc : x; }
  static void finish(NodeId /*v*/, int& /*acc*/) {}
};

}  // namespace pathlift::detail
