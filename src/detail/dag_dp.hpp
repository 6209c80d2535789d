#pragma once
// The one forward / backward dynamic programme over the DAG, parameterised by a ring whose
// type names its overflow policy. Every path count and path sum of the library is a use of it:
// counting (Log10Counts), the path engine's suffix tables (CheckedCountsAndLengths), the
// linearization's saturated counts (SaturatingCounts) and per-sample counts, B^T B exact
// (SaturatedU64) and mod p (ModCounts). The scaled-double sums of the norms and the kernel
// (dp_scaled.hpp) keep their own loops on the same DagView: their values carry a per-node
// binary exponent that the inner loops align only when it is not zero.
//
// A ring R provides
//   using value_type;
//   value_type zero() const;                    the empty sum
//   value_type start(NodeId v) const;           the empty path at v: an input (forward) or an
//                                               output (backward)
//   value_type extend(EdgeId e, value_type x) const;  a sum carried across edge e
//   void add(value_type& acc, value_type x) const;    acc += x
//   void finish(NodeId v, value_type& acc) const;     after node v's sum: gates, overflow
//                                                     checks (may throw, naming v)
// and, for B^T B, value_type mul(value_type, value_type) const.

#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "pathlift/counting.hpp"
#include "pathlift/error.hpp"
#include "src/detail/checked.hpp"
#include "src/detail/dag.hpp"
#include "src/detail/modular_field.hpp"

namespace pathlift::detail {

/// Forward sums F(v) = start(v) at the inputs, else finish(v, sum_{e = (u -> v)} extend(e,
/// F(u))), for the nodes at topological positions [first, n); F at earlier positions is read
/// as it is in f (n entries, indexed by node).
/// Complexity: O(m + d) ring operations.
template <class Ring>
void dag_forward(const DagView& g, const Ring& ring, std::span<typename Ring::value_type> f,
                 Index first = 0) {
  for (Index pos = first; pos < g.n; ++pos) {
    const NodeId v = g.topo[pos];
    const auto vi = static_cast<std::size_t>(v);
    if (pos < g.num_inputs) {
      f[vi] = ring.start(v);
      continue;
    }
    auto acc = ring.zero();
    for (Index t = g.in_off[v]; t < g.in_off[v + 1]; ++t) {
      const EdgeId e = g.in_list[t];
      ring.add(acc, ring.extend(e, f[static_cast<std::size_t>(g.src[e])]));
    }
    ring.finish(v, acc);
    f[vi] = acc;
  }
}

template <class Ring>
std::vector<typename Ring::value_type> dag_forward(const DagView& g, const Ring& ring) {
  std::vector<typename Ring::value_type> f(static_cast<std::size_t>(g.n), ring.zero());
  dag_forward(g, ring, std::span<typename Ring::value_type>(f));
  return f;
}

/// The backward sums of dag_backward.
template <class Ring>
struct BackwardSums {
  /// T(v): the non-empty paths from v to an output (length >= 1).
  std::vector<typename Ring::value_type> suffix;
  /// G(v) = T(v) + [v output] start(v): every path from v to an output, the empty one included.
  std::vector<typename Ring::value_type> total;
};

/// Backward sums in reverse topological order: T(v) = finish(v, sum_{e = (v -> w)} extend(e,
/// G(w))) and G(v) = T(v) + start(v) at an output, T(v) elsewhere (outputs may have
/// successors: a path ends at every output it reaches).
/// Complexity: O(m + d) ring operations.
template <class Ring>
BackwardSums<Ring> dag_backward(const DagView& g, const Ring& ring) {
  BackwardSums<Ring> s;
  s.suffix.assign(static_cast<std::size_t>(g.n), ring.zero());
  s.total.assign(static_cast<std::size_t>(g.n), ring.zero());
  for (Index pos = g.n - 1; pos >= 0; --pos) {
    const NodeId v = g.topo[pos];
    const auto vi = static_cast<std::size_t>(v);
    auto acc = ring.zero();
    for (Index c = g.out_off[v]; c < g.out_off[v + 1]; ++c) {
      const EdgeId e = g.out_list[c];
      ring.add(acc, ring.extend(e, s.total[static_cast<std::size_t>(g.dst[e])]));
    }
    ring.finish(v, acc);
    s.suffix[vi] = acc;
    if (g.is_output[vi] != 0) {
      ring.add(acc, ring.start(v));
      ring.finish(v, acc);
    }
    s.total[vi] = acc;
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// Rings, one per overflow policy.

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
