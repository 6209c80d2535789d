#pragma once
// A ring of dag_dp.hpp (src/network/dag_dp.hpp): Path counts modulo a prime: B^T B mod p.

#include <cstdint>

#include "src/core/modular_field.hpp"
#include "src/network/dag.hpp"

namespace pathlift::detail {

/// Counts modulo a prime p < 2^63, in ModField's internal form (to_residue() converts back):
/// B^T B mod p, exact at any size.
struct ModCounts {
  using value_type = std::uint64_t;
  const ModField* field;
  [[nodiscard]] static std::uint64_t zero() { return 0; }
  [[nodiscard]] std::uint64_t start(NodeId /*v*/) const { return field->one(); }
  [[nodiscard]] static std::uint64_t extend(EdgeId /*e*/, std::uint64_t x) { return x; }
  void add(std::uint64_t& acc, std::uint64_t x) const { acc = field->add(acc, x); }
  static void finish(NodeId /*v*/, std::uint64_t& /*acc*/) {}
  [[nodiscard]] std::uint64_t mul(std::uint64_t a, std::uint64_t b) const {
    return field->mul(a, b);
  }
};

}  // namespace pathlift::detail
