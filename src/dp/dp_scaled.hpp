#pragma once
// Path sums by dynamic programming over the DAG (DagView) with one binary exponent per node,
// shared by the path-norms and the path kernel (norms.cpp, kernel.cpp): the scaled-double ring
// of dag_dp.hpp, with loops of its own because the exponents are aligned only where not 0.
//
// A node value is m * 2^k with m = 0 or 2^-256 <= |m| <= 2^256 (dp_normalize). Nodes are
// renormalised only when they leave that range, so in the common case every exponent is 0 and
// the inner loops are plain double multiply-adds over contiguous edge arrays: "uniform" mode,
// no exponent is read. Once some exponent is not 0, the loops compare each source's exponent
// with the node's (a predictable branch) and align the rare mismatches with ldexp.
//
// Why the result stays right without per-edge care: weights |theta|^s are finite doubles (else
// the sum is inf/NaN and the node is recomputed), and a node whose fast sum is below 2^-600
// (zero included) or not finite is recomputed term by term with exact (mantissa, exponent)
// weights ("careful" path). Above 2^-600, a term lost to underflow is below 2^256 * 2^-1074,
// a relative error under 2^-218 per term. Sums of non-negative terms do not cancel.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "pathlift/network.hpp"
#include "src/core/scaled_arith.hpp"
#include "src/network/dag.hpp"

