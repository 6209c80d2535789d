#pragma once
// A ring of dag_dp.hpp (src/network/dag_dp.hpp): Path counts as Count: exact in 64 bits, log10
// beyond (count_paths).

#include "pathlift/count.hpp"
#include "src/network/dag.hpp"

namespace pathlift::detail {

/// Path counts exact while they fit in 64 bits, then approximate in log10 (Count's policy):
/// count_paths(), never refused.
struct Log10Counts {
  using value_type = Count;
  [[nodiscard]] static Count zero() { return Count(0); }
  [[nodiscard]] static Count start(NodeId /*v*/) { return Count(1); }
  [[nodiscard]] static Count extend(EdgeId /*e*/, const Count& x) { return x; }
  static void add(Count& acc, const Count& x) { acc += x; }
  static void finish(NodeId /*v*/, Count& /*acc*/) {}
  [[nodiscard]] static Count mul(const Count& a, const Count& b) { return a * b; }
};

}  // namespace pathlift::detail
