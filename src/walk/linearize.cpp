#include "pathlift/linearize.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <memory>
#include <vector>

#include "pathlift/counting.hpp"
#include "pathlift/error.hpp"
#include "pathlift/lifting.hpp"
#include "pathlift/limits.hpp"
#include "src/core/enum_names.hpp"
#include "src/core/json.hpp"
#include "src/core/parallel.hpp"
#include "src/core/progress.hpp"
#include "src/core/random.hpp"
#include "src/walk/detail/lin_common.hpp"
#include "src/walk/detail/lin_walk.hpp"

namespace pathlift {

namespace {

// Below this many entries of L, the checks' loops run on the calling thread.
constexpr Index k_parallel_entries = 1 << 16;

/// Reports the fraction of samples done from thread 0.
class SampleProgress {
 public:
  SampleProgress(const std::function<void(double)>& progress, Index n)
      : m_progress(progress), m_total(static_cast<double>(std::max<Index>(n, 1))) {}
  void done_one() {
    const Index now = m_done.fetch_add(1, std::memory_order_relaxed) + 1;
    if (m_progress && omp_get_thread_num() == 0) {
      const double fraction = static_cast<double>(now) / m_total;
      if (fraction - m_reported >= 0.01) {
        m_reported = fraction;
        m_progress(fraction);
      }
    }
  }
  void finish() const {
    if (m_progress) {
      m_progress(1.0);
    }
  }

