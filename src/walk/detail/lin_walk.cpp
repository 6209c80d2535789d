#include "src/walk/detail/lin_walk.hpp"

#include "pathlift/forward.hpp"

#include <span>

#include "src/network/dag_dp.hpp"
#include "src/walk/detail/ring_saturating_counts.hpp"

namespace pathlift::detail {

LinWalkTables lin_make_walk_tables(const Network& net) {
  LinWalkTables t(net);
  t.num_nodes = net.num_nodes();
  // Saturated: beyond k_lin_max_paths only "too many" matters.
  const SaturatingCounts ring{k_lin_max_paths + 1};
  t.suffix = dag_backward(t.dag, ring).suffix;
  const std::vector<Index> data_column = data_columns(net);
  for (const NodeId u : net.inputs()) {
    t.inputs.push_back(u);
    t.data_column.push_back(data_column[static_cast<std::size_t>(u)]);
    ring.add(t.num_paths, t.suffix[static_cast<std::size_t>(u)]);
  }
  return t;
}

namespace {

/// Counts of the paths with no zero factor on one sample: an input counts when its value is
/// not 0, a node with slope 0 stops every path through it.
struct NonZeroPathCounts {
  using value_type = Index;
  const DagView* g;
  const double* x;      // per input slot
  const double* slope;  // per node
  const EdgeId* gate;   // per node: the active edge into a max node, or null
  [[nodiscard]] static Index zero() { return 0; }
  [[nodiscard]] Index start(NodeId v) const {
    return x[g->input_slot[static_cast<std::size_t>(v)]] != 0 ? 1 : 0;
  }
  [[nodiscard]] Index extend(EdgeId e, Index n) const {
    return lin_gated(gate, e, g->dst[e]) ? 0 : n;
  }
  static void add(Index& acc, Index n) { acc += n; }
  void finish(NodeId v, Index& acc) const {
    if (slope[v] == 0) {
      acc = 0;
    }
  }
};

}  // namespace

void lin_count_sample(const LinWalkTables& t, const double* x, const double* slope,
                      const EdgeId* gate, std::vector<Index>& partial, Index* count) {
  partial.resize(static_cast<std::size_t>(t.num_nodes));
  dag_forward(t.dag, NonZeroPathCounts{&t.dag, x, slope, gate}, std::span<Index>(partial));
  const auto outputs = t.dag.net->outputs();
  for (std::size_t j = 0; j < outputs.size(); ++j) {
    count[j] = partial[static_cast<std::size_t>(outputs[j])];
  }
}

}  // namespace pathlift::detail
