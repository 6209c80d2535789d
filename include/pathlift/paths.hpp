#pragma once
/// \file paths.hpp
/// Path enumeration in the canonical order, as a path set in CSR form.
///
/// The canonical order (docs/maths-to-code.md): depth-first from the input nodes in node
/// order, outgoing edges by increasing edge index; a path is emitted each time the walk
/// reaches an output node, and the walk then continues past it. On the paper's examples this
/// is the paper's printed order.

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "pathlift/network.hpp"
#include "pathlift/options.hpp"
#include "pathlift/sparse.hpp"
#include "pathlift/types.hpp"

namespace pathlift {

/// The paths of a network in canonical order, in CSR form: path p is the edge sequence
/// edges[offsets[p] .. offsets[p+1]) in walk order (from its input to its output).
struct PathSet {
  Index num_edges = 0;  ///< edges of the network (d too with one parameter per edge)
  /// How edges carry parameters (null: edge k carries parameter k), from the network.
  std::shared_ptr<const ParameterMap> params;
  std::shared_ptr<const Buffer<Index>> offsets;  ///< P + 1 entries
  std::shared_ptr<const Buffer<EdgeId>> edges;   ///< nnz entries, walk order
  Buffer<NodeId> start;                          ///< input node of each path
  Buffer<NodeId> end;                            ///< output node of each path
  /// True when every path's edges in walk order are increasing (the network's edges increase
  /// along paths): the skeleton then shares these arrays.
  bool walk_order_sorted = false;

  [[nodiscard]] Index size() const { return static_cast<Index>(offsets->size()) - 1; }
  /// d, the number of parameters: the columns of B and dPhi, theta's length.
  [[nodiscard]] Index num_params() const { return params ? params->num_params : num_edges; }
  [[nodiscard]] Index nnz() const { return offsets->back(); }
  /// Edges of path p, in walk order.
  [[nodiscard]] std::span<const EdgeId> path(Index p) const {
    const auto i = static_cast<std::size_t>(p);
    return {edges->data() + (*offsets)[i],
            static_cast<std::size_t>((*offsets)[i + 1] - (*offsets)[i])};
  }
};

/// Enumerates every path in canonical order, in parallel (OpenMP): each task writes into a
/// range precomputed from the DP counts, so the result is identical for any thread count.
/// Throws TooLarge (with P, nnz and bytes) when it would exceed options.max_memory or when P
/// does not fit in 64 bits. Complexity: O(nnz) time and memory.
PathSet enumerate_paths(const Network& net, const EngineOptions& options = {});

/// The paper's (q, P1) layout of the path-lifting: paths grouped by output node (in output
/// order), canonical order within a group. order[k] = canonical index of the k-th path in
/// that layout; counts[j] = number of paths ending at output j (P1 = counts[j] for layered
/// networks, where all outputs have the same count).
struct OutputGrouping {
  std::vector<Index> order;
  std::vector<Index> counts;
};
OutputGrouping group_by_output(const Network& net, const PathSet& paths);

}  // namespace pathlift
