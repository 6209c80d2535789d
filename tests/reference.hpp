#pragma once
// Independent references for the tests: brute-force path enumeration by plain recursion over
// the network's definition, the objects computed from it the naive way, the exact rank over Q
// (Bareiss), and the random networks the rank tests share.
// Deliberately simple and slow; the library must agree with it.

#include <cmath>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "pathlift/builtins.hpp"
#include "pathlift/network.hpp"

namespace pathlift::testing {

struct RefPath {
  std::vector<EdgeId> edges;  // walk order
  NodeId start;
  NodeId end;
};

/// Paths in canonical order: depth-first from the inputs in node order, outgoing edges by
/// increasing index, a path emitted at each output node reached (the walk continues past it).
inline void ref_walk(const Network& net, NodeId v, std::vector<EdgeId>& prefix, NodeId start,
                     std::vector<RefPath>& out) {
  for (EdgeId e = 0; e < net.num_edges(); ++e) {  // all edges, in index order
    if (net.source(e) != v) {
      continue;
    }
    prefix.push_back(e);
    const NodeId w = net.target(e);
    if (net.is_output(w)) {
      out.push_back({prefix, start, w});
    }
    ref_walk(net, w, prefix, start, out);
    prefix.pop_back();
  }
}

inline std::vector<RefPath> ref_paths(const Network& net) {
  std::vector<RefPath> out;
  for (NodeId v = 0; v < net.num_nodes(); ++v) {
    if (net.is_input(v)) {
      std::vector<EdgeId> prefix;
      ref_walk(net, v, prefix, v, out);
    }
  }
  return out;
}

/// Phi_p = product of the path's weights, left to right.
inline std::vector<double> ref_phi(const std::vector<RefPath>& paths,
                                   const std::vector<double>& theta) {
  std::vector<double> phi;
  for (const auto& p : paths) {
    double x = 1;
    for (EdgeId e : p.edges) {
      x *= theta[static_cast<std::size_t>(e)];
    }
    phi.push_back(x);
  }
  return phi;
}

/// Dense B (P x d), row-major.
inline std::vector<std::vector<double>> ref_skeleton(const std::vector<RefPath>& paths, Index d) {
  std::vector<std::vector<double>> b(paths.size(),
                                     std::vector<double>(static_cast<std::size_t>(d)));
  for (std::size_t p = 0; p < paths.size(); ++p) {
    for (EdgeId e : paths[p].edges) {
      b[p][static_cast<std::size_t>(e)] = 1;
    }
  }
  return b;
}

/// Dense dPhi: entry (p, k) = product of the path's other weights (definition, no division).
inline std::vector<std::vector<double>> ref_jacobian(const std::vector<RefPath>& paths, Index d,
                                                     const std::vector<double>& theta) {
  std::vector<std::vector<double>> j(paths.size(),
                                     std::vector<double>(static_cast<std::size_t>(d)));
  for (std::size_t p = 0; p < paths.size(); ++p) {
    const auto& edges = paths[p].edges;
    for (std::size_t i = 0; i < edges.size(); ++i) {
      double x = 1;
      for (std::size_t k = 0; k < edges.size(); ++k) {
        if (k != i) {
          x *= theta[static_cast<std::size_t>(edges[k])];
        }
      }
      j[p][static_cast<std::size_t>(edges[i])] = x;
    }
  }
  return j;
}

/// |a - b| <= tol * max(1, |a|, |b|).
__extension__ typedef __int128 Wide;  // NOLINT(modernize-use-using): __extension__ needs typedef

/// Exact rank over Q by fraction-free (Bareiss) elimination in 128-bit integers: the entries
/// stay minors of the input (Sylvester's identity); nullopt when one overflows.
inline std::optional<Index> bareiss_rank(const std::vector<std::vector<std::int64_t>>& in) {
  std::vector<std::vector<Wide>> a;
  a.reserve(in.size());
  for (const auto& row : in) {
    a.emplace_back(row.begin(), row.end());
  }
  const std::size_t rows = a.size();
  const std::size_t cols = rows == 0 ? 0 : a[0].size();
  std::size_t rank = 0;
  Wide prev = 1;
  for (std::size_t c = 0; c < cols && rank < rows; ++c) {
    std::size_t piv = rank;
    while (piv < rows && a[piv][c] == 0) {
      ++piv;
    }
    if (piv == rows) {
      continue;
    }
    std::swap(a[piv], a[rank]);
    for (std::size_t i = rank + 1; i < rows; ++i) {
      for (std::size_t j = c + 1; j < cols; ++j) {
        Wide x = 0;
        Wide y = 0;
        Wide z = 0;
        if (__builtin_mul_overflow(a[rank][c], a[i][j], &x) ||
            __builtin_mul_overflow(a[i][c], a[rank][j], &y) || __builtin_sub_overflow(x, y, &z)) {
          return std::nullopt;
        }
        a[i][j] = z / prev;  // exact division
      }
      a[i][c] = 0;
    }
    prev = a[rank][c];
    ++rank;
  }
  return static_cast<Index>(rank);
}

/// A random network among the random_dag() variants (parallel edges, designated outputs,
/// biases, shuffled node and edge order).
inline Network random_network(std::uint64_t seed) {
  const Index m = 2 + static_cast<Index>(seed % 9);
  const double p = 0.15 + 0.1 * static_cast<double>(seed % 7);
  RandomDagOptions opts;
  opts.parallel_edge_probability = (seed % 3 == 0) ? 0.0 : 0.2;
  opts.designated_output_probability = 0.25;
  return random_dag(m, p, seed, opts);
}

inline bool close(double a, double b, double tol) {
  return std::abs(a - b) <= tol * std::max({1.0, std::abs(a), std::abs(b)});
}

}  // namespace pathlift::testing
