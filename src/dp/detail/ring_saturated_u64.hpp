#pragma once
// A ring of dag_dp.hpp (src/network/dag_dp.hpp): Path counts saturated at 2^64 - 1: B^T B
// exact.

#include <cstdint>
#include <limits>

#include "src/core/checked.hpp"
#include "src/network/dag.hpp"

namespace pathlift::detail {

/// Counts saturated at 2^64 - 1, read as "does not fit" (never wrapped): B^T B exact, whose
/// caller looks for the saturated entries once at the end.
struct SaturatedU64 {
  using value_type = std::uint64_t;
  static constexpr std::uint64_t over = std::numeric_limits<std::uint64_t>::max();
  [[nodiscard]] static std::uint64_t zero() { return 0; }
  [[nodiscard]] static std::uint64_t start(NodeId /*v*/) { return 1; }
  [[nodiscard]] static std::uint64_t extend(EdgeId /*e*/, std::uint64_t x) { return x; }
  static void add(std::uint64_t& acc, std::uint64_t x) { acc = saturating_add(acc, x); }
  static void finish(NodeId /*v*/, std::uint64_t& /*acc*/) {}
  [[nodiscard]] static std::uint64_t mul(std::uint64_t a, std::uint64_t b) {
    return (a == 0 || b == 0) ? 0 : saturating_mul(a, b);
  }
};

}  // namespace pathlift::detail