 private:
  const std::function<void(double)>& m_progress;
  double m_total;
  std::atomic<Index> m_done{0};
  double m_reported = 0;  // touched by thread 0 only
};

/// Sample i's input values (in the walk's input order), node slopes and (with max nodes) the
/// active edge of each max node, contiguous.
void gather_sample(const detail::LinWalkTables& t, const Eigen::Ref<const Eigen::MatrixXd>& X,
                   const ActivationPattern& pattern, Index i, std::vector<double>& x,
                   std::vector<double>& s, std::vector<EdgeId>& gate) {
  const Eigen::MatrixXd& slopes = pattern.slopes;
  if (pattern.max_edges.size() > 0) {
    gate.resize(static_cast<std::size_t>(t.num_nodes));
    for (Index v = 0; v < t.num_nodes; ++v) {
      gate[static_cast<std::size_t>(v)] = pattern.max_edges(i, v);
    }
  }
  x.resize(t.inputs.size());
  for (std::size_t a = 0; a < t.inputs.size(); ++a) {
    x[a] = t.data_column[a] < 0 ? 1.0 : X(i, t.data_column[a]);
  }
  s.resize(static_cast<std::size_t>(t.num_nodes));
  for (Index v = 0; v < t.num_nodes; ++v) {
    s[static_cast<std::size_t>(v)] = slopes(i, v);
  }
}

/// |a - b| / max(scale, |a|, |b|), 0 when all three are 0, NaN when any is NaN.
double relative_error(double a, double b, double scale) {
  const double diff = std::abs(a - b);
  const double denom = std::max({scale, std::abs(a), std::abs(b)});
  if (std::isnan(diff) || std::isnan(denom)) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  return diff == 0 ? 0.0 : diff / denom;
}

/// k distinct indices of [0, n), sorted (all of them when k >= n); Floyd's sampling.
std::vector<Index> sample_indices(Index n, Index k, detail::SplitMix64& rng) {
  std::vector<Index> out;
  if (k >= n) {
    for (Index i = 0; i < n; ++i) {
      out.push_back(i);
    }
    return out;
  }
  for (Index j = n - k; j < n; ++j) {
    const auto t = static_cast<Index>(rng.below(static_cast<std::uint64_t>(j) + 1));
    if (std::find(out.begin(), out.end(), t) == out.end()) {
      out.push_back(t);
    } else {
      out.push_back(j);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

Eigen::MatrixXd rows_of(const Eigen::Ref<const Eigen::MatrixXd>& X,
                        const std::vector<Index>& rows) {
  Eigen::MatrixXd out(static_cast<Index>(rows.size()), X.cols());
  for (std::size_t a = 0; a < rows.size(); ++a) {
    out.row(static_cast<Index>(a)) = X.row(rows[a]);
  }
  return out;
}

}  // namespace

CsrMatrix<double> linear_map(const Network& net, const Eigen::Ref<const Eigen::MatrixXd>& X,
                             const ActivationPattern& pattern, const EngineOptions& options) {
  check_data(net, X);
  const Index n = X.rows();
  const Index m = net.num_nodes();
  const auto q = static_cast<Index>(net.outputs().size());
  if (pattern.slopes.rows() != n || pattern.slopes.cols() != m) {
    throw std::invalid_argument(
        fmt::format("the activation pattern is {} x {} but the data has n = {} samples and the "
                    "network m = {} nodes",
                    pattern.slopes.rows(), pattern.slopes.cols(), n, m));
  }
  const detail::LinWalkTables t = detail::lin_make_walk_tables(net);
  if (t.num_paths > detail::k_lin_max_paths) {
    throw TooLarge(
        fmt::format(
            "the linear map L has P = {} columns, more than the 2^31 - 1 that its 32-bit column "
            "indices hold",
            count_paths_total(net).to_string()),
        TooLarge::Reason::too_many_paths);
  }
  const Index rows = n * q;
  const auto what = [&](Index nnz) {
    return fmt::format("the linear map L ((n q) x P = {} x {}, n = {}, q = {}, nnz = {})", rows,
                       t.num_paths, n, q, nnz);
  };
  require_bytes(static_cast<double>(rows + 1) * sizeof(Index), options.max_memory, what(0));

  Buffer<Index> offsets(static_cast<std::size_t>(rows) + 1, Index{0});
  Index* off = offsets.data();
  const int threads = resolve_threads(options.threads);
  const auto report = detail::phase_callback(options.progress, "linearizing the samples");
  SampleProgress progress(report, n);

  // Small batches on small networks run on the calling thread (a thread team costs more).
  const bool parallel = n > 1 && n * (net.num_edges() + 1) >= (Index{1} << 14);
  // Pass 1: entries per row, by a DP over the nodes (O(m + d) per sample).
  detail::run_team(threads, parallel, [&] {
    std::vector<double> x;
    std::vector<double> s;
    std::vector<EdgeId> gate;
    std::vector<Index> partial;
#pragma omp for schedule(static)
    for (Index i = 0; i < n; ++i) {
      gather_sample(t, X, pattern, i, x, s, gate);
      detail::lin_count_sample(t, x.data(), s.data(), gate.empty() ? nullptr : gate.data(), partial,
                               off + i * q + 1);
    }
  });
  for (Index r = 0; r < rows; ++r) {
    off[r + 1] += off[r];
  }
  Index nnz = off[rows];
  require_bytes(static_cast<double>(rows + 1) * sizeof(Index) +
                    static_cast<double>(nnz) * (sizeof(EdgeId) + sizeof(double)),
                options.max_memory, what(nnz));

  // Pass 2: the entries, each sample into the ranges pass 1 gave its rows.
  Buffer<EdgeId> cols(static_cast<std::size_t>(nnz));
  Buffer<double> values(static_cast<std::size_t>(nnz));
  EdgeId* const col_data = cols.data();
  double* const val_data = values.data();
  bool underflow = false;
#pragma omp parallel num_threads(threads) if (parallel || nnz >= (Index{1} << 16)) \
    reduction(||                                                                   \
              : underflow)
  {
    std::vector<double> x;
    std::vector<double> s;
    std::vector<EdgeId> gate;
    std::vector<Index> cursor(static_cast<std::size_t>(q));
    detail::LinWalkScratch frames;
#pragma omp for schedule(dynamic, 1)
    for (Index i = 0; i < n; ++i) {
      gather_sample(t, X, pattern, i, x, s, gate);
      std::copy(off + i * q, off + i * q + q, cursor.begin());
      Index* cur = cursor.data();
      bool zero = false;
      detail::lin_walk_sample(t, x.data(), s.data(), gate.empty() ? nullptr : gate.data(), frames,
                              [&](Index j, Index p, double value) {
                                const Index k = cur[j]++;
                                col_data[k] = static_cast<EdgeId>(p);
                                val_data[k] = value;
                                zero = zero || value == 0;
                              });
      underflow = underflow || zero;
      progress.done_one();
    }
  }
  progress.finish();

  if (underflow) {
    // Products x * slopes that underflowed to 0 (tiny leaky slopes): not stored. In place,
    // row by row (the write position never passes the read position).
    Index w = 0;
    Index read_begin = 0;
    for (Index r = 0; r < rows; ++r) {
      const Index read_end = off[r + 1];
      off[r] = w;
      for (Index k = read_begin; k < read_end; ++k) {
        if (val_data[k] != 0) {
          col_data[w] = col_data[k];
          val_data[w] = val_data[k];
          ++w;
        }
      }
      read_begin = read_end;
    }
    off[rows] = w;
    nnz = w;
    cols.resize(static_cast<std::size_t>(nnz));
    values.resize(static_cast<std::size_t>(nnz));
  }

  CsrMatrix<double> L;
  L.pattern.rows = rows;
  L.pattern.cols = t.num_paths;
  L.pattern.row_offsets = std::make_shared<const Buffer<Index>>(std::move(offsets));
  L.pattern.col_indices = std::make_shared<const Buffer<EdgeId>>(std::move(cols));
  L.values = std::move(values);
  return L;
}

Linearization linearize(const Network& net, std::span<const double> theta,
                        const Eigen::Ref<const Eigen::MatrixXd>& X, const EngineOptions& options) {
  Linearization lin;
  lin.forward = forward(net, theta, X, options);
  lin.pattern = activation_pattern(net, lin.forward);
  lin.map = linear_map(net, X, lin.pattern, options);
  return lin;
}

namespace {

constexpr std::array k_status_names{
    detail::EnumName<LinearizationStatus>{LinearizationStatus::ok, "ok"},
    detail::EnumName<LinearizationStatus>{LinearizationStatus::inconclusive, "inconclusive"},
    detail::EnumName<LinearizationStatus>{LinearizationStatus::on_kink, "on_kink"},
    detail::EnumName<LinearizationStatus>{LinearizationStatus::mismatch, "mismatch"}};

}  // namespace

std::string to_string(LinearizationStatus status) {
  return std::string(detail::enum_name(k_status_names, status));
}

LinearizationStatus parse_linearization_status(std::string_view name) {
  return detail::parse_enum(k_status_names, name, "linearization status");
}

std::string to_json(const LinearizationCheck& check, int indent) {
  detail::Json j;
  PATHLIFT_JSON_MEMBERS(j, check, n, q, P, nnz_L, margin, max_err_f, max_err_grad, status);
  return j.dump(indent);
}

LinearizationCheck verify_linearization(const Network& net, std::span<const double> theta,
                                        const Eigen::Ref<const Eigen::MatrixXd>& X,
                                        const Linearization& lin, std::span<const double> phi,
                                        const CsrMatrix<double>& dphi,
                                        const LinearizationCheckOptions& options) {
  check_theta_size(net, theta.size());
  check_data(net, X);
  const Index n = X.rows();
  const Index m = net.num_nodes();
  const Index d = net.num_params();
  const auto q = static_cast<Index>(net.outputs().size());
  const CsrMatrix<double>& L = lin.map;
  if (lin.forward.outputs.rows() != n || lin.forward.outputs.cols() != q ||
      lin.pattern.slopes.rows() != n || lin.pattern.slopes.cols() != m || L.rows() != n * q) {
    throw std::invalid_argument(fmt::format(
        "the linearization does not match the data (n = {}, q = {}, m = {}): outputs {} x {}, "
        "slopes {} x {}, L has {} rows",
        n, q, m, lin.forward.outputs.rows(), lin.forward.outputs.cols(), lin.pattern.slopes.rows(),
        lin.pattern.slopes.cols(), L.rows()));
  }
  const Index np = L.cols();
  if (static_cast<Index>(phi.size()) != np || dphi.rows() != np || dphi.cols() != d) {
    throw std::invalid_argument(
        fmt::format("sizes disagree: L has P = {} columns, Phi has {} entries, dPhi is {} x {} "
                    "(expected {} x {})",
                    np, phi.size(), dphi.rows(), dphi.cols(), np, d));
  }

  LinearizationCheck out;
  out.n = n;
  out.q = q;
  out.P = np;
  out.nnz_L = L.nnz();
  out.margin = lin.pattern.margin;
  const int threads = resolve_threads(options.engine.threads);
  const auto off = L.pattern.offsets();
  const auto col = L.pattern.indices();

  // f = L Phi on every entry.
  const Index rows = L.rows();
  std::vector<double> err_f(static_cast<std::size_t>(rows));
  std::vector<double> lphi(static_cast<std::size_t>(rows));
  const bool parallel = L.nnz() >= k_parallel_entries;
  detail::run_team(threads, parallel, [&] {
#pragma omp for schedule(static)
    for (Index r = 0; r < rows; ++r) {
      double sum = 0;
      double abs_sum = 0;
      for (Index k = off[static_cast<std::size_t>(r)]; k < off[static_cast<std::size_t>(r) + 1];
           ++k) {
        const double term = L.values[static_cast<std::size_t>(k)] *
                            phi[static_cast<std::size_t>(col[static_cast<std::size_t>(k)])];
        sum += term;
        abs_sum += std::abs(term);
      }
      lphi[static_cast<std::size_t>(r)] = sum;
      err_f[static_cast<std::size_t>(r)] =
          relative_error(lin.forward.outputs(r / q, r % q), sum, abs_sum);
    }
  });
  Index worst_f = -1;
  for (Index r = 0; r < rows; ++r) {
    const double e = err_f[static_cast<std::size_t>(r)];
    if (worst_f < 0 || e > out.max_err_f || (std::isnan(e) && !std::isnan(out.max_err_f))) {
      out.max_err_f = e;
      worst_f = r;
    }
  }

  // df/dtheta = L dPhi on sampled samples x outputs x parameters.
  detail::SplitMix64 rng(options.seed);
  const std::vector<Index> samples =
      sample_indices(n, std::max<Index>(options.grad_samples, 0), rng);
  const std::vector<Index> params = sample_indices(d, std::max<Index>(options.grad_params, 0), rng);
  const auto ns = static_cast<Index>(samples.size());
  const auto nk = static_cast<Index>(params.size());
  std::vector<Index> slot(static_cast<std::size_t>(d), -1);
  for (Index a = 0; a < nk; ++a) {
    slot[static_cast<std::size_t>(params[static_cast<std::size_t>(a)])] = a;
  }
  // lin_grad[(a q + j) nk + b] = (L dPhi)[(samples[a], j), params[b]], abs_grad the same sum
  // over absolute values.
  std::vector<double> lin_grad(static_cast<std::size_t>(ns * q * nk), 0.0);
  std::vector<double> abs_grad(lin_grad.size(), 0.0);
  const auto doff = dphi.pattern.offsets();
  const auto dcol = dphi.pattern.indices();
  detail::run_team(threads, parallel, [&] {
#pragma omp for schedule(dynamic, 1)
    for (Index sr = 0; sr < ns * q; ++sr) {
      const Index r = samples[static_cast<std::size_t>(sr / q)] * q + sr % q;
      double* acc = lin_grad.data() + sr * nk;
      double* abs_acc = abs_grad.data() + sr * nk;
      for (Index k = off[static_cast<std::size_t>(r)]; k < off[static_cast<std::size_t>(r) + 1];
           ++k) {
        const double l = L.values[static_cast<std::size_t>(k)];
        const auto p = static_cast<std::size_t>(col[static_cast<std::size_t>(k)]);
        for (Index e = doff[p]; e < doff[p + 1]; ++e) {
          const Index b = slot[static_cast<std::size_t>(dcol[static_cast<std::size_t>(e)])];
          if (b >= 0) {
            const double term = l * dphi.values[static_cast<std::size_t>(e)];
            acc[b] += term;
            abs_acc[b] += std::abs(term);
          }
        }
      }
    }
  });

  struct Worst {
    double err = -1;
    Index sample = -1, output = -1, param = -1;
    double fd = 0, lin = 0;
  } worst;
  EngineOptions fd_options = options.engine;
  fd_options.progress = nullptr;
  constexpr int k_max_halvings = 40;
  std::vector<double> theta_p(theta.begin(), theta.end());
  std::vector<double> theta_m(theta.begin(), theta.end());
  for (Index b = 0; b < nk; ++b) {
    const auto k = static_cast<std::size_t>(params[static_cast<std::size_t>(b)]);
    std::vector<Index> pending(static_cast<std::size_t>(ns));  // positions in `samples`
    for (Index a = 0; a < ns; ++a) {
      pending[static_cast<std::size_t>(a)] = a;
    }
    double h = std::max(std::abs(theta[k]), 1.0) / 64;
    for (int halving = 0; halving <= k_max_halvings && !pending.empty(); ++halving, h /= 2) {
      theta_p[k] = theta[k] + h;
      theta_m[k] = theta[k] - h;
      const double step = (theta_p[k] - theta[k]) + (theta[k] - theta_m[k]);  // exact 2h
      std::vector<Index> sample_rows;
      for (const Index a : pending) {
        sample_rows.push_back(samples[static_cast<std::size_t>(a)]);
      }
      const Eigen::MatrixXd Xs = rows_of(X, sample_rows);
      const ForwardResult fp = forward(net, theta_p, Xs, fd_options);
      const ForwardResult fm = forward(net, theta_m, Xs, fd_options);
      const ActivationPattern pp = activation_pattern(net, fp);
      const ActivationPattern pm = activation_pattern(net, fm);
      std::vector<Index> still;
      for (std::size_t u = 0; u < pending.size(); ++u) {
        const Index a = pending[u];
        const Index i = sample_rows[u];
        const auto row = static_cast<Index>(u);
        // Same slopes at theta - h e_k, theta and theta + h e_k: f is affine in theta_k on
        // the whole step (a path holds edge k at most once: docs/conventions.md#paths).
        if (pp.slopes.row(row) != lin.pattern.slopes.row(i) ||
            pm.slopes.row(row) != lin.pattern.slopes.row(i) ||
            (lin.pattern.max_edges.size() > 0 &&
             (pp.max_edges.row(row) != lin.pattern.max_edges.row(i) ||
              pm.max_edges.row(row) != lin.pattern.max_edges.row(i)))) {
          still.push_back(a);
          continue;
        }
        for (Index j = 0; j < q; ++j) {
          const double fd = (fp.outputs(row, j) - fm.outputs(row, j)) / step;
          const std::size_t at = static_cast<std::size_t>((a * q + j) * nk + b);
          // The rounding of f(theta +- h) divided by the step: the difference quotient cannot
          // be closer than this, however right dPhi is (f may hold paths much larger than
          // those through k, e.g. a bias next to the output when the weights are tiny).
          const double rounding = 8 * std::numeric_limits<double>::epsilon() *
                                  (std::abs(fp.outputs(row, j)) + std::abs(fm.outputs(row, j))) /
                                  step;
          const double e = std::abs(fd - lin_grad[at]) <= rounding
                               ? 0.0
                               : relative_error(fd, lin_grad[at], abs_grad[at]);
          ++out.grad_entries;
          if (worst.err < 0 || e > worst.err || (std::isnan(e) && !std::isnan(worst.err))) {
            worst = {e, i, j, static_cast<Index>(k), fd, lin_grad[at]};
          }
        }
      }
      pending = std::move(still);
    }
    theta_p[k] = theta[k];
    theta_m[k] = theta[k];
    out.grad_skipped += static_cast<Index>(pending.size()) * q;
  }
  if (out.grad_entries > 0) {
    out.max_err_grad = worst.err;
  }

  // Status, worst first.
  const bool f_fails = rows > 0 && !(out.max_err_f <= options.tolerance_f);
  const bool grad_fails = out.grad_entries > 0 && !(out.max_err_grad <= options.tolerance_grad);
  if (f_fails || grad_fails) {
    out.status = LinearizationStatus::mismatch;
    if (f_fails) {
      out.message = fmt::format(
          "f = L Phi fails: relative error {:.3g} (tolerance {:.3g}) at sample {}, output {}: "
          "f = {:.17g}, L Phi = {:.17g}",
          out.max_err_f, options.tolerance_f, worst_f / q, worst_f % q,
          lin.forward.outputs(worst_f / q, worst_f % q), lphi[static_cast<std::size_t>(worst_f)]);
    } else {
      out.message = fmt::format(
          "df/dtheta = L dPhi fails: relative error {:.3g} (tolerance {:.3g}) at sample {}, "
          "output {}, theta[{}] ({}): finite difference {:.17g}, L dPhi {:.17g}",
          out.max_err_grad, options.tolerance_grad, worst.sample, worst.output, worst.param,
          net.param_label(worst.param), worst.fd, worst.lin);
    }
  } else if (lin.pattern.on_kink) {
    out.status = LinearizationStatus::on_kink;
    out.message = fmt::format(
        "margin 0: node {} has pre-activation exactly 0 on sample {}; theta lies in the null set "
        "Proposition 1 excludes (f = L Phi holds, but L is not unique and f need not be "
        "differentiable); {} of {} gradient entries could not be checked",
        printable(net.node_name(lin.pattern.margin_node)), lin.pattern.margin_sample,
        out.grad_skipped, out.grad_skipped + out.grad_entries);
  } else if (out.grad_skipped > 0) {
    out.status = LinearizationStatus::inconclusive;
    out.message = fmt::format(
        "{} of {} gradient entries could not be checked: no finite-difference step down to "
        "2^-46 max(|theta_k|, 1) kept the activation pattern (margin {:.3g})",
        out.grad_skipped, out.grad_skipped + out.grad_entries, out.margin);
  }
  return out;
}

LinearizationCheck check_linearization(const Network& net, std::span<const double> theta,
                                       const Eigen::Ref<const Eigen::MatrixXd>& X,
                                       const LinearizationCheckOptions& options) {
  const Linearization lin = linearize(net, theta, X, options.engine);
  const Buffer<double> phi = path_lifting<double>(net, theta, options.engine);
  const CsrMatrix<double> dphi = jacobian<double>(net, theta, options.engine);
  return verify_linearization(net, theta, X, lin, phi, dphi, options);
}

}  // namespace pathlift
