#include "src/detail/lin_walk.hpp"

#include <algorithm>

namespace pathlift::detail {

LinWalkTables lin_make_walk_tables(const Network& net) {
  LinWalkTables t;
  const auto m = static_cast<std::size_t>(net.num_nodes());
  t.num_nodes = net.num_nodes();
  const auto out_offsets = net.out_offsets();
  const auto out_edges = net.out_edge_list();
  t.out_target.reserve(out_edges.size());
  for (const EdgeId e : out_edges) {
    t.out_target.push_back(net.target(e));
  }
  t.nodes.resize(m);
  for (std::size_t v = 0; v < m; ++v) {
    t.nodes[v] = {out_offsets[v], out_offsets[v + 1], 0, -1};
  }
  const auto outputs = net.outputs();
  for (std::size_t j = 0; j < outputs.size(); ++j) {
    t.nodes[static_cast<std::size_t>(outputs[j])].slot = static_cast<Index>(j);
  }
  // S[v] = sum_{v->w} ([w output] + S[w]), saturated: beyond k_lin_max_paths only "too many"
  // matters, and saturation keeps the sums far from overflow.
  constexpr Index cap = k_lin_max_paths + 1;
  const auto topo = net.topological_order();
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    LinNode& nv = t.nodes[static_cast<std::size_t>(*it)];
    Index s = 0;
    for (Index c = nv.out_begin; c < nv.out_end; ++c) {
      const LinNode& nw =
          t.nodes[static_cast<std::size_t>(t.out_target[static_cast<std::size_t>(c)])];
      s = std::min(cap, s + (nw.slot >= 0 ? 1 : 0) + nw.suffix);
    }
    nv.suffix = s;
  }
  std::vector<Index> data_column(m, -1);
  const auto data_inputs = net.data_inputs();
  for (std::size_t c = 0; c < data_inputs.size(); ++c) {
    data_column[static_cast<std::size_t>(data_inputs[c])] = static_cast<Index>(c);
  }
  for (const NodeId u : net.inputs()) {
    t.inputs.push_back(u);
    t.data_column.push_back(data_column[static_cast<std::size_t>(u)]);
    t.num_paths = std::min(cap, t.num_paths + t.nodes[static_cast<std::size_t>(u)].suffix);
  }
  t.in_offsets.push_back(0);
  for (const NodeId v : topo) {
    if (net.is_input(v)) {
      continue;
    }
    t.inner_topo.push_back(v);
    for (const EdgeId e : net.in_edges(v)) {
      t.in_source.push_back(net.source(e));
    }
    t.in_offsets.push_back(static_cast<Index>(t.in_source.size()));
  }
  return t;
}

void lin_count_sample(const LinWalkTables& t, const double* x, const double* slope,
                      std::vector<Index>& partial, Index* count) {
  partial.assign(static_cast<std::size_t>(t.num_nodes), 0);
  for (std::size_t a = 0; a < t.inputs.size(); ++a) {
    partial[static_cast<std::size_t>(t.inputs[a])] = x[a] != 0 ? 1 : 0;
  }
  for (std::size_t k = 0; k < t.inner_topo.size(); ++k) {
    const auto v = static_cast<std::size_t>(t.inner_topo[k]);
    if (slope[v] == 0) {
      continue;  // partial[v] stays 0
    }
    Index sum = 0;
    for (Index e = t.in_offsets[k]; e < t.in_offsets[k + 1]; ++e) {
      sum += partial[static_cast<std::size_t>(t.in_source[static_cast<std::size_t>(e)])];
    }
    partial[v] = sum;
    if (t.nodes[v].slot >= 0) {
      count[t.nodes[v].slot] = sum;
    }
  }
}

}  // namespace pathlift::detail
