#pragma once
// A step's network with what the proof reads from it, each built once: its paths, its
// skeleton B, the lookup of a path by its edges, and the certificate of rank(B).

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "pathlift/certificate.hpp"
#include "pathlift/network.hpp"
#include "pathlift/options.hpp"
#include "pathlift/paths.hpp"

namespace pathlift::detail::proof {

template <class V>
auto& at(V& v, Index i) {
  return v[static_cast<std::size_t>(i)];
}

/// Whether the edge set holds x.
inline bool contains(const std::vector<EdgeId>& set, EdgeId x) {
  return std::find(set.begin(), set.end(), x) != set.end();
}

/// The bytes of an edge sequence, as a hash key.
std::string sequence_key(std::span<const EdgeId> edges);

/// N_i with its paths (canonical order) and skeleton, enumerated under `engine`'s limits.
class StepContext {
 public:
  StepContext(Network n, const EngineOptions& engine, std::uint64_t prime);

  Network net;
  PathSet paths;
  CsrPattern b;

  [[nodiscard]] Index size() const { return paths.size(); }
  /// The path with these edges in walk order, or -1.
  [[nodiscard]] Index find(std::span<const EdgeId> edges) const;
  [[nodiscard]] EdgeId last_edge(Index p) const { return paths.path(p).back(); }
  /// The path with its last edge removed, if that is a path (-1 otherwise).
  [[nodiscard]] Index prefix(Index p) const;
  /// True when the path enters v.
  [[nodiscard]] bool crosses(Index p, NodeId v) const;
  /// True when the path passes through v without ending there.
  [[nodiscard]] bool crosses_not_ending(Index p, NodeId v) const;

  /// "path 4 (a -> u -> k; edges 0 2)", or "path 4" outside the paths.
  [[nodiscard]] std::string describe_path(Index p) const;
  /// "edge 2 (u -> k)", or "edge 2" outside the edges.
  [[nodiscard]] std::string describe_edge(EdgeId e) const;

  /// The certificate of rank(B) (method skeleton), computed on first use and then reused by
  /// every step and check that needs it.
  [[nodiscard]] const RankCertificate& certificate() const;

 private:
  std::unordered_map<std::string, Index> m_by_sequence;
  RankOptions m_rank_options;
  mutable std::optional<RankCertificate> m_certificate;
};

}  // namespace pathlift::detail::proof
