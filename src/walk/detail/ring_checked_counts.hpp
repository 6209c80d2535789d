#pragma once
// A ring of dag_dp.hpp (src/network/dag_dp.hpp): Path counts and lengths exact in 64 bits or
// refused: the path engine's suffix tables.

#include <fmt/format.h>
#include <cstdint>

#include "pathlift/error.hpp"
#include "pathlift/network.hpp"
#include "src/core/checked.hpp"
#include "src/network/dag.hpp"

namespace pathlift::detail {

/// Counts of paths and of their edges (count, length = sum of the paths' lengths), exact in
/// 64 bits or refused: finish() throws TooLarge naming the node where a sum overflowed. The path
/// engine's policy: what it enumerates must be indexable.
struct CheckedCountsAndLengths {
  struct value_type {
    std::uint64_t count = 0;
    std::uint64_t length = 0;
    bool overflow = false;
  };
  const Network* net;
  [[nodiscard]] static value_type zero() { return {}; }
  [[nodiscard]] static value_type start(NodeId /*v*/) { return {1, 0, false}; }
  /// Each path one edge longer.
  [[nodiscard]] static value_type extend(EdgeId /*e*/, value_type x) {
    x.overflow |= add_overflows(x.length, x.count, x.length);
    return x;
  }
  // Overflow is recorded, not branched on: the loop stays branch-free; finish() checks once.
  static void add(value_type& acc, const value_type& x) {
    acc.overflow |= x.overflow;
    acc.overflow |= add_overflows(acc.count, x.count, acc.count);
    acc.overflow |= add_overflows(acc.length, x.length, acc.length);
  }
  void finish(NodeId v, const value_type& acc) const {
    if (acc.overflow) {
      throw TooLarge(
          fmt::format(
              "the number of paths from node {} ({}) to the outputs, or their total length, does "
              "not fit in 64 bits: the paths cannot be enumerated (their number is counted without "
              "enumeration)",
              v, printable(net->node_name(v))),
          TooLarge::Reason::too_many_paths);
    }
  }
};

}  // namespace pathlift::detail
