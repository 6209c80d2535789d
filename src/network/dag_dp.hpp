#pragma once
// The one forward / backward dynamic programme over the DAG, parameterised by a ring whose
// type names its overflow policy. Every path count and path sum of the library is a use of it:
// counting (Log10Counts), the path engine's suffix tables (CheckedCountsAndLengths), the
// linearization's saturated counts (SaturatingCounts) and per-sample counts, B^T B exact
// (SaturatedU64) and mod p (ModCounts). The scaled-double sums of the norms and the kernel
// (dp_scaled.hpp) keep their own loops on the same DagView: their values carry a per-node
// binary exponent that the inner loops align only when it is not zero. Each ring has a header
// of its own beside the part that uses it (ring_*.hpp).
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

#include <span>
#include <vector>

#include "pathlift/error.hpp"
#include "src/network/dag.hpp"

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

}  // namespace pathlift::detail
