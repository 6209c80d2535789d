#include "pathlift/network.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>
#include <stdexcept>

#include "pathlift/error.hpp"

namespace pathlift {

// ---------------------------------------------------------------------------------------------
// Activation

std::string Activation::name() const {
  switch (kind) {
    case ActivationKind::identity:
      return "identity";
    case ActivationKind::relu:
      return "relu";
    case ActivationKind::leaky_relu:
      return fmt::format("leaky_relu:{}", negative_slope);
  }
  return "identity";
}

Activation Activation::parse(std::string_view text) {
  if (text == "identity" || text == "linear") {
    return identity();
  }
  if (text == "relu") {
    return relu();
  }
  constexpr std::string_view leaky = "leaky_relu";
  if (text.starts_with(leaky)) {
    std::string_view rest = text.substr(leaky.size());
    if (rest.empty()) {
      return leaky_relu(0.01);
    }
    if (rest.front() == ':') {
      const std::string number(rest.substr(1));
      std::size_t used = 0;
      double slope = 0;
      try {
        slope = std::stod(number, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == number.size() && !number.empty() && std::isfinite(slope)) {
        return leaky_relu(slope);
      }
    }
  }
  throw FormatError(fmt::format(
      "unknown activation '{}' (expected identity, relu, leaky_relu or leaky_relu:<slope>)", text));
}

// ---------------------------------------------------------------------------------------------
// Network

namespace {

std::string quoted(const std::vector<std::string>& names, NodeId v) {
  return fmt::format("'{}'", names[static_cast<std::size_t>(v)]);
}

std::string join_names(const std::vector<std::string>& names, const std::vector<NodeId>& nodes,
                       std::size_t limit = 10) {
  std::string out;
  for (std::size_t i = 0; i < nodes.size() && i < limit; ++i) {
    out += (i == 0 ? "" : ", ") + quoted(names, nodes[i]);
  }
  if (nodes.size() > limit) {
    out += fmt::format(" and {} more", nodes.size() - limit);
  }
  return out;
}

}  // namespace

Network::Network(NetworkSpec spec) {
  validate_and_index(spec);
  m_names = std::move(spec.node_names);
  m_weights = std::move(spec.weights);
}

std::size_t Network::at(NodeId v) const {
  if (v < 0 || static_cast<std::size_t>(v) >= m_names.size()) {
    throw std::out_of_range(
        fmt::format("node {} does not exist (the network has {} nodes)", v, m_names.size()));
  }
  return static_cast<std::size_t>(v);
}

std::size_t Network::edge_at(EdgeId e) const {
  if (e < 0 || static_cast<std::size_t>(e) >= m_src.size()) {
    throw std::out_of_range(
        fmt::format("edge {} does not exist (the network has {} edges)", e, m_src.size()));
  }
  return static_cast<std::size_t>(e);
}

std::optional<NodeId> Network::find_node(std::string_view name) const {
  auto it = m_index.find(std::string(name));
  if (it == m_index.end()) {
    return std::nullopt;
  }
  return it->second;
}

std::string Network::edge_label(EdgeId e) const {
  return fmt::format("{} -> {}", node_name(source(e)), node_name(target(e)));
}

std::span<const double> Network::weights() const {
  if (!m_weights) {
    return {};
  }
  return *m_weights;
}

void Network::validate_and_index(const NetworkSpec& spec) {
  const auto& names = spec.node_names;
  const std::size_t m = names.size();
  if (m == 0) {
    throw NetworkError("the network is empty: it has no nodes");
  }
  if (m > static_cast<std::size_t>(std::numeric_limits<NodeId>::max())) {
    throw NetworkError(fmt::format("the network has {} nodes, more than pathlift supports ({})", m,
                                   std::numeric_limits<NodeId>::max()));
  }
  if (spec.edges.size() > static_cast<std::size_t>(std::numeric_limits<EdgeId>::max())) {
    throw NetworkError(fmt::format("the network has {} edges, more than pathlift supports ({})",
                                   spec.edges.size(), std::numeric_limits<EdgeId>::max()));
  }
  m_index.reserve(m);
  for (std::size_t v = 0; v < m; ++v) {
    if (names[v].empty()) {
      throw NetworkError(fmt::format("node {} has an empty name", v));
    }
    auto [it, inserted] = m_index.emplace(names[v], static_cast<NodeId>(v));
    if (!inserted) {
      throw NetworkError(
          fmt::format("duplicate node name '{}' (nodes {} and {})", names[v], it->second, v));
    }
  }
  const auto check_node = [&](NodeId v, const std::string& what) {
    if (v < 0 || static_cast<std::size_t>(v) >= m) {
      throw NetworkError(
          fmt::format("{} names unknown node {} (the network has {} nodes)", what, v, m));
    }
  };

  const std::size_t d = spec.edges.size();
  m_src.resize(d);
  m_dst.resize(d);
  std::vector<Index> outdeg(m, 0), indeg(m, 0);
  for (std::size_t e = 0; e < d; ++e) {
    const auto [a, b] = spec.edges[e];
    check_node(a, fmt::format("edge {}", e));
    check_node(b, fmt::format("edge {}", e));
    m_src[e] = a;
    m_dst[e] = b;
    ++outdeg[static_cast<std::size_t>(a)];
    ++indeg[static_cast<std::size_t>(b)];
  }

  // CSR adjacency, edges by increasing index (a counting sort keeps them ordered).
  const auto build_csr = [&](const std::vector<Index>& deg, const std::vector<NodeId>& key,
                             std::vector<Index>& off, std::vector<EdgeId>& items) {
    off.assign(m + 1, 0);
    for (std::size_t v = 0; v < m; ++v) {
      off[v + 1] = off[v] + deg[v];
    }
    items.resize(d);
    std::vector<Index> fill(off.begin(), off.end() - 1);
    for (std::size_t e = 0; e < d; ++e) {
      items[static_cast<std::size_t>(fill[static_cast<std::size_t>(key[e])]++)] =
          static_cast<EdgeId>(e);
    }
  };
  build_csr(outdeg, m_src, m_out_offsets, m_out_edges);
  build_csr(indeg, m_dst, m_in_offsets, m_in_edges);

  // Self-loops are the shortest cycles; report them before the general search.
  for (std::size_t e = 0; e < d; ++e) {
    if (m_src[e] == m_dst[e]) {
      throw NetworkError(fmt::format(
          "edge {} ({} -> {}) closes a cycle: {} -> {}", e,
          names[static_cast<std::size_t>(m_src[e])], names[static_cast<std::size_t>(m_dst[e])],
          names[static_cast<std::size_t>(m_src[e])], names[static_cast<std::size_t>(m_dst[e])]));
    }
  }

  // Isolated nodes: no edge at all (it would be input and output at once).
  {
    std::vector<NodeId> isolated;
    for (std::size_t v = 0; v < m; ++v) {
      if (outdeg[v] == 0 && indeg[v] == 0) {
        isolated.push_back(static_cast<NodeId>(v));
      }
    }
    if (!isolated.empty()) {
      throw NetworkError(fmt::format("isolated node{} (no edge at all): {}",
                                     isolated.size() > 1 ? "s" : "", join_names(names, isolated)));
    }
  }

  m_is_bias.assign(m, 0);
  m_designated.assign(m, 0);
  for (std::size_t i = 0; i < spec.outputs.size(); ++i) {
    const NodeId v = spec.outputs[i];
    check_node(v, fmt::format("outputs[{}]", i));
    if (indeg[static_cast<std::size_t>(v)] == 0) {
      throw NetworkError(fmt::format(
          "node {} is designated as an output but has no incoming edge (it is an input)",
          quoted(names, v)));
    }
    m_designated[static_cast<std::size_t>(v)] = 1;
  }
  for (std::size_t i = 0; i < spec.bias.size(); ++i) {
    const NodeId v = spec.bias[i];
    check_node(v, fmt::format("bias[{}]", i));
    const auto vi = static_cast<std::size_t>(v);
    if (indeg[vi] != 0) {
      const EdgeId e = m_in_edges[static_cast<std::size_t>(m_in_offsets[vi])];
      throw NetworkError(fmt::format(
          "bias node {} has an incoming edge: edge {} ({} -> {})", quoted(names, v), e,
          names[static_cast<std::size_t>(m_src[static_cast<std::size_t>(e)])], names[vi]));
    }
    m_is_bias[vi] = 1;
  }

  m_role.resize(m);
  for (std::size_t v = 0; v < m; ++v) {
    if (indeg[v] == 0) {
      m_role[v] = NodeRole::input;
    } else if (outdeg[v] == 0 || m_designated[v] != 0) {
      m_role[v] = NodeRole::output;
    } else {
      m_role[v] = NodeRole::hidden;
    }
  }

  m_act.resize(m);
  for (std::size_t v = 0; v < m; ++v) {
    m_act[v] = m_role[v] == NodeRole::hidden ? Activation::relu() : Activation::identity();
  }
  std::vector<Index> activation_entry(m, -1);
  for (std::size_t i = 0; i < spec.activations.size(); ++i) {
    const auto& [v, act] = spec.activations[i];
    check_node(v, fmt::format("activations[{}]", i));
    Index& seen = activation_entry[static_cast<std::size_t>(v)];
    if (seen >= 0) {
      throw NetworkError(
          fmt::format("node {} is given an activation twice (activations[{}] and [{}])",
                      quoted(names, v), seen, i));
    }
    seen = static_cast<Index>(i);
    if (!std::isfinite(act.negative_slope)) {
      throw NetworkError(fmt::format("activation of node {} has a non-finite slope {}",
                                     quoted(names, v), act.negative_slope));
    }
    if (m_role[static_cast<std::size_t>(v)] == NodeRole::input && act != Activation::identity()) {
      throw NetworkError(
          fmt::format("input node {} cannot have activation '{}': inputs take their value from "
                      "the data (or 1 for a bias)",
                      quoted(names, v), act.name()));
    }
    m_act[static_cast<std::size_t>(v)] = act;
  }

  for (std::size_t v = 0; v < m; ++v) {
    const auto id = static_cast<NodeId>(v);
    switch (m_role[v]) {
      case NodeRole::input:
        m_inputs.push_back(id);
        (m_is_bias[v] != 0 ? m_bias : m_data_inputs).push_back(id);
        break;
      case NodeRole::hidden:
        m_hidden.push_back(id);
        break;
      case NodeRole::output:
        m_outputs.push_back(id);
        break;
    }
  }

  // Topological order: inputs first, then Kahn's algorithm, smallest node index first.
  m_topo.reserve(m);
  std::vector<Index> remaining = indeg;
  std::priority_queue<NodeId, std::vector<NodeId>, std::greater<>> ready;
  const auto release = [&](NodeId v) {
    for (EdgeId e : out_edges(v)) {
      const NodeId w = m_dst[static_cast<std::size_t>(e)];
      if (--remaining[static_cast<std::size_t>(w)] == 0) {
        ready.push(w);
      }
    }
  };
  for (NodeId v : m_inputs) {
    m_topo.push_back(v);
  }
  for (NodeId v : m_inputs) {
    release(v);
  }
  while (!ready.empty()) {
    const NodeId v = ready.top();
    ready.pop();
    m_topo.push_back(v);
    release(v);
  }
  if (m_topo.size() != m) {
    // Every node left has an incoming edge from another node left: walk backwards until a
    // node repeats; the repeated stretch is a cycle.
    std::vector<Index> seen_at(m, -1);
    NodeId v = 0;
    while (remaining[static_cast<std::size_t>(v)] == 0) {
      ++v;
    }
    std::vector<NodeId> walk;
    std::vector<EdgeId> via;
    while (seen_at[static_cast<std::size_t>(v)] < 0) {
      seen_at[static_cast<std::size_t>(v)] = static_cast<Index>(walk.size());
      walk.push_back(v);
      EdgeId back = -1;
      for (EdgeId e : in_edges(v)) {
        if (remaining[static_cast<std::size_t>(m_src[static_cast<std::size_t>(e)])] > 0) {
          back = e;
          break;
        }
      }
      via.push_back(back);
      v = m_src[static_cast<std::size_t>(back)];
    }
    // walk[k..] reversed is the cycle in edge direction: v -> ... -> walk[k].
    const auto k = static_cast<std::size_t>(seen_at[static_cast<std::size_t>(v)]);
    std::vector<NodeId> cycle(walk.begin() + static_cast<std::ptrdiff_t>(k), walk.end());
    std::reverse(cycle.begin(), cycle.end());
    // cycle[0] = the node reached last; the closing edge goes from the last listed node back
    // to the first. Start the listing at the smallest node for a stable message.
    const auto first = std::min_element(cycle.begin(), cycle.end()) - cycle.begin();
    std::rotate(cycle.begin(), cycle.begin() + first, cycle.end());
    std::string text;
    for (NodeId c : cycle) {
      text += names[static_cast<std::size_t>(c)] + " -> ";
    }
    text += names[static_cast<std::size_t>(cycle.front())];
    // The edge that closes the cycle: from the last listed node to the first.
    EdgeId closing = -1;
    for (EdgeId e : out_edges(cycle.back())) {
      if (m_dst[static_cast<std::size_t>(e)] == cycle.front()) {
        closing = e;
        break;
      }
    }
    throw NetworkError(fmt::format("edge {} ({} -> {}) closes a cycle: {}", closing,
                                   names[static_cast<std::size_t>(cycle.back())],
                                   names[static_cast<std::size_t>(cycle.front())], text));
  }
  m_topo_pos.resize(m);
  for (std::size_t i = 0; i < m; ++i) {
    m_topo_pos[static_cast<std::size_t>(m_topo[i])] = static_cast<Index>(i);
  }

  if (spec.weights) {
    if (spec.weights->size() != d) {
      throw NetworkError(fmt::format("weights has {} entries but the network has {} edges",
                                     spec.weights->size(), d));
    }
    for (std::size_t e = 0; e < d; ++e) {
      if (!std::isfinite((*spec.weights)[e])) {
        throw NetworkError(fmt::format("weight {} (edge {} -> {}) is not finite: {}", e,
                                       names[static_cast<std::size_t>(m_src[e])],
                                       names[static_cast<std::size_t>(m_dst[e])],
                                       (*spec.weights)[e]));
      }
    }
  }

  m_monotone = true;
  for (std::size_t v = 0; v < m && m_monotone; ++v) {
    if (indeg[v] > 0 && outdeg[v] > 0) {
      const EdgeId last_in = m_in_edges[static_cast<std::size_t>(m_in_offsets[v + 1] - 1)];
      const EdgeId first_out = m_out_edges[static_cast<std::size_t>(m_out_offsets[v])];
      m_monotone = last_in < first_out;
    }
  }
}

Network Network::with_weights(std::optional<std::vector<double>> weights) const {
  NetworkSpec s = spec();
  s.weights = std::move(weights);
  return Network(std::move(s));
}

NetworkSpec Network::spec() const {
  NetworkSpec s;
  s.node_names = m_names;
  s.edges.reserve(m_src.size());
  for (std::size_t e = 0; e < m_src.size(); ++e) {
    s.edges.emplace_back(m_src[e], m_dst[e]);
  }
  for (std::size_t v = 0; v < m_names.size(); ++v) {
    const auto id = static_cast<NodeId>(v);
    if (m_designated[v] != 0) {
      s.outputs.push_back(id);
    }
    if (m_is_bias[v] != 0) {
      s.bias.push_back(id);
    }
    const Activation def =
        m_role[v] == NodeRole::hidden ? Activation::relu() : Activation::identity();
    if (m_act[v] != def) {
      s.activations.emplace_back(id, m_act[v]);
    }
  }
  s.weights = m_weights;
  return s;
}

void check_theta_size(const Network& net, std::size_t theta_size) {
  if (theta_size != static_cast<std::size_t>(net.num_edges())) {
    throw std::invalid_argument(fmt::format("theta has {} entries but the network has {} edges",
                                            theta_size, net.num_edges()));
  }
}

}  // namespace pathlift
