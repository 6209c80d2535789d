#include "src/rank/detail/proof_context.hpp"

#include <fmt/format.h>

#include <utility>

#include "pathlift/error.hpp"
#include "pathlift/lifting.hpp"

namespace pathlift::detail::proof {

std::string sequence_key(std::span<const EdgeId> edges) {
  return {reinterpret_cast<const char*>(edges.data()), edges.size() * sizeof(EdgeId)};
}

StepContext::StepContext(Network n, const EngineOptions& engine, std::uint64_t prime)
    : net(std::move(n)), paths(enumerate_paths(net, engine)), b(skeleton(paths, engine)) {
  m_by_sequence.reserve(static_cast<std::size_t>(paths.size()));
  for (Index p = 0; p < paths.size(); ++p) {
    m_by_sequence.emplace(sequence_key(paths.path(p)), p);
  }
  m_rank_options.prime = prime;
  m_rank_options.method = RankMethod::skeleton;
  m_rank_options.engine.threads = engine.threads;
  m_rank_options.engine.max_memory = engine.max_memory;
}

Index StepContext::find(std::span<const EdgeId> edges) const {
  const auto it = m_by_sequence.find(sequence_key(edges));
  return it == m_by_sequence.end() ? -1 : it->second;
}

Index StepContext::prefix(Index p) const {
  const auto edges = paths.path(p);
  return edges.size() < 2 ? -1 : find(edges.first(edges.size() - 1));
}

bool StepContext::crosses(Index p, NodeId v) const {
  for (const EdgeId e : paths.path(p)) {
    if (net.target(e) == v) {
      return true;
    }
  }
  return false;
}

bool StepContext::crosses_not_ending(Index p, NodeId v) const {
  const auto edges = paths.path(p);
  for (std::size_t i = 0; i + 1 < edges.size(); ++i) {
    if (net.target(edges[i]) == v) {
      return true;
    }
  }
  return false;
}

std::string StepContext::describe_path(Index p) const {
  if (p < 0 || p >= size()) {
    return fmt::format("path {}", p);
  }
  const auto edges = paths.path(p);
  std::string nodes = printable(net.node_name(net.source(edges.front())));
  std::string ids;
  for (const EdgeId e : edges) {
    nodes += " -> " + printable(net.node_name(net.target(e)));
    ids += fmt::format("{}{}", ids.empty() ? "" : " ", e);
  }
  return fmt::format("path {} ({}; edges {})", p, nodes, ids);
}

std::string StepContext::describe_edge(EdgeId e) const {
  if (e < 0 || e >= net.num_edges()) {
    return fmt::format("edge {}", e);
  }
  return fmt::format("edge {} ({})", e, net.edge_label(e));
}

const RankCertificate& StepContext::certificate() const {
  if (!m_certificate) {
    m_certificate = certify_rank(net, b, m_rank_options);
  }
  return *m_certificate;
}

}  // namespace pathlift::detail::proof
