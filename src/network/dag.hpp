#pragma once
// The one read-only view of a network's arrays that every walk and every sum over the DAG uses:
// the topological order, the edges in CSR form by source (out) and by target (in), each edge's
// ends, and the roles the algorithms test in their inner loops (output, output slot, input
// slot). The arrays are the Network's own (pointers, no copy); the view adds only what is
// O(m) per node, and, on request, the target of each out-CSR entry for the walks (O(d)).

#include <cstdint>
#include <vector>

#include "pathlift/network.hpp"
#include "pathlift/types.hpp"

namespace pathlift::detail {

struct DagView {
  const Network* net;
  Index n;           ///< nodes (m)
  Index d;           ///< edges
  Index num_inputs;  ///< topological positions [0, num_inputs) are the inputs
  const NodeId* topo;
  const Index* in_off;  ///< in-edges of v: in_list[in_off[v] .. in_off[v + 1])
  const EdgeId* in_list;
  const Index* out_off;  ///< out-edges of v: out_list[out_off[v] .. out_off[v + 1]), increasing
  const EdgeId* out_list;
  const NodeId* src;                    ///< source of each edge
  const NodeId* dst;                    ///< target of each edge
  std::vector<std::uint8_t> is_output;  ///< 1 for an output node
  std::vector<Index> output_slot;       ///< j for the j-th output node, -1 otherwise
  std::vector<Index> input_slot;        ///< a for the a-th input node, -1 otherwise
  /// out_target[c] = dst[out_list[c]] (filled when built `with_out_targets`), for the walks.
  std::vector<NodeId> out_target;

  /// A node's edges on one side: positions [begin, end) of in_list or out_list.
  struct EdgeRange {
    Index begin;
    Index end;
  };
  [[nodiscard]] EdgeRange in_range(NodeId v) const { return {in_off[v], in_off[v + 1]}; }
  [[nodiscard]] EdgeRange out_range(NodeId v) const { return {out_off[v], out_off[v + 1]}; }

  explicit DagView(const Network& network, bool with_out_targets = false)
      : net(&network),
        n(network.num_nodes()),
        d(network.num_edges()),
        num_inputs(static_cast<Index>(network.inputs().size())),
        topo(network.topological_order().data()),
        in_off(network.in_offsets().data()),
        in_list(network.in_edge_list().data()),
        out_off(network.out_offsets().data()),
        out_list(network.out_edge_list().data()),
        src(network.sources().data()),
        dst(network.targets().data()),
        is_output(static_cast<std::size_t>(n), 0),
        output_slot(static_cast<std::size_t>(n), -1),
        input_slot(static_cast<std::size_t>(n), -1) {
    const auto outputs = network.outputs();
    for (std::size_t j = 0; j < outputs.size(); ++j) {
      is_output[static_cast<std::size_t>(outputs[j])] = 1;
      output_slot[static_cast<std::size_t>(outputs[j])] = static_cast<Index>(j);
    }
    const auto inputs = network.inputs();
    for (std::size_t a = 0; a < inputs.size(); ++a) {
      input_slot[static_cast<std::size_t>(inputs[a])] = static_cast<Index>(a);
    }
    if (with_out_targets) {
      out_target.resize(static_cast<std::size_t>(d));
      for (Index c = 0; c < d; ++c) {
        out_target[static_cast<std::size_t>(c)] = dst[out_list[c]];
      }
    }
  }
};

}  // namespace pathlift::detail
