#include "pathlift/network.hpp"

#include <fmt/format.h>

#include <charconv>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <queue>
#include <stdexcept>

#include "pathlift/error.hpp"
#include "src/network/theta_check.hpp"

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
    case ActivationKind::max:
      return order == 1 ? std::string("max") : fmt::format("max:{}", order);
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
  if (text == "max") {
    return max();
  }
  if (text.starts_with("max:")) {
    const std::string number(text.substr(4));
    Index k = 0;
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), k);
    if (ec == std::errc() && end == number.data() + number.size() && k >= 1) {
      return max(k);
    }
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
      "unknown activation '{}' (expected identity, relu, leaky_relu, leaky_relu:<slope>, max "
      "or max:<k> with k >= 1)",
      printable(text)));
}

// ---------------------------------------------------------------------------------------------
// NodeNames

NodeNames::NodeNames(std::vector<std::string> names) {
  if (names.size() > static_cast<std::size_t>(std::numeric_limits<NodeId>::max())) {
    throw NetworkError(fmt::format("the network has {} nodes, more than pathlift supports ({})",
                                   names.size(), std::numeric_limits<NodeId>::max()));
  }
  m_index.reserve(names.size());
  for (std::size_t v = 0; v < names.size(); ++v) {
    index(names[v], v);
  }
  m_names = std::move(names);
}

NodeId NodeNames::add(std::string name) {
  const std::size_t v = m_names.size();
  if (v == static_cast<std::size_t>(std::numeric_limits<NodeId>::max())) {
    throw NetworkError(fmt::format("the network has {} nodes, more than pathlift supports ({})",
                                   v + 1, std::numeric_limits<NodeId>::max()));
  }
  index(name, v);
  m_names.push_back(std::move(name));
  return static_cast<NodeId>(v);
}

NodeNames NodeNames::numbered(std::uint64_t count, std::size_t edges, std::string_view what) {
  constexpr std::uint64_t small = 1'000'000;
  const std::uint64_t max_nodes = 2 * static_cast<std::uint64_t>(edges);
  if ((count > max_nodes && count > small) ||
      count > static_cast<std::uint64_t>(std::numeric_limits<NodeId>::max())) {
    throw FormatError(fmt::format(
        "{}: node count {} is out of range (every node needs an edge: at most 2 x {} edges = {})",
        what, count, edges, max_nodes));
  }
  std::vector<std::string> names;
  names.reserve(static_cast<std::size_t>(count));
  for (std::uint64_t i = 0; i < count; ++i) {
    names.push_back(std::to_string(i));
  }
  return NodeNames(std::move(names));
}

void NodeNames::index(const std::string& name, std::size_t v) {
  if (name.empty()) {
    throw NetworkError(fmt::format("node {} has an empty name", v));
  }
  const auto [it, inserted] = m_index.emplace(name, static_cast<NodeId>(v));
  if (!inserted) {
    throw NetworkError(
        fmt::format("duplicate node name '{}' (nodes {} and {})", printable(name), it->second, v));
  }
}

std::vector<std::string> NodeNames::take_names() && {
  m_index.clear();
  return std::move(m_names);
}

std::optional<NodeId> NodeNames::find(std::string_view name) const {
  const auto it = m_index.find(name);
  if (it == m_index.end()) {
    return std::nullopt;
  }
  return it->second;
}

void NodeNames::throw_unknown(const std::string& where, std::string_view name) {
  throw FormatError(fmt::format("{}: unknown node '{}'", where, printable(name)));
}

void NodeNames::throw_out_of_range(const std::string& where, const std::string& index) const {
  throw FormatError(fmt::format("{}: node index {} is out of range (the network has {} nodes)",
                                where, index, m_names.size()));
}

// ---------------------------------------------------------------------------------------------
// Network

