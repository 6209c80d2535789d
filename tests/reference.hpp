#pragma once
// Independent references for the tests: brute-force path enumeration by plain recursion over
// the network's definition (MATH.md), and the objects computed from it the naive way.
// Deliberately simple and slow; the library must agree with it.

#include <cmath>
#include <vector>

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
inline bool close(double a, double b, double tol) {
  return std::abs(a - b) <= tol * std::max({1.0, std::abs(a), std::abs(b)});
}

}  // namespace pathlift::testing
