#pragma once
// Parameters distinct from edges (docs/conventions.md#parameters): every path object is first
// computed per edge, at the edge weights w_e = theta[param(e)] (or the fixed weight), then its
// columns are gathered per parameter: column k of B or dPhi is the sum of the columns of the
// edges that carry k (the chain rule), fixed edges dropping out. For a network with one
// parameter per edge (map == nullptr) both steps are the identity and cost nothing.

#include <memory>
#include <span>
#include <vector>

#include "pathlift/network.hpp"
#include "pathlift/sparse.hpp"
#include "pathlift/types.hpp"

namespace pathlift::detail {

/// w_e = theta[param(e)], or the fixed weight, for every edge: into `out` (edges entries),
/// in parallel over large networks.
void expand_weights(const ParameterMap& map, const double* theta, double* out);
void expand_weights(const ParameterMap& map, const float* theta, float* out);

/// The edge weights at theta: theta itself (no copy) without a map, else expanded into a
/// Buffer (no zero-fill; large blocks are recycled, so a loop pays the page faults once).
template <class T>
class EdgeTheta {
 public:
  EdgeTheta(const ParameterMap* map, std::span<const T> theta) {
    if (map == nullptr) {
      m_span = theta;
    } else {
      m_storage.resize(map->edge_params.size());
      expand_weights(*map, theta.data(), m_storage.data());
      m_span = {m_storage.data(), m_storage.size()};
    }
  }
  [[nodiscard]] std::span<const T> span() const { return m_span; }
  [[nodiscard]] const T* data() const { return m_span.data(); }

 private:
  Buffer<T> m_storage;
  std::span<const T> m_span;
};

/// B per parameter from B per edge: each row's edges replaced by their parameters (fixed
/// edges dropped), sorted. Throws NetworkError when a path carries one parameter on two of
/// its edges (B would have an entry 2, which a pattern cannot hold), naming both edges.
CsrPattern gather_pattern(const Network* net, const ParameterMap& map, const CsrPattern& b,
                          int threads);

/// dPhi per parameter from dPhi per edge: entries of the edges that carry the same parameter
/// summed, fixed edges dropped, each row sorted by parameter.
template <class T>
CsrMatrix<T> gather_columns(const ParameterMap& map, const CsrMatrix<T>& m, int threads);

/// v per edge from v per parameter (fixed edges get 0): the M v of K = M^T K_edge M.
std::vector<double> spread(const ParameterMap& map, std::span<const double> v);
/// The per-parameter sum of a per-edge vector: M^T u.
void gather_sum(const ParameterMap& map, const double* u, double* out);

/// Whether no path carries any parameter twice, by a sufficient test: for each parameter,
/// the sources of its edges all have the same longest-path depth (a path through two edges of
/// it would reach the second source deeper than the first). Parameters that fail the test are
/// returned (empty: the test passed for all); for them the diagonal needs K e_k.
std::vector<Index> params_maybe_repeated(const Network& net);

}  // namespace pathlift::detail
