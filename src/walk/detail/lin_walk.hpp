#pragma once
// The per-sample walk that builds the rows of L (linearize.cpp): the canonical walk (walk.hpp)
// over the paths, carrying x_i[start] times the slopes of the nodes entered, that skips with
// the DP path counts every subtree behind a zero factor.

#include <cstdint>
#include <vector>

#include "pathlift/network.hpp"
#include "pathlift/types.hpp"
#include "src/network/dag.hpp"
#include "src/walk/detail/walk.hpp"

namespace pathlift::detail {

/// The largest P whose path indices fit the 32-bit column indices of CsrMatrix.
inline constexpr Index k_lin_max_paths = 2147483647;

/// Theta- and sample-independent tables of the walk and of the counting DP.
struct LinWalkTables {
  DagView dag;                     ///< the network's arrays, with the out-CSR targets
  std::vector<Index> suffix;       ///< S[v]: paths (length >= 1) from v to an output, saturated
  std::vector<NodeId> inputs;      ///< all inputs, node order (where paths start)
  std::vector<Index> data_column;  ///< column of X for each entry of `inputs`, -1 for a bias
  Index num_paths = 0;             ///< P (saturated above k_lin_max_paths)
  Index num_nodes = 0;

  explicit LinWalkTables(const Network& net) : dag(net, /*with_out_targets=*/true) {}
};

LinWalkTables lin_make_walk_tables(const Network& net);

/// Entries of sample i's rows: count[j] = number of paths ending at output j with no zero
/// factor (x[start] != 0, no slope 0 on the way, no inactive edge into a max node), by the
/// forward DP N(input) = [x != 0], N(v) = [slope(v) != 0] sum_{e = u->v active} N(u)
/// (N(v) <= P: distinct partial paths into v extend to distinct paths). `gate` is null or
/// holds, per node, the one active incoming edge of a max node (-1 for other nodes).
/// `partial` is scratch. Complexity: O(m + d).
void lin_count_sample(const LinWalkTables& t, const double* x, const double* slope,
                      const EdgeId* gate, std::vector<Index>& partial, Index* count);

/// Whether edge e into node w is inactive on this sample (w a max node, e not its arg-max).
[[gnu::always_inline]] inline bool lin_gated(const EdgeId* gate, EdgeId e, NodeId w) {
  return gate != nullptr && gate[w] >= 0 && gate[w] != e;
}

/// Scratch of lin_walk_sample: the walk's stack and the prefix products along it.
struct LinWalkScratch {
  std::vector<WalkFrame> frames;
  std::vector<double> values;
};

/// The visitor: value of the prefix on top of `values`, path index p.
template <class Emit>
struct LinVisitor {
  const LinWalkTables& t;
  const double* slope;
  const EdgeId* gate;
  std::vector<double>& values;
  Emit& emit;
  Index p;

  [[gnu::always_inline]] WalkStep arrive(EdgeId e, NodeId w) {
    const auto wi = static_cast<std::size_t>(w);
    const Index slot = t.dag.output_slot[wi];
    const Index suffix = t.suffix[wi];
    const double s = slope[w];
    // Skip by the factor, not the product, so that the emitted paths are exactly those
    // lin_count_sample counts (a product can underflow to 0, or be inf times 0).
    if (s == 0 || lin_gated(gate, e, w)) {  // every path behind this prefix has c_p^i = 0
      p += (slot >= 0 ? 1 : 0) + suffix;
      return WalkStep::skip;
    }
    const double value = values.back() * s;
    if (slot >= 0) {
      emit(slot, p, value);
      ++p;
    }
    if (suffix > 0) {
      values.push_back(value);
      return WalkStep::descend;
    }
    return WalkStep::skip;
  }
  [[gnu::always_inline]] void leave() { values.pop_back(); }
};

/// Walks sample i: `x` holds the value of each entry of t.inputs, `slope` the slope of each
/// node on this sample, `gate` null or the active edge of each max node. Calls emit(j, p, value)
/// for every path p ending at output j with no zero factor (the paths lin_count_sample counts), in
/// increasing p, with value = x[start] * prod slopes (0 only by underflow). Complexity: O(prefixes
/// with no zero factor, times their out-degree).
template <class Emit>
void lin_walk_sample(const LinWalkTables& t, const double* x, const double* slope,
                     const EdgeId* gate, LinWalkScratch& scratch, Emit&& emit) {
  LinVisitor<Emit> visitor{t, slope, gate, scratch.values, emit, 0};
  for (std::size_t a = 0; a < t.inputs.size(); ++a) {
    const NodeId u = t.inputs[a];
    const Index suffix = t.suffix[static_cast<std::size_t>(u)];
    if (x[a] == 0 || suffix == 0) {
      visitor.p += suffix;
      continue;
    }
    scratch.values.assign(1, x[a]);
    canonical_walk(t.dag, u, visitor, scratch.frames);
  }
}

}  // namespace pathlift::detail
