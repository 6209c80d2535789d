#pragma once
// Independent references for the tests: brute-force path enumeration by plain recursion over
// the network's definition, the objects computed from it the naive way, the forward pass by
// its definition, exact ranks over Q (Bareiss) and GF(2), and the random networks several
// tests share. Deliberately simple and slow; the library must agree with it.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "pathlift/builtins.hpp"
#include "pathlift/network.hpp"
#include "src/core/random.hpp"

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

// ---------------------------------------------------------------------------------------------
// The forward pass by its definition: v(input) = x (bias 1), v(n) = act_n(sum over all edges e
// with target n, by increasing index, of theta_e v(source e)), memoised recursion. Nothing of
// the library but the network's accessors.

/// The slope of node v's activation below 0: 1 for inputs and identity nodes.
inline double ref_negative_slope(const Network& net, NodeId v) {
  if (net.is_input(v)) {
    return 1.0;
  }
  const Activation& act = net.activation(v);
  return act.kind == ActivationKind::identity ? 1.0 : act.negative_slope;
}

/// The value of input node v on the sample x: x[c] for the c-th data input, 1 for a bias.
inline double ref_input_value(const Network& net, const double* x, NodeId v) {
  const auto inputs = net.data_inputs();
  for (std::size_t c = 0; c < inputs.size(); ++c) {
    if (inputs[c] == v) {
      return x[c];
    }
  }
  return 1.0;
}

/// Pre-activation and value of every node on one sample.
struct RefSample {
  std::vector<double> pre;
  std::vector<double> value;
};

inline double ref_value(const Network& net, const std::vector<double>& theta, const double* x,
                        NodeId v, RefSample& s, std::vector<char>& done) {
  const auto vi = static_cast<std::size_t>(v);
  if (done[vi] == 0) {
    double pre = 0;
    if (net.is_input(v)) {
      pre = ref_input_value(net, x, v);
    } else {
      for (EdgeId e = 0; e < net.num_edges(); ++e) {
        if (net.target(e) == v) {
          pre +=
              theta[static_cast<std::size_t>(e)] * ref_value(net, theta, x, net.source(e), s, done);
        }
      }
    }
    s.pre[vi] = pre;
    s.value[vi] = pre > 0 ? pre : ref_negative_slope(net, v) * pre;
    done[vi] = 1;
  }
  return s.value[vi];
}

/// The forward pass of one sample x (one entry per data input).
inline RefSample ref_forward(const Network& net, const std::vector<double>& theta,
                             const double* x) {
  const auto m = static_cast<std::size_t>(net.num_nodes());
  RefSample s{std::vector<double>(m), std::vector<double>(m)};
  std::vector<char> done(m, 0);
  for (NodeId v = 0; v < net.num_nodes(); ++v) {
    ref_value(net, theta, x, v, s, done);
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// Exact ranks.

/// Moves a row at or below row `rank` with a non-zero entry in column c up to row `rank`;
/// false when there is none (column c adds nothing to the rank).
template <class Matrix>
bool bring_pivot_up(Matrix& a, std::size_t rank, std::size_t c) {
  std::size_t piv = rank;
  while (piv < a.size() && a[piv][c] == 0) {
    ++piv;
  }
  if (piv == a.size()) {
    return false;
  }
  std::swap(a[piv], a[rank]);
  return true;
}

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
    if (!bring_pivot_up(a, rank, c)) {
      continue;
    }
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

/// Rank over GF(2) by plain elimination (entries taken mod 2).
inline Index rank_gf2(std::vector<std::vector<std::int64_t>> a) {
  for (auto& row : a) {
    for (auto& x : row) {
      x = ((x % 2) + 2) % 2;
    }
  }
  const std::size_t rows = a.size();
  const std::size_t cols = rows == 0 ? 0 : a[0].size();
  std::size_t rank = 0;
  for (std::size_t c = 0; c < cols && rank < rows; ++c) {
    if (!bring_pivot_up(a, rank, c)) {
      continue;
    }
    for (std::size_t i = 0; i < rows; ++i) {
      if (i != rank && a[i][c] != 0) {
        for (std::size_t j = 0; j < cols; ++j) {
          a[i][j] ^= a[rank][j];
        }
      }
    }
    ++rank;
  }
  return static_cast<Index>(rank);
}

// ---------------------------------------------------------------------------------------------
// Random networks.

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

/// How with_random_parameters draws: one edge in `fixed_one_in` fixed (a random weight in
/// {-1.25, ..., 1.75}, or, with `zero_fixed`, 0 one time in three), the others sharing
/// d = max(1, edges x d_num / d_den) parameters (some of which no edge may carry).
struct RandomParameters {
  std::uint64_t rng_seed = 0;
  std::uint64_t fixed_one_in = 5;
  Index d_num = 2;
  Index d_den = 3;
  bool zero_fixed = false;
};

/// A copy of `net` whose edges carry parameters from a random map (RandomParameters).
inline Network with_random_parameters(const Network& net, const RandomParameters& r) {
  detail::SplitMix64 rng(r.rng_seed);
  NetworkSpec s = net.spec();
  s.weights.reset();
  const auto ne = s.edges.size();
  s.edge_params.assign(ne, kFixedEdge);
  s.fixed_weights.assign(ne, 0.0);
  const Index d = std::max<Index>(1, static_cast<Index>(ne) * r.d_num / r.d_den);
  for (std::size_t e = 0; e < ne; ++e) {
    if (rng.next() % r.fixed_one_in == 0) {
      s.fixed_weights[e] = r.zero_fixed && rng.next() % 3 == 0
                               ? 0.0
                               : (static_cast<double>(rng.next() % 7) - 3.0) / 2.0 + 0.25;
    } else {
      s.edge_params[e] = static_cast<Index>(rng.next() % static_cast<std::uint64_t>(d));
    }
  }
  s.num_params = d;
  return Network(std::move(s));
}

/// A copy of `net` whose non-input nodes get random activations (ReLU, identity, leaky ReLU
/// with a random slope), outputs included.
inline Network with_random_activations(const Network& net, std::uint64_t seed) {
  NetworkSpec spec = net.spec();
  spec.activations.clear();
  std::uint64_t state = seed * 0x9E3779B97F4A7C15ULL + 1;
  const auto next = [&state] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  for (NodeId v = 0; v < net.num_nodes(); ++v) {
    if (net.is_input(v)) {
      continue;
    }
    switch (next() % 4) {
      case 0:
        spec.activations.emplace_back(v, Activation::identity());
        break;
      case 1:
        spec.activations.emplace_back(
            v, Activation::leaky_relu(static_cast<double>(next() % 1000) / 1000.0 - 0.3));
        break;
      default:
        spec.activations.emplace_back(v, Activation::relu());
    }
  }
  return Network(std::move(spec));
}

/// |a - b| <= tol * max(1, |a|, |b|).
inline bool close(double a, double b, double tol) {
  return std::abs(a - b) <= tol * std::max({1.0, std::abs(a), std::abs(b)});
}

}  // namespace pathlift::testing