namespace {

std::string quoted(const std::vector<std::string>& names, NodeId v) {
  return fmt::format("'{}'", printable(names[static_cast<std::size_t>(v)]));
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

/// Throws NetworkError "<where()> names unknown node 7 (the network has 5 nodes)" unless v is
/// a node; `where` is called only then (valid input formats nothing).
template <class Where>
void check_node(NodeId v, std::size_t m, const Where& where) {
  if (v < 0 || static_cast<std::size_t>(v) >= m) {
    throw NetworkError(
        fmt::format("{} names unknown node {} (the network has {} nodes)", where(), v, m));
  }
}

/// The CSR arrays of edges grouped by key[e] (the source or the target), edges by increasing
/// index within a node (a counting sort keeps them ordered).
void build_csr(std::size_t m, const Buffer<NodeId>& key, std::vector<Index>& off,
               Buffer<EdgeId>& items) {
  const std::size_t d = key.size();
  off.assign(m + 1, 0);
  for (const NodeId v : key) {
    ++off[static_cast<std::size_t>(v) + 1];
  }
  for (std::size_t v = 0; v < m; ++v) {
    off[v + 1] += off[v];
  }
  items.resize(d);
  std::vector<Index> fill(off.begin(), off.end() - 1);
  for (std::size_t e = 0; e < d; ++e) {
    items[static_cast<std::size_t>(fill[static_cast<std::size_t>(key[e])]++)] =
        static_cast<EdgeId>(e);
  }
}

}  // namespace

Network::Network(NetworkSpec spec) {
  if (spec.node_names.empty()) {
    throw NetworkError("the network is empty: it has no nodes");
  }
  m_nodes = NodeNames(std::move(spec.node_names));
  index_edges(spec);
  check_loops_and_isolated_nodes(spec);
  assign_roles(spec);
  assign_activations(spec);
  order_topologically();
  assign_parameters(spec);
  check_max_nodes();
  check_weights(spec);
  m_weights = std::move(spec.weights);
  m_monotone = true;
  for (std::size_t v = 0; v < m_nodes.names().size() && m_monotone; ++v) {
    if (in_degree(v) > 0 && out_degree(v) > 0) {
      const EdgeId last_in = m_in_edges[static_cast<std::size_t>(m_in_offsets[v + 1] - 1)];
      const EdgeId first_out = m_out_edges[static_cast<std::size_t>(m_out_offsets[v])];
      m_monotone = last_in < first_out;
    }
  }
}

std::size_t Network::at(NodeId v) const {
  if (v < 0 || v >= m_nodes.size()) {
    throw std::out_of_range(
        fmt::format("node {} does not exist (the network has {} nodes)", v, m_nodes.size()));
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
  return m_nodes.find(name);
}

std::string Network::edge_label(EdgeId e) const {
  return fmt::format("{} -> {}", printable(node_name(source(e))), printable(node_name(target(e))));
}

std::span<const double> Network::weights() const {
  if (!m_weights) {
    return {};
  }
  return *m_weights;
}

void Network::index_edges(const NetworkSpec& spec) {
  const std::size_t m = m_nodes.names().size();
  const std::size_t d = spec.edges.size();
  if (d > static_cast<std::size_t>(std::numeric_limits<EdgeId>::max())) {
    throw NetworkError(fmt::format("the network has {} edges, more than pathlift supports ({})", d,
                                   std::numeric_limits<EdgeId>::max()));
  }
  m_src.resize(d);
  m_dst.resize(d);
  for (std::size_t e = 0; e < d; ++e) {
    const auto [a, b] = spec.edges[e];
    const auto where = [e] { return fmt::format("edge {}", e); };
    check_node(a, m, where);
    check_node(b, m, where);
    m_src[e] = a;
    m_dst[e] = b;
  }
  build_csr(m, m_src, m_out_offsets, m_out_edges);
  build_csr(m, m_dst, m_in_offsets, m_in_edges);
}

void Network::check_loops_and_isolated_nodes(const NetworkSpec& spec) {
  const auto& names = m_nodes.names();
  m_designated_input.assign(names.size(), 0);
  for (std::size_t i = 0; i < spec.inputs.size(); ++i) {
    const NodeId v = spec.inputs[i];
    check_node(v, names.size(), [i] { return fmt::format("inputs[{}]", i); });
    if (in_degree(static_cast<std::size_t>(v)) != 0) {
      throw NetworkError(fmt::format("node {} is designated as an input but has an incoming edge",
                                     quoted(names, v)));
    }
    m_designated_input[static_cast<std::size_t>(v)] = 1;
  }
  // Self-loops are the shortest cycles; report them before the general search.
  for (std::size_t e = 0; e < m_src.size(); ++e) {
    if (m_src[e] == m_dst[e]) {
      const std::string v = printable(names[static_cast<std::size_t>(m_src[e])]);
      throw NetworkError(fmt::format("edge {} ({} -> {}) closes a cycle: {} -> {}", e, v, v, v, v));
    }
  }
  // Isolated nodes: no edge at all (such a node would be input and output at once), unless
  // designated as an input.
  std::vector<NodeId> isolated;
  for (std::size_t v = 0; v < names.size(); ++v) {
    if (out_degree(v) == 0 && in_degree(v) == 0 && m_designated_input[v] == 0) {
      isolated.push_back(static_cast<NodeId>(v));
    }
  }
  if (!isolated.empty()) {
    throw NetworkError(fmt::format("isolated node{} (no edge at all): {}",
                                   isolated.size() > 1 ? "s" : "", join_names(names, isolated)));
  }
}

void Network::assign_roles(const NetworkSpec& spec) {
  const auto& names = m_nodes.names();
  const std::size_t m = names.size();
  m_designated.assign(m, 0);
  for (std::size_t i = 0; i < spec.outputs.size(); ++i) {
    const NodeId v = spec.outputs[i];
    check_node(v, m, [i] { return fmt::format("outputs[{}]", i); });
    if (in_degree(static_cast<std::size_t>(v)) == 0) {
      throw NetworkError(fmt::format(
          "node {} is designated as an output but has no incoming edge (it is an input)",
          quoted(names, v)));
    }
    m_designated[static_cast<std::size_t>(v)] = 1;
  }
  m_is_bias.assign(m, 0);
  for (std::size_t i = 0; i < spec.bias.size(); ++i) {
    const NodeId v = spec.bias[i];
    check_node(v, m, [i] { return fmt::format("bias[{}]", i); });
    const auto vi = static_cast<std::size_t>(v);
    if (in_degree(vi) != 0) {
      const EdgeId e = m_in_edges[static_cast<std::size_t>(m_in_offsets[vi])];
      throw NetworkError(fmt::format(
          "bias node {} has an incoming edge: edge {} ({} -> {})", quoted(names, v), e,
          printable(names[static_cast<std::size_t>(m_src[static_cast<std::size_t>(e)])]),
          printable(names[vi])));
    }
    m_is_bias[vi] = 1;
  }

  m_role.resize(m);
  for (std::size_t v = 0; v < m; ++v) {
    const auto id = static_cast<NodeId>(v);
    if (in_degree(v) == 0) {
      m_role[v] = NodeRole::input;
      m_inputs.push_back(id);
      (m_is_bias[v] != 0 ? m_bias : m_data_inputs).push_back(id);
    } else if (out_degree(v) == 0 || m_designated[v] != 0) {
      m_role[v] = NodeRole::output;
      m_outputs.push_back(id);
    } else {
      m_role[v] = NodeRole::hidden;
      m_hidden.push_back(id);
    }
  }
}

void Network::assign_activations(const NetworkSpec& spec) {
  const auto& names = m_nodes.names();
  const std::size_t m = names.size();
  m_act.resize(m);
  for (std::size_t v = 0; v < m; ++v) {
    m_act[v] = m_role[v] == NodeRole::hidden ? Activation::relu() : Activation::identity();
  }
  std::vector<Index> activation_entry(m, -1);
  for (std::size_t i = 0; i < spec.activations.size(); ++i) {
    const auto& [v, act] = spec.activations[i];
    check_node(v, m, [i] { return fmt::format("activations[{}]", i); });
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
}

void Network::order_topologically() {
  // Inputs first, then Kahn's algorithm, smallest node index first.
  const std::size_t m = m_nodes.names().size();
  m_topo.reserve(m);
  std::vector<Index> remaining(m);
  for (std::size_t v = 0; v < m; ++v) {
    remaining[v] = in_degree(v);
  }
  std::priority_queue<NodeId, std::vector<NodeId>, std::greater<>> ready;
  const auto release = [&](NodeId v) {
    for (EdgeId e : out_edges(v)) {
      const NodeId w = m_dst[static_cast<std::size_t>(e)];
      if (--remaining[static_cast<std::size_t>(w)] == 0) {
        ready.push(w);
      }
    }
  };
  m_topo.assign(m_inputs.begin(), m_inputs.end());
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
    throw_cycle(remaining);
  }
  m_topo_pos.resize(m);
  for (std::size_t i = 0; i < m; ++i) {
    m_topo_pos[static_cast<std::size_t>(m_topo[i])] = static_cast<Index>(i);
  }
}

void Network::throw_cycle(const std::vector<Index>& remaining) const {
  // Every node left (remaining > 0) has an incoming edge from another node left: walk
  // backwards until a node repeats; the repeated stretch is a cycle.
  const auto& names = m_nodes.names();
  std::vector<Index> seen_at(names.size(), -1);
  NodeId v = 0;
  while (remaining[static_cast<std::size_t>(v)] == 0) {
    ++v;
  }
  std::vector<NodeId> walk;
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
    v = m_src[static_cast<std::size_t>(back)];
  }
  // walk[k..] reversed is the cycle in edge direction: v -> ... -> walk[k].
  const auto k = static_cast<std::size_t>(seen_at[static_cast<std::size_t>(v)]);
  std::vector<NodeId> cycle(walk.begin() + static_cast<std::ptrdiff_t>(k), walk.end());
  std::reverse(cycle.begin(), cycle.end());
  // Start the listing at the smallest node for a stable message; the closing edge goes from
  // the last listed node back to the first.
  const auto first = std::min_element(cycle.begin(), cycle.end()) - cycle.begin();
  std::rotate(cycle.begin(), cycle.begin() + first, cycle.end());
  std::string text;
  for (NodeId c : cycle) {
    text += printable(names[static_cast<std::size_t>(c)]) + " -> ";
  }
  text += printable(names[static_cast<std::size_t>(cycle.front())]);
  EdgeId closing = -1;
  for (EdgeId e : out_edges(cycle.back())) {
    if (m_dst[static_cast<std::size_t>(e)] == cycle.front()) {
      closing = e;
      break;
    }
  }
  throw NetworkError(fmt::format("edge {} ({} -> {}) closes a cycle: {}", closing,
                                 printable(names[static_cast<std::size_t>(cycle.back())]),
                                 printable(names[static_cast<std::size_t>(cycle.front())]), text));
}

void Network::check_weights(const NetworkSpec& spec) const {
  if (!spec.weights) {
    return;
  }
  const std::vector<double>& w = *spec.weights;
  if (w.size() != static_cast<std::size_t>(m_num_params)) {
    throw NetworkError(fmt::format("weights has {} entries but the network has {} {}", w.size(),
                                   m_num_params, m_params ? "parameters" : "edges"));
  }
  for (std::size_t k = 0; k < w.size(); ++k) {
    if (!std::isfinite(w[k])) {
      throw NetworkError(fmt::format("weight {} ({}) is not finite: {}", k,
                                     param_label(static_cast<Index>(k)), w[k]));
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
  s.node_names = m_nodes.names();
  s.edges.reserve(m_src.size());
  for (std::size_t e = 0; e < m_src.size(); ++e) {
    s.edges.emplace_back(m_src[e], m_dst[e]);
  }
  for (std::size_t v = 0; v < m_nodes.names().size(); ++v) {
    const auto id = static_cast<NodeId>(v);
    if (m_designated[v] != 0) {
      s.outputs.push_back(id);
    }
    if (m_designated_input[v] != 0) {
      s.inputs.push_back(id);
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
  if (m_params) {
    s.edge_params = m_params->edge_params;
    s.fixed_weights = m_params->fixed_weights;
    s.num_params = m_num_params;
  }
  return s;
}

namespace detail {

namespace {

/// The bits of a float type, for the finiteness test below.
template <class T>
struct FloatBits;
template <>
struct FloatBits<double> {
  using Word = std::uint64_t;
  static constexpr Word exponent = 0x7ff0000000000000ULL;
  static constexpr Word unit = 0x0010000000000000ULL;
};
template <>
struct FloatBits<float> {
  using Word = std::uint32_t;
  static constexpr Word exponent = 0x7f800000U;
  static constexpr Word unit = 0x00800000U;
};

/// Whether every value is finite. (bits & exponent mask) + one exponent unit carries into the
/// sign bit exactly when the exponent is all ones (inf or NaN): and, add, or on integer lanes
/// vectorise, where a loop of std::isfinite does not.
template <class T>
bool all_finite(std::span<const T> values) {
  using Bits = FloatBits<T>;
  typename Bits::Word bad = 0;
  for (const T x : values) {
    bad |= (std::bit_cast<typename Bits::Word>(x) & Bits::exponent) + Bits::unit;
  }
  return (bad >> (8 * sizeof(typename Bits::Word) - 1)) == 0;
}

}  // namespace

void check_parameter_count(std::size_t size, Index num_edges, std::string_view what,
                           std::string_view noun) {
  if (size != static_cast<std::size_t>(num_edges)) {
    throw std::invalid_argument(
        fmt::format("{} has {} entries but the network has {} {}", what, size, num_edges, noun));
  }
}

template <class T>
void check_parameters(std::span<const T> values, Index num_edges, const Network* net,
                      std::string_view what) {
  const bool per_edge = net == nullptr || net->one_parameter_per_edge();
  check_parameter_count(values.size(), num_edges, what, per_edge ? "edges" : "parameters");
  if (all_finite(values)) {
    return;
  }
  for (std::size_t e = 0; e < values.size(); ++e) {
    if (!std::isfinite(values[e])) {
      const double value = values[e];
      throw std::invalid_argument(net != nullptr
                                      ? fmt::format("{}[{}] ({}) is not finite: {}", what, e,
                                                    net->param_label(static_cast<Index>(e)), value)
                                      : fmt::format("{}[{}] is not finite: {}", what, e, value));
    }
  }
}

template void check_parameters(std::span<const double>, Index, const Network*, std::string_view);
template void check_parameters(std::span<const float>, Index, const Network*, std::string_view);

}  // namespace detail

void check_theta_size(const Network& net, std::size_t theta_size, std::string_view what) {
  detail::check_parameter_count(theta_size, net.num_params(), what,
                                net.one_parameter_per_edge() ? "edges" : "parameters");
}

void check_theta(const Network& net, std::span<const double> values, std::string_view what) {
  detail::check_parameters(values, net.num_params(), &net, what);
}

void check_theta(const Network& net, std::span<const float> values, std::string_view what) {
  detail::check_parameters(values, net.num_params(), &net, what);
}

}  // namespace pathlift