namespace pathlift::detail {

// Edge weights w(theta) = |theta|^s: fast() as a double (may overflow or underflow: the
// careful path catches it), exact() as mantissa * 2^exponent with the mantissa in [0.25, 2),
// returning false for a zero weight.
struct DpPow0 {
  static double fast(double /*t*/) { return 1.0; }
  static bool exact(double /*t*/, double& m, std::int64_t& k) {
    m = 1.0;
    k = 0;
    return true;
  }
};
struct DpPow1 {
  static double fast(double t) { return std::fabs(t); }
  static bool exact(double t, double& m, std::int64_t& k) {
    if (t == 0) {
      return false;
    }
    int e = 0;
    m = std::frexp(std::fabs(t), &e);
    k = e;
    return true;
  }
};
struct DpPow2 {
  static double fast(double t) { return t * t; }
  static bool exact(double t, double& m, std::int64_t& k) {
    if (t == 0) {
      return false;
    }
    int e = 0;
    const double f = std::frexp(t, &e);
    m = f * f;
    k = 2 * static_cast<std::int64_t>(e);
    return true;
  }
};
struct DpPowS {
  double s;
  [[nodiscard]] double fast(double t) const { return std::pow(std::fabs(t), s); }
  bool exact(double t, double& m, std::int64_t& k) const {
    if (t == 0) {
      return false;
    }
    const double l = s * std::log2(std::fabs(t));
    const double fl = std::floor(l);
    m = std::exp2(l - fl);
    k = static_cast<std::int64_t>(fl);
    return true;
  }
};

[[noreturn]] inline void dp_throw_not_finite(const Network& net, const char* what, EdgeId e,
                                             double value) {
  throw std::invalid_argument(
      fmt::format("{}[{}] (edge {}) is not finite: {}", what, e, net.edge_label(e), value));
}
[[noreturn]] inline void dp_throw_not_finite(const DagView& g, const char* what, EdgeId e,
                                             double value) {
  dp_throw_not_finite(*g.net, what, e, value);
}

/// Recomputes node v of a sum over its edges on one side with exact (mantissa, exponent)
/// weights: sum over the edges x = (v, y) of w(theta_x) (m, k)[y], plus 1 when `one` (an output
/// in a backward sum). `off`/`list` are that side's edge lists (in-edges for a forward sum,
/// out-edges for a backward one), `far` the far end of an edge. When every term is 0, v gets
/// m = 0 with exponent `empty_k`. Throws for a non-finite theta_x.
template <class W>
void dp_careful(const DagView& g, const Index* off, const EdgeId* list, const NodeId* far,
                const double* theta, const W& w, NodeId v, bool one, std::int64_t empty_k,
                double* m, std::int64_t* k) {
  const Index b = off[v];
  const Index end = off[v + 1];
  std::int64_t kmax = one ? 0 : std::numeric_limits<std::int64_t>::min();
  for (Index i = b; i < end; ++i) {
    const EdgeId e = list[i];
    const NodeId y = far[e];
    if (!std::isfinite(theta[e])) {
      dp_throw_not_finite(g, "theta", e, theta[e]);
    }
    double wm = 0;
    std::int64_t wk = 0;
    if (m[y] != 0 && w.exact(theta[e], wm, wk)) {
      kmax = std::max(kmax, k[y] + wk);
    }
  }
  if (kmax == std::numeric_limits<std::int64_t>::min()) {
    m[v] = 0;
    k[v] = empty_k;
    return;
  }
  double acc = one ? dp_ldexp(1.0, -kmax) : 0.0;
  for (Index i = b; i < end; ++i) {
    const EdgeId e = list[i];
    const NodeId y = far[e];
    double wm = 0;
    std::int64_t wk = 0;
    if (m[y] != 0 && w.exact(theta[e], wm, wk)) {
      acc += dp_ldexp(m[y] * wm, k[y] + wk - kmax);
    }
  }
  dp_normalize(acc, kmax, m[v], k[v]);
}

/// Recomputes node v of a forward sum from its in-edges with exact weights (v has in-edges;
/// when every term is 0 it keeps the exponent of its first source).
template <class W>
void dp_forward_careful(const DagView& g, const double* theta, const W& w, NodeId v, double* m,
                        std::int64_t* k) {
  dp_careful(g, g.in_off, g.in_list, g.src, theta, w, v, false, k[g.src[g.in_list[g.in_off[v]]]], m,
             k);
}

/// Recomputes node v of a backward sum from its out-edges (final values) with exact weights.
template <class W>
void dp_backward_careful(const DagView& g, const double* theta, const W& w, NodeId v, double* m,
                         std::int64_t* k) {
  dp_careful(g, g.out_off, g.out_list, g.dst, theta, w, v,
             g.is_output[static_cast<std::size_t>(v)] != 0, 0, m, k);
}

/// Forward sums F(v) = sum_{e = (u -> v)} w(theta_e) F(u) for the nodes at topological
/// positions [first, n), from the values already in (m, k) at earlier positions, all of which
/// must have exponent 0. Returns true when every exponent computed is 0 (plain doubles).
/// Throws for a non-finite theta_e met on the way.
template <class W>
bool dp_forward(const DagView& g, const double* theta, const W& w, Index first, double* m,
                std::int64_t* k) {
  bool uniform = true;  // every exponent computed so far is 0
  for (Index pos = first; pos < g.n; ++pos) {
    const NodeId v = g.topo[pos];
    const auto [b, end] = g.in_range(v);
    double a0 = 0;
    double a1 = 0;
    std::int64_t kv = 0;
    bool suspect = false;
    if (uniform) {
      Index i = b;
      for (; i + 1 < end; i += 2) {
        const EdgeId e0 = g.in_list[i];
        const EdgeId e1 = g.in_list[i + 1];
        a0 += m[g.src[e0]] * w.fast(theta[e0]);
        a1 += m[g.src[e1]] * w.fast(theta[e1]);
      }
      if (i < end) {
        const EdgeId e0 = g.in_list[i];
        a0 += m[g.src[e0]] * w.fast(theta[e0]);
      }
    } else {
      kv = k[g.src[g.in_list[b]]];
      std::int64_t diff = 0;
      for (Index i = b; i < end; ++i) {
        const EdgeId e = g.in_list[i];
        const NodeId u = g.src[e];
        a0 += m[u] * w.fast(theta[e]);
        diff |= k[u] ^ kv;
      }
      suspect = diff != 0;
    }
    const double acc = a0 + a1;
    if (suspect || dp_suspect(acc)) {
      dp_forward_careful(g, theta, w, v, m, k);
    } else {
      dp_normalize(acc, kv, m[v], k[v]);
    }
    uniform = uniform && k[v] == 0;
  }
  return uniform;
}

/// Every input (bias included) gets the value x, exponent 0.
inline void dp_set_inputs(const DagView& g, double x, double* m, std::int64_t* k) {
  for (Index pos = 0; pos < g.num_inputs; ++pos) {
    const NodeId v = g.topo[pos];
    m[v] = x;
    k[v] = 0;
  }
}

/// The forward sums over partial paths from the inputs: every input (bias included) counts 1,
/// then dp_forward over the other nodes. Returns dp_forward's flag.
template <class W>
bool dp_forward_from_inputs(const DagView& g, const double* theta, const W& w, double* m,
                            std::int64_t* k) {
  dp_set_inputs(g, 1.0, m, k);
  return dp_forward(g, theta, w, g.num_inputs, m, k);
}

/// Makes v's backward sum final before its in-edges are scattered: its accumulator (m[v], k[v])
/// plus 1 when v is an output, normalized, or recomputed from v's out-edges when the
/// accumulation may have lost precision. Returns whether v has out-edges.
template <class W>
bool dp_backward_settle(const DagView& g, const double* theta, const W& w, NodeId v, double* m,
                        std::int64_t* k) {
  double acc = m[v];
  const std::int64_t kv = k[v];
  if (g.is_output[static_cast<std::size_t>(v)] != 0) {
    acc += dp_ldexp(1.0, -kv);
  }
  const auto [o0, o1] = g.out_range(v);
  const bool has_out = o1 > o0;
  if (has_out && dp_suspect(acc)) {
    dp_backward_careful(g, theta, w, v, m, k);
  } else {
    dp_normalize(acc, kv, m[v], k[v]);
  }
  return has_out;
}

/// Backward sums G(v) = [v output] + sum_{e = (v -> y)} w(theta_e) G(y) for every node, in
/// reverse topological order. Once G(v) is final, visit(v, G_m(v), G_k(v), i0, i1) is called
/// with v's in-edges at in_list[i0, i1) (it loops over them itself, so its loop can be tight),
/// then w(theta_e) G(v) is scattered into the accumulator of each source (in (m, k), which
/// must hold zeros on entry). Throws for a non-finite theta.
template <class W, class Visit>
void dp_backward(const DagView& g, const double* theta, const W& w, double* m, std::int64_t* k,
                 Visit&& visit) {
  bool merged = false;  // some accumulator exponent is not 0
  for (Index pos = g.n - 1; pos >= 0; --pos) {
    const NodeId v = g.topo[pos];
    dp_backward_settle(g, theta, w, v, m, k);
    if (pos < g.num_inputs) {
      continue;
    }
    const double gm = m[v];
    const std::int64_t gk = k[v];
    const auto [b, end] = g.in_range(v);
    visit(v, gm, gk, b, end);
    if (gk == 0 && !merged) {
      for (Index i = b; i < end; ++i) {
        const EdgeId e = g.in_list[i];
        m[g.src[e]] += gm * w.fast(theta[e]);
      }
    } else {
      for (Index i = b; i < end; ++i) {
        const EdgeId e = g.in_list[i];
        const NodeId u = g.src[e];
        const double term = gm * w.fast(theta[e]);
        if (k[u] == gk) {
          m[u] += term;
        } else {
          dp_merge(m[u], k[u], term, gk);
          merged = true;
        }
      }
    }
  }
}

// The (value, derivative) semiring of the kernel product K v: a node carries (A, C) forward,
// C(y) = sum_{e = (x -> y)} theta_e^2 C(x) + theta_e v_e A(x), or (B, E) backward. The value
// and the derivative each keep their own exponent: C / A grows like |v_e / theta_e|, which is
// unbounded. A's (B's) recurrence is the s = 2 path sum; C and E may cancel (signed terms).

/// (x 2^k) * y for any finite y, as a normalised (m, k): y's exponent is split off first, so the
/// product does not overflow on the way.
inline void dp_scale_by(double y, double m, std::int64_t k, double& om, std::int64_t& ok) {
  if (y == 0 || m == 0) {
    om = 0;
    ok = 0;
    return;
  }
  int e = 0;
  const double f = std::frexp(y, &e);
  dp_normalize(f * m, k + e, om, ok);
}

/// Recomputes a derivative at node v from its edges on one side, with exact (mantissa,
/// exponent) terms accumulated by dp_merge in one pass: sum over the edges x = (v, w) of
/// theta_x^2 d[w] + theta_x dir_x s[w], where (s, ks) are the pair sums and (d, kd) the
/// derivatives already final at the far ends w. `off`/`list` are the edge lists of that side
/// (in-edges for the forward pass, out-edges for the backward one), `far` the far end of an edge.
inline void dp_deriv_careful(const Index* off, const EdgeId* list, const NodeId* far,
                             const double* theta, const double* dir, NodeId v, const double* s,
                             const std::int64_t* ks, double* d, std::int64_t* kd) {
  double m = 0;
  std::int64_t k = dp_no_exponent;
  for (Index i = off[v]; i < off[v + 1]; ++i) {
    const EdgeId x = list[i];
    const NodeId w = far[x];
    if (theta[x] == 0) {
      continue;
    }
    int te = 0;
    const double tm = std::frexp(theta[x], &te);
    if (d[w] != 0) {
      dp_merge(m, k, d[w] * tm * tm, kd[w] + 2 * static_cast<std::int64_t>(te));
    }
    if (s[w] != 0 && dir[x] != 0) {
      int ve = 0;
      const double vm = std::frexp(dir[x], &ve);
      dp_merge(m, k, s[w] * tm * vm, ks[w] + te + ve);
    }
  }
  dp_normalize(m, m == 0 ? 0 : k, d[v], kd[v]);
}

/// Forward pair sums (A, C) at every node; inputs are (1, 0). Returns true when every
/// exponent is 0 (the values are plain doubles). Throws for a non-finite theta.
inline bool dp_forward_pair(const DagView& g, const double* theta, const double* dir, double* a,
                            std::int64_t* ka, double* c, std::int64_t* kc) {
  dp_set_inputs(g, 1.0, a, ka);
  dp_set_inputs(g, 0.0, c, kc);
  bool uniform = true;
  for (Index pos = g.num_inputs; pos < g.n; ++pos) {
    const NodeId v = g.topo[pos];
    const auto [b, end] = g.in_range(v);
    double acc = 0;
    double dacc = 0;
    std::int64_t kv = 0;
    std::int64_t diff = 0;
    // Edge e = (u -> v) adds theta_e^2 A(u) to sa and theta_e^2 C(u) + theta_e v_e A(u) to sc.
    const auto add_edge = [&](EdgeId e, double& sa, double& sc) {
      const NodeId u = g.src[e];
      const double t = theta[e];
      const double tt = t * t;
      sa += a[u] * tt;
      sc += c[u] * tt + a[u] * (t * dir[e]);
    };
    if (uniform) {
      // Two edges a step into separate sums: the additions do not wait on each other.
      double acc1 = 0;
      double dacc1 = 0;
      Index i = b;
      for (; i + 1 < end; i += 2) {
        add_edge(g.in_list[i], acc, dacc);
        add_edge(g.in_list[i + 1], acc1, dacc1);
      }
      if (i < end) {
        add_edge(g.in_list[i], acc, dacc);
      }
      acc += acc1;
      dacc += dacc1;
    } else {
      kv = ka[g.src[g.in_list[b]]];
      for (Index i = b; i < end; ++i) {
        const EdgeId e = g.in_list[i];
        add_edge(e, acc, dacc);
        const NodeId u = g.src[e];
        diff |= (ka[u] ^ kv) | (kc[u] ^ kv);
      }
    }
    if (diff != 0 || dp_suspect(acc)) {
      dp_forward_careful(g, theta, DpPow2{}, v, a, ka);
    } else {
      dp_normalize(acc, kv, a[v], ka[v]);
    }
    if (diff != 0 || dp_suspect(dacc)) {
      dp_deriv_careful(g.in_off, g.in_list, g.src, theta, dir, v, a, ka, c, kc);
    } else {
      dp_normalize(dacc, kv, c[v], kc[v]);
    }
    uniform = uniform && ka[v] == 0 && kc[v] == 0;
  }
  return uniform;
}

/// An in-edge x = (u -> v) of the backward pair DP: t = theta_x, tt = t^2 and tv = t v_x.
struct DpPairEdge {
  EdgeId x;
  NodeId u;
  double t;
  double tt;
  double tv;
};

/// Backward pair sums (B, E) for every node ((b, kb, e, ke) zero on entry). Once (B, E)(v) is
/// final, its in-edges in_list[i0, i1) are visited, then scattered into: when v's exponents
/// are 0 and `forward_uniform`, edge by edge in the scatter loop, fast(x, u, t, tv, B_m, E_m)
/// with t = theta_x and tv = theta_x v_x; otherwise visit(B_m, B_k, E_m, E_k, i0, i1).
template <class Fast, class Visit>
void dp_backward_pair(const DagView& g, const double* theta, const double* dir, double* b,
                      std::int64_t* kb, double* e, std::int64_t* ke, bool forward_uniform,
                      Fast&& fast, Visit&& visit) {
  bool merged = false;  // some accumulator exponent is not 0
  for (Index pos = g.n - 1; pos >= 0; --pos) {
    const NodeId v = g.topo[pos];
    const bool has_out = dp_backward_settle(g, theta, DpPow2{}, v, b, kb);
    if (has_out && dp_suspect(e[v])) {
      dp_deriv_careful(g.out_off, g.out_list, g.dst, theta, dir, v, b, kb, e, ke);
    } else {
      dp_normalize(e[v], ke[v], e[v], ke[v]);
    }
    if (pos < g.num_inputs) {
      continue;
    }
    const double gb = b[v];
    const std::int64_t gkb = kb[v];
    const double ge = e[v];
    const std::int64_t gke = ke[v];
    const auto [i0, i1] = g.in_range(v);
    const EdgeId* __restrict in_list = g.in_list;
    const NodeId* __restrict src = g.src;
    const double* __restrict th = theta;
    const double* __restrict vd = dir;
    double* __restrict bb = b;
    double* __restrict ee = e;
    // In-edge in_list[i]'s terms, for both scatter loops. The restrict pointers are captured by
    // copy: kernel.cpp's object code is then the same as with the terms written out in each loop
    // (by reference, registers and block layout moved).
    const auto edge_at = [=](Index i) -> DpPairEdge {
      const EdgeId x = in_list[i];
      const NodeId u = src[x];
      const double t = th[x];
      return {x, u, t, t * t, t * vd[x]};
    };
    if (gkb == 0 && gke == 0 && !merged && forward_uniform) {
      for (Index i = i0; i < i1; ++i) {
        const auto [x, u, t, tt, tv] = edge_at(i);
        fast(x, u, t, tv, gb, ge);
        bb[u] += gb * tt;
        ee[u] += ge * tt + gb * tv;
      }
      continue;
    }
    visit(gb, gkb, ge, gke, i0, i1);
    for (Index i = i0; i < i1; ++i) {
      const auto [x, u, t, tt, tv] = edge_at(i);
      if (kb[u] == gkb) {
        bb[u] += gb * tt;
      } else {
        dp_merge(bb[u], kb[u], gb * tt, gkb);
        merged = true;
      }
      if (ke[u] == gke && gke == gkb) {
        ee[u] += ge * tt + gb * tv;
      } else {
        dp_merge(ee[u], ke[u], ge * tt, gke);
        dp_merge(ee[u], ke[u], gb * tv, gkb);
        merged = true;
      }
    }
  }
}

}  // namespace pathlift::detail
