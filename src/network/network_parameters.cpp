// Network's parameters distinct from edges (docs/conventions.md#parameters) and max nodes:
// the parts of the constructor and the accessors that concern them.
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>

#include "pathlift/error.hpp"
#include "pathlift/network.hpp"

namespace pathlift {

void Network::assign_parameters(NetworkSpec& spec) {  // moves edge_params, fixed_weights
  const std::size_t d = m_src.size();
  if (spec.edge_params.empty()) {
    if (!spec.fixed_weights.empty()) {
      throw NetworkError("fixed_weights given without edge_params");
    }
    m_num_params = static_cast<Index>(d);
    return;
  }
  if (spec.edge_params.size() != d) {
    throw NetworkError(fmt::format("edge_params has {} entries but the network has {} edges",
                                   spec.edge_params.size(), d));
  }
  if (spec.fixed_weights.size() != d) {
    throw NetworkError(fmt::format("fixed_weights has {} entries but the network has {} edges",
                                   spec.fixed_weights.size(), d));
  }
  if (spec.num_params < 0 || spec.num_params > std::numeric_limits<EdgeId>::max()) {
    throw NetworkError(fmt::format("num_params is out of range: {}", spec.num_params));
  }
  // Edge e carrying parameter e, for every e, is one parameter per edge: kept as such (no map),
  // so that a version 2 description of a plain network is the plain network.
  bool identity = spec.num_params == static_cast<Index>(d);
  for (std::size_t e = 0; e < d && identity; ++e) {
    identity = spec.edge_params[e] == static_cast<Index>(e);
  }
  if (identity) {
    m_num_params = static_cast<Index>(d);
    return;
  }
  auto map = std::make_shared<ParameterMap>();
  map->num_params = spec.num_params;
  map->edge_params = std::move(spec.edge_params);
  map->fixed_weights = std::move(spec.fixed_weights);  // parameter edges' entries zeroed below
  for (std::size_t e = 0; e < d; ++e) {
    const Index k = map->edge_params[e];
    if (k == kFixedEdge) {
      if (!std::isfinite(map->fixed_weights[e])) {
        throw NetworkError(fmt::format("fixed weight of edge {} ({}) is not finite: {}", e,
                                       edge_label(static_cast<EdgeId>(e)), map->fixed_weights[e]));
      }
      continue;
    }
    map->fixed_weights[e] = 0.0;
    if (k < 0 || k >= map->num_params) {
      throw NetworkError(
          fmt::format("edge {} ({}) carries parameter {}, outside 0..{} (num_params is {})", e,
                      edge_label(static_cast<EdgeId>(e)), k, map->num_params - 1, map->num_params));
    }
  }
  // CSR of the edges of each parameter (fixed edges left out).
  const auto np = static_cast<std::size_t>(map->num_params);
  map->offsets.assign(np + 1, 0);
  for (const Index k : map->edge_params) {
    if (k >= 0) {
      ++map->offsets[static_cast<std::size_t>(k) + 1];
    }
  }
  for (std::size_t k = 0; k < np; ++k) {
    map->offsets[k + 1] += map->offsets[k];
  }
  map->edges.resize(static_cast<std::size_t>(map->offsets.back()));
  std::vector<Index> fill(map->offsets.begin(), map->offsets.end() - 1);
  for (std::size_t e = 0; e < d; ++e) {
    if (const Index k = map->edge_params[e]; k >= 0) {
      map->edges[static_cast<std::size_t>(fill[static_cast<std::size_t>(k)]++)] =
          static_cast<EdgeId>(e);
    }
  }
  m_num_params = map->num_params;
  m_params = std::move(map);
}

void Network::check_max_nodes() {
  for (std::size_t v = 0; v < m_act.size(); ++v) {
    if (m_act[v].kind != ActivationKind::max) {
      continue;
    }
    m_has_max = true;
    if (const Index in = m_in_offsets[v + 1] - m_in_offsets[v];
        m_act[v].order < 1 || m_act[v].order > in) {
      throw NetworkError(fmt::format(
          "max node '{}' takes the {}-th largest of its incoming edges but has {} of them",
          printable(m_nodes.names()[v]), m_act[v].order, in));
    }
    for (Index c = m_in_offsets[v]; c < m_in_offsets[v + 1]; ++c) {
      const EdgeId e = m_in_edges[static_cast<std::size_t>(c)];
      if (edge_param(e) != kFixedEdge) {
        throw NetworkError(fmt::format(
            "max node {} has an incoming edge {} ({}) that carries parameter {}: the incoming "
            "edges of a max node must be fixed",
            fmt::format("'{}'", printable(m_nodes.names()[v])), e, edge_label(e), edge_param(e)));
      }
    }
  }
}

std::span<const EdgeId> Network::param_edges(Index k) const {
  if (k < 0 || k >= m_num_params) {
    throw std::out_of_range(
        fmt::format("parameter {} does not exist (the network has {})", k, m_num_params));
  }
  if (!m_params) {
    throw std::logic_error("param_edges: the network has one parameter per edge (edge k is k)");
  }
  const auto i = static_cast<std::size_t>(k);
  return {m_params->edges.data() + m_params->offsets[i],
          static_cast<std::size_t>(m_params->offsets[i + 1] - m_params->offsets[i])};
}

namespace {
template <class T>
std::vector<T> expand_weights(const ParameterMap& map, std::span<const T> theta) {
  std::vector<T> w(map.edge_params.size());
  for (std::size_t e = 0; e < w.size(); ++e) {
    const Index k = map.edge_params[e];
    w[e] = k >= 0 ? theta[static_cast<std::size_t>(k)] : static_cast<T>(map.fixed_weights[e]);
  }
  return w;
}
}  // namespace

std::vector<double> ParameterMap::edge_weights(std::span<const double> theta) const {
  return expand_weights(*this, theta);
}
std::vector<float> ParameterMap::edge_weights(std::span<const float> theta) const {
  return expand_weights(*this, theta);
}

std::vector<double> Network::edge_weights(std::span<const double> theta) const {
  check_theta_size(*this, theta.size());
  if (!m_params) {
    return {theta.begin(), theta.end()};
  }
  return m_params->edge_weights(theta);
}

std::string Network::param_label(Index k) const {
  if (!m_params) {
    return fmt::format("edge {}", edge_label(static_cast<EdgeId>(k)));
  }
  const auto edges = param_edges(k);
  if (edges.empty()) {
    return fmt::format("parameter {} (no edge)", k);
  }
  if (edges.size() == 1) {
    return fmt::format("parameter {} (edge {})", k, edge_label(edges[0]));
  }
  if (edges.size() == 2) {
    return fmt::format("parameter {} (edges {} and {})", k, edge_label(edges[0]),
                       edge_label(edges[1]));
  }
  return fmt::format("parameter {} (edges {}, {} and {} more)", k, edge_label(edges[0]),
                     edge_label(edges[1]), edges.size() - 2);
}

}  // namespace pathlift
