#pragma once
// The per-sample walk that builds the rows of L (linearize.cpp): a depth-first walk over the
// paths in canonical order (inputs in node order, outgoing edges by increasing index, a path
// at every output reached), carrying x_i[start] times the slopes of the nodes entered, that
// skips with the DP path counts every subtree behind a zero factor.

#include <cstdint>
#include <vector>

#include "pathlift/network.hpp"
#include "pathlift/types.hpp"

namespace pathlift::detail {

/// What the walk reads of a node, in one place.
struct LinNode {
  Index out_begin;  ///< outgoing edges: out_target[out_begin .. out_end)
  Index out_end;
  Index suffix;  ///< S[v]: paths (length >= 1) from v to an output (saturated)
  Index slot;    ///< j for the j-th output node, -1 otherwise
};

/// Theta- and sample-independent tables of the walk and of the counting DP.
struct LinWalkTables {
  std::vector<LinNode> nodes;
  std::vector<NodeId> out_target;  ///< targets of the outgoing edges, by increasing edge index
  std::vector<NodeId> inputs;      ///< all inputs, node order (where paths start)
  std::vector<Index> data_column;  ///< column of X for each entry of `inputs`, -1 for a bias
  Index num_paths = 0;             ///< P (saturated above k_lin_max_paths)
  Index num_nodes = 0;
  // The counting DP: non-input nodes in topological order, their incoming edges' sources.
  std::vector<NodeId> inner_topo;
  std::vector<Index> in_offsets;  ///< per entry of inner_topo, into in_source
  std::vector<NodeId> in_source;
};

/// The largest P whose path indices fit the 32-bit column indices of CsrMatrix.
inline constexpr Index k_lin_max_paths = 2147483647;

LinWalkTables lin_make_walk_tables(const Network& net);

/// Entries of sample i's rows: count[j] = number of paths ending at output j with no zero
/// factor (x[start] != 0, no slope 0 on the way), by the DP N(input) = [x != 0],
/// N(v) = [slope(v) != 0] sum_{u->v} N(u) over the nodes in topological order (N(v) <= P:
/// distinct partial paths into v extend to distinct paths). `partial` is scratch.
/// Complexity: O(m + d).
void lin_count_sample(const LinWalkTables& t, const double* x, const double* slope,
                      std::vector<Index>& partial, Index* count);

/// A frame of the walk's explicit stack: the next outgoing edge of a node on the prefix, and
/// the prefix's product.
struct LinFrame {
  Index cursor;
  Index end;
  double value;
};

/// Walks sample i: `x` holds the value of each entry of t.inputs, `slope` the slope of each
/// node on this sample. Calls emit(j, p, value) for every path p ending at output j with no
/// zero factor (the paths lin_count_sample counts), in increasing p, with value =
/// x[start] * prod slopes (0 only by underflow). `frames` is scratch.
/// Complexity: O(prefixes with no zero factor, times their out-degree).
template <class Emit>
void lin_walk_sample(const LinWalkTables& t, const double* x, const double* slope,
                     std::vector<LinFrame>& frames, Emit&& emit) {
  frames.resize(static_cast<std::size_t>(t.num_nodes) + 1);  // a path visits a node once
  LinFrame* const stack = frames.data();
  const LinNode* const node = t.nodes.data();
  const NodeId* const target = t.out_target.data();
  Index p = 0;
  for (std::size_t a = 0; a < t.inputs.size(); ++a) {
    const LinNode& start = node[t.inputs[a]];
    if (x[a] == 0 || start.suffix == 0) {
      p += start.suffix;
      continue;
    }
    Index top = 0;
    stack[0] = {start.out_begin, start.out_end, x[a]};
    while (top >= 0) {
      LinFrame& f = stack[top];
      if (f.cursor == f.end) {
        --top;
        continue;
      }
      const NodeId w = target[f.cursor++];
      const LinNode& nw = node[w];
      const double s = slope[w];
      // Skip by the factor, not the product, so that the emitted paths are exactly those
      // lin_count_sample counts (a product can underflow to 0, or be inf times 0).
      if (s == 0) {  // every path behind this prefix has c_p^i = 0
        p += (nw.slot >= 0 ? 1 : 0) + nw.suffix;
        continue;
      }
      const double value = f.value * s;
      if (nw.slot >= 0) {
        emit(nw.slot, p, value);
        ++p;
      }
      if (nw.suffix > 0) {
        stack[++top] = {nw.out_begin, nw.out_end, value};
      }
    }
  }
}

}  // namespace pathlift::detail
