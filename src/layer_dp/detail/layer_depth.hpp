#pragma once
// The longest paths of a layer graph's unrolled DAG, layer by layer (generalization.cpp's D and
// M without unrolling or counting path lengths).

#include <cstdint>
#include <vector>

#include "pathlift/layers.hpp"
#include "pathlift/types.hpp"

namespace pathlift::detail {

/// Per layer: `depth`, the edges of the longest path from an input to the layer's entries (a
/// pending sum's own edges not counted: they end at the node that reads it), and `max_pools`,
/// the most max_pool layers on one path into them. A node reading a layer's entries, such as
/// the output node of an output entry, ends paths of depth + 1 edges.
struct LayerDepths {
  std::vector<Index> depth;
  std::vector<Index> max_pools;
};

/// The depths from the unroller's node flags (Unroller::node_entries: 1 for an entry that is a
/// node): a layer adds one edge to the paths through it when some of its entries are nodes (a
/// sum absorbed by its consumer adds none, a view none). An upper bound on the unrolled DAG's
/// longest path into each layer, equal to it when the entries of a layer that are nodes are
/// reached by the deepest paths into the layer (every graph of the tests).
LayerDepths layer_depths(const LayerGraph& graph,
                         const std::vector<std::vector<std::uint8_t>>& nodes);

}  // namespace pathlift::detail
