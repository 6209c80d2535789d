#include "pathlift/kernel.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "pathlift/error.hpp"
#include "pathlift/limits.hpp"
#include "src/core/enum_names.hpp"
#include "src/core/json.hpp"
#include "src/core/parallel.hpp"
#include "src/core/progress.hpp"
#include "src/dp/dp_scaled.hpp"
#include "src/network/parameters.hpp"

namespace pathlift {

namespace {

using detail::DagView;
using detail::for_each_upper_pair;
using detail::parallel_for;
using detail::ProgressScope;
using detail::square_work_threads;

/// A (s = 2) forward sums from the inputs and B (s = 2) backward sums, scaled. During the
/// backward pass, visit(sums, gm, gk, i0, i1) is called once B(v) = gm 2^gk is final, for the
/// in-edges in_list[i0, i1) of v.
struct SquareSums {
  Buffer<double> fm, gm;
  Buffer<std::int64_t> fk, gk;
  bool forward_uniform = true;  ///< every forward exponent is 0
};

template <class Visit>
SquareSums square_sums(const DagView& g, const double* theta, Visit&& visit) {
  const auto n = static_cast<std::size_t>(g.n);
  SquareSums s;
  s.fm.resize(n);
  s.fk.resize(n);
  s.forward_uniform =
      detail::dp_forward_from_inputs(g, theta, detail::DpPow2{}, s.fm.data(), s.fk.data());
  s.gm.assign(n, 0.0);
  s.gk.assign(n, 0);
  detail::dp_backward(
      g, theta, detail::DpPow2{}, s.gm.data(), s.gk.data(),
      [&](NodeId /*v*/, double m, std::int64_t k, Index i0, Index i1) { visit(s, m, k, i0, i1); });
  return s;
}

/// The diagonal K[e,e] = A(src e) B(dst e) (into out when not null) and the trace: the sum over
/// the edges, or over those that carry a parameter when `edge_params` is given (a fixed edge's
/// term is no entry of K). theta here holds the edge weights (one per edge).
ScaledReal diagonal_pass(const Network& net, std::span<const double> theta, double* out,
                         const Index* edge_params = nullptr) {
  const DagView g(net);
  // Terms with exponent 0 go to plain sums, the others to (trace_m, trace_k). A zero term is
  // an exact zero here (products of normalised mantissas do not underflow).
  double t0 = 0;
  double t1 = 0;
  double trace_m = 0;
  std::int64_t trace_k = detail::dp_no_exponent;
  const EdgeId* in_list = g.in_list;
  const NodeId* src = g.src;
  square_sums(g, theta.data(),
              [&](const SquareSums& sq, double gm, std::int64_t gk, Index i0, Index i1) {
                const double* fm = sq.fm.data();
                if (sq.forward_uniform && gk == 0 && edge_params == nullptr) {
                  // Two partial sums: the trace's additions do not wait on each other.
                  Index i = i0;
                  for (; i + 1 < i1; i += 2) {
                    const EdgeId e0 = in_list[i];
                    const EdgeId e1 = in_list[i + 1];
                    const double x0 = fm[src[e0]] * gm;
                    const double x1 = fm[src[e1]] * gm;
                    t0 += x0;
                    t1 += x1;
                    if (out != nullptr) {
                      out[e0] = x0;
                      out[e1] = x1;
                    }
                  }
                  if (i < i1) {
                    const EdgeId e0 = in_list[i];
                    const double x0 = fm[src[e0]] * gm;
                    t0 += x0;
                    if (out != nullptr) {
                      out[e0] = x0;
                    }
                  }
                  return;
                }
                for (Index i = i0; i < i1; ++i) {
                  const EdgeId e = in_list[i];
                  const NodeId u = src[e];
                  const double x = fm[u] * gm;
                  const std::int64_t k = sq.fk[static_cast<std::size_t>(u)] + gk;
                  if (x != 0 && (edge_params == nullptr || edge_params[e] >= 0)) {
                    detail::dp_merge(trace_m, trace_k, x, k);
                  }
                  if (out != nullptr) {
                    out[e] = detail::dp_ldexp(x, k);
                  }
                }
              });
  if (t0 + t1 != 0) {
    detail::dp_merge(trace_m, trace_k, t0 + t1, 0);
  }
  ScaledReal r;
  if (trace_m != 0) {
    detail::dp_normalize(trace_m, trace_k, r.mantissa, r.exponent);
  }
  return r;
}

/// y * (m 2^k) for a finite double y.
ScaledReal scaled_product(double y, double m, std::int64_t k) {
  ScaledReal r;
  detail::dp_scale_by(y, m, k, r.mantissa, r.exponent);
  return r;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Diagonal and trace

Buffer<double> kernel_diagonal(const Network& net, std::span<const double> theta) {
  const auto& map = net.parameter_map();
  if (!map) {
    check_theta_size(net, theta.size());
    // A Buffer, not an Eigen vector: its pages are huge pages where available, so the first
    // write to 80 MB of output costs tens of page faults, not tens of thousands.
    Buffer<double> out(static_cast<std::size_t>(net.num_edges()));
    diagonal_pass(net, theta, out.data());
    return out;
  }
  // Per parameter: K[k,k] = sum_p (sum over the edges e of p that carry k of dPhi_p/dw_e)^2.
  // When no path carries k twice, the cross terms vanish and K[k,k] is the sum of the edge
  // diagonals of its edges; for the parameters the test cannot clear, K[k,k] = e_k^T K e_k.
  check_theta(net, theta);
  const detail::EdgeTheta<double> w(map.get(), theta);
  Buffer<double> edge_diag(static_cast<std::size_t>(net.num_edges()));
  diagonal_pass(net, w.span(), edge_diag.data());
  Buffer<double> out(static_cast<std::size_t>(net.num_params()));
  detail::gather_sum(*map, edge_diag.data(), out.data());
  const std::vector<Index> repeated = detail::params_maybe_repeated(net);
  if (!repeated.empty()) {
    const KernelOperator op(net, theta);
    std::vector<double> unit(static_cast<std::size_t>(net.num_params()), 0.0);
    std::vector<double> column(unit.size());
    for (const Index k : repeated) {
      unit[static_cast<std::size_t>(k)] = 1;
      op.apply(unit.data(), column.data());
      out[static_cast<std::size_t>(k)] = column[static_cast<std::size_t>(k)];
      unit[static_cast<std::size_t>(k)] = 0;
    }
  }
  return out;
}

ScaledReal kernel_trace(const Network& net, std::span<const double> theta) {
  const auto& map = net.parameter_map();
  if (!map) {
    check_theta_size(net, theta.size());
    return diagonal_pass(net, theta, nullptr);
  }
  check_theta(net, theta);
  if (detail::params_maybe_repeated(net).empty()) {
    // No path carries a parameter twice: the trace is the sum of the edge diagonals, scaled
    // (right beyond float64, a fixed weight of 1e300 squared included).
    const detail::EdgeTheta<double> w(map.get(), theta);
    return diagonal_pass(net, w.span(), nullptr, map->edge_params.data());
  }
  const Buffer<double> diag = kernel_diagonal(net, theta);
  double t = 0;
  for (const double x : diag) {
    t += x;
  }
  if (!std::isfinite(t)) {
    throw RangeError(
        "trace(K) overflows float64, and with parameters repeated along a path (the cross terms "
        "of K[k, k]) its magnitude is not computed: scale theta down");
  }
  return ScaledReal::from_double(t);
}

// ---------------------------------------------------------------------------------------------
// K v

struct KernelOperator::State {
  DagView g;
  Buffer<double> a, c, b, e;
  Buffer<std::int64_t> ka, kc, kb, ke;
  // With parameters distinct from edges: K = M^T K_edge M (M: edges x parameters).
  std::vector<double> w;  // the edge weights
  std::vector<double> v_edge, out_edge;

  explicit State(const Network& net) : g(net) {
    const auto n = static_cast<std::size_t>(net.num_nodes());
    for (auto* x : {&a, &c, &b, &e}) {
      x->resize(n);
    }
    for (auto* x : {&ka, &kc, &kb, &ke}) {
      x->resize(n);
    }
  }
};

KernelOperator::KernelOperator(const Network& net, std::span<const double> theta)
    : m_net(&net), m_theta(theta), m_state(std::make_unique<State>(net)) {
  check_theta(net, theta);
  if (const auto& map = net.parameter_map()) {
    m_state->w = map->edge_weights(theta);
    m_state->v_edge.resize(m_state->w.size());
    m_state->out_edge.resize(m_state->w.size());
    m_theta = m_state->w;
  }
}

KernelOperator::KernelOperator(KernelOperator&&) noexcept = default;
KernelOperator::~KernelOperator() = default;

Index KernelOperator::size() const {
  return m_net->num_params();
}

void KernelOperator::apply(const double* v, double* out) const {
  State& s = *m_state;
  if (const auto& map = m_net->parameter_map()) {
    const std::vector<double> ve =
        detail::spread(*map, {v, static_cast<std::size_t>(map->num_params)});
    apply_edges(ve.data(), s.out_edge.data());
    detail::gather_sum(*map, s.out_edge.data(), out);
    return;
  }
  apply_edges(v, out);
}

void KernelOperator::apply(const double* v, double* out, Index k) const {
  const Index d = size();
  for (Index j = 0; j < k; ++j) {
    apply(v + j * d, out + j * d);
  }
}

void KernelOperator::apply_edges(const double* v, double* out) const {
  State& s = *m_state;
  const double* theta = m_theta.data();
  const bool uniform =
      detail::dp_forward_pair(s.g, theta, v, s.a.data(), s.ka.data(), s.c.data(), s.kc.data());
  std::fill(s.b.begin(), s.b.end(), 0.0);
  std::fill(s.e.begin(), s.e.end(), 0.0);
  std::fill(s.kb.begin(), s.kb.end(), 0);
  std::fill(s.ke.begin(), s.ke.end(), 0);
  const double* a = s.a.data();
  const double* c = s.c.data();
  const std::int64_t* ka = s.ka.data();
  const std::int64_t* kc = s.kc.data();
  // (K v)_x = theta_x C(u) B(w) + v_x A(u) B(w) + theta_x A(u) E(w) for x = (u -> w).
  const EdgeId* in_list = s.g.in_list;
  const NodeId* src = s.g.src;
  const double* __restrict vv = v;
  double* __restrict oo = out;
  detail::dp_backward_pair(
      s.g, theta, v, s.b.data(), s.kb.data(), s.e.data(), s.ke.data(), uniform,
      [a, c, vv, oo](EdgeId x, NodeId u, double t, double /*tv*/, double gb, double ge) {
        oo[x] = t * (c[u] * gb + a[u] * ge) + vv[x] * (a[u] * gb);
      },
      [&](double gb, std::int64_t gkb, double ge, std::int64_t gke, Index i0, Index i1) {
        for (Index i = i0; i < i1; ++i) {
          const EdgeId x = in_list[i];
          const NodeId u = src[x];
          // Exponents of theta and v split off so that no product overflows on the way.
          int te = 0;
          int ve = 0;
          const double tm = std::frexp(theta[x], &te);
          const double vm = std::frexp(v[x], &ve);
          out[x] = detail::dp_ldexp(tm * c[u] * gb, te + kc[u] + gkb) +
                   detail::dp_ldexp(vm * a[u] * gb, ve + ka[u] + gkb) +
                   detail::dp_ldexp(tm * a[u] * ge, te + ka[u] + gke);
        }
      });
}

Eigen::VectorXd kernel_matvec(const Network& net, std::span<const double> theta,
                              std::span<const double> v) {
  const KernelOperator op(net, theta);
  check_theta(net, v, "v");
  Eigen::VectorXd out(net.num_params());
  op.apply(v.data(), out.data());
  return out;
}

Eigen::MatrixXd kernel_matmat(const Network& net, std::span<const double> theta,
                              const Eigen::MatrixXd& v) {
  const KernelOperator op(net, theta);
  if (v.rows() != net.num_params()) {
    throw std::invalid_argument(fmt::format("V has {} rows; the network has d = {} parameters",
                                            v.rows(), net.num_params()));
  }
  for (Index j = 0; j < v.cols(); ++j) {
    check_theta(net, {v.col(j).data(), static_cast<std::size_t>(v.rows())},
                fmt::format("column {} of V", j));
  }
  Eigen::MatrixXd out(v.rows(), v.cols());
  op.apply(v.data(), out.data(), v.cols());
  return out;
}

// ---------------------------------------------------------------------------------------------
// The full kernel

void require_kernel_fits(Index d, std::size_t max_memory) {
  require_dense(d, d, sizeof(double), max_memory,
                "the full path kernel K (its diagonal, K v and its top eigenvalues need no d x d "
                "matrix)");
}

DenseMatrix kernel(const Network& net, std::span<const double> theta,
                   const EngineOptions& options) {
  check_theta(net, theta);
  const Index d = net.num_params();
  require_kernel_fits(d, options.max_memory);
  if (net.parameter_map()) {
    // K = M^T K_edge M column by column: K e_k, one O(m + edges) product each.
    const KernelOperator op(net, theta);
    const auto report = detail::phase_callback(options.progress, "the path kernel K");
    DenseMatrix k(d, d);
    std::vector<double> unit(static_cast<std::size_t>(d), 0.0);
    std::vector<double> column(static_cast<std::size_t>(d));
    for (Index j = 0; j < d; ++j) {
      if (report) {
        report(static_cast<double>(j) / static_cast<double>(d));
      }
      unit[static_cast<std::size_t>(j)] = 1;
      op.apply(unit.data(), column.data());
      unit[static_cast<std::size_t>(j)] = 0;
      for (Index i = 0; i < d; ++i) {
        k(i, j) = column[static_cast<std::size_t>(i)];
      }
    }
    if (report) {
      report(1.0);
    }
    return k;
  }
  // The rows are computed in parallel tasks: the extent is shown as unknown.
  const ProgressScope progress(options.progress, "the path kernel K");
  const DagView g(net);
  const double* th = theta.data();
  const SquareSums sq =
      square_sums(g, th, [](const SquareSums&, double, std::int64_t, Index, Index) {});

  // tb_j = theta_j B(dst j), the right factor of every entry of column j.
  Buffer<double> tbm(static_cast<std::size_t>(d));
  Buffer<std::int64_t> tbk(static_cast<std::size_t>(d));
  for (Index j = 0; j < d; ++j) {
    const auto y = static_cast<std::size_t>(g.dst[j]);
    detail::dp_scale_by(th[j], sq.gm[y], sq.gk[y], tbm[static_cast<std::size_t>(j)],
                        tbk[static_cast<std::size_t>(j)]);
  }

  // Not zeroed: every edge enters exactly one non-input node, so each row is written once, in
  // full, by the task of that node (first touch on the thread that computes it).
  DenseMatrix k(d, d);
  double* kd = k.data();
  const auto n = static_cast<std::size_t>(g.n);
  // Row i (edge i into x) gets K[i, j] = theta_i A(src i) * M(x, src j) * tb_j for the edges
  // j after i; K[j, i] is filled from it below by symmetry.
  struct RowBody {
    const DagView* g;
    const double* th;
    const SquareSums* sq;
    const Buffer<double>* tbm;
    const Buffer<std::int64_t>* tbk;
    double* kd;
    Index d;
    std::size_t n;
    Buffer<double> mm, rm;
    Buffer<std::int64_t> mk, rk;

    void init() {
      mm.resize(n);
      mk.resize(n);
      rm.resize(static_cast<std::size_t>(d));
      rk.resize(static_cast<std::size_t>(d));
    }
    void operator()(Index offset) {
      const Index pos = g->num_inputs + offset;
      const NodeId x = g->topo[pos];
      std::fill(mm.begin(), mm.end(), 0.0);
      std::fill(mk.begin(), mk.end(), 0);
      mm[static_cast<std::size_t>(x)] = 1;
      detail::dp_forward(*g, th, detail::DpPow2{}, pos + 1, mm.data(), mk.data());
      for (Index j = 0; j < d; ++j) {
        const auto sj = static_cast<std::size_t>(g->src[j]);
        const auto jj = static_cast<std::size_t>(j);
        rm[jj] = mm[sj] * (*tbm)[jj];
        rk[jj] = mk[sj] + (*tbk)[jj];
      }
      const auto xi = static_cast<std::size_t>(x);
      for (Index t = g->in_off[x]; t < g->in_off[x + 1]; ++t) {
        const EdgeId i = g->in_list[t];
        const auto u = static_cast<std::size_t>(g->src[i]);
        const ScaledReal ci = scaled_product(th[i], sq->fm[u], sq->fk[u]);
        double* row = kd + static_cast<std::size_t>(i) * static_cast<std::size_t>(d);
        for (Index j = 0; j < d; ++j) {
          const auto jj = static_cast<std::size_t>(j);
          const double y = ci.mantissa * rm[jj];
          const std::int64_t s = ci.exponent + rk[jj];
          row[j] = s == 0 ? y : detail::dp_ldexp(y, s);
        }
        row[i] = detail::dp_ldexp(sq->fm[u] * sq->gm[xi], sq->fk[u] + sq->gk[xi]);
      }
    }
  };
  RowBody body{&g, th, &sq, &tbm, &tbk, kd, d, n, {}, {}, {}, {}};
  const int threads = square_work_threads(d, options);
  parallel_for(g.n - g.num_inputs, threads, body);

  // Symmetrise: exactly one of K[i, j], K[j, i] was written (a DAG orders i and j at most one
  // way), the other is 0.
  for_each_upper_pair(d, threads, [&](Index i, Index j) {
    const double s = k(i, j) + k(j, i);
    k(i, j) = s;
    k(j, i) = s;
  });
  return k;
}

}  // namespace pathlift
