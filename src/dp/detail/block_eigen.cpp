// LOBPCG on the matrix-free block product of the path kernel, and eigenpair residuals
// (block_eigen.hpp).

#include "src/dp/detail/block_eigen.hpp"

#include <fmt/format.h>

#include <Eigen/Eigenvalues>
#include <Eigen/QR>
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "pathlift/limits.hpp"
#include "pathlift/options.hpp"
#include "src/core/eigen_threads.hpp"
#include "src/core/progress.hpp"
#include "src/dp/detail/block_basis.hpp"

namespace pathlift::detail {

void fix_signs(Eigen::MatrixXd& vectors) {
  for (Index j = 0; j < vectors.cols(); ++j) {
    const double norm = vectors.col(j).norm();
    if (norm > 0) {
      vectors.col(j) /= norm;
    }
    Index at = 0;
    vectors.col(j).cwiseAbs().maxCoeff(&at);
    if (vectors(at, j) < 0) {
      vectors.col(j) *= -1;
    }
  }
}

Eigen::VectorXd residual_norms(const BlockProduct& apply, const Eigen::VectorXd& values,
                               const Eigen::MatrixXd& vectors) {
  const Index k = vectors.cols();
  Eigen::MatrixXd kv(vectors.rows(), k);
  apply(vectors.data(), kv.data(), k);
  Eigen::VectorXd r(k);
  for (Index j = 0; j < k; ++j) {
    r(j) = (kv.col(j) - values(j) * vectors.col(j)).norm();
  }
  return r;
}

Eigen::VectorXd relative_residuals(const Eigen::VectorXd& norms, const Eigen::VectorXd& values) {
  Eigen::VectorXd r(norms.size());
  for (Index j = 0; j < norms.size(); ++j) {
    const double lambda = std::fabs(values(j));
    r(j) = lambda > 0 ? norms(j) / lambda
                      : (norms(j) == 0 ? 0.0 : std::numeric_limits<double>::infinity());
  }
  return r;
}

Eigen::VectorXd eigen_residuals(const BlockProduct& apply, const Eigen::VectorXd& values,
                                const Eigen::MatrixXd& vectors) {
  return relative_residuals(residual_norms(apply, values, vectors), values);
}

Index lobpcg_block(Index count, const EigenOptions& options) {
  return options.subspace > 0 ? options.subspace : count + std::max<Index>(2, count / 2);
}

double lobpcg_bytes(Index d, Index block) {
  return 2.0 * static_cast<double>(d) * 3.0 * static_cast<double>(block) * sizeof(double);
}

KernelEigenvalues lobpcg_top_eigenpairs(Index d, const BlockProduct& apply, Index count,
                                        const EigenOptions& options) {
  if (options.max_iterations < 1 || !(options.tolerance > 0)) {
    throw std::invalid_argument(
        fmt::format("LOBPCG needs max_iterations >= 1 and tolerance > 0 (got {} and {})",
                    options.max_iterations, options.tolerance));
  }
  Index m = lobpcg_block(count, options);
  if (m < count) {
    throw std::invalid_argument(fmt::format(
        "LOBPCG's block of {} vectors is smaller than the {} eigenpairs asked for", m, count));
  }
  if (3 * m > d) {
    throw std::invalid_argument(fmt::format(
        "LOBPCG needs 3 x its block of {} vectors <= d = {}; use the dense method", m, d));
  }
  Index n = 3 * m;
  const auto fits = [&](Index block) {
    return lobpcg_bytes(d, block) <=
           static_cast<double>(effective_max_memory(options.engine.max_memory));
  };
  require_bytes(lobpcg_bytes(d, m), options.engine.max_memory,
                fmt::format("LOBPCG on the path kernel (d = {}, a block of {} vectors: two "
                            "d x {} blocks)",
                            d, m, n));
  const int threads = resolve_threads(options.engine.threads);
  // The iteration splits its own work in fixed row blocks: Eigen's products run on one
  // thread inside them (the same result for any thread count).
  const EigenSingleThread eigen_threads;
  const auto report = phase_callback(options.engine.progress, "eigenpairs of K (LOBPCG)");
  if (report) {
    report(0.0);
  }
  KernelEigenvalues r;
  r.method = EigenMethod::lobpcg;
  // S = [X W P] (m columns each, W and P filled from the left), KS = K S; S orthonormal.
  Eigen::MatrixXd s = Eigen::MatrixXd::Zero(d, n);
  Eigen::MatrixXd ks = Eigen::MatrixXd::Zero(d, n);
  {
    std::mt19937_64 rng(0x5eed2026);
    std::normal_distribution<double> normal;
    for (Index j = 0; j < m; ++j) {
      for (Index i = 0; i < d; ++i) {
        s(i, j) = normal(rng);
      }
    }
    const Index kept = orthonormalize(s.leftCols(m), s.leftCols(0), s.leftCols(0), threads);
    if (kept < m) {
      r.status = EigenStatus::numerical_issue;
      return r;
    }
  }
  apply(s.data(), ks.data(), m);
  r.products += m;
  Eigen::VectorXd lambda;
  Index nw = 0;
  Index np = 0;
  // The Rayleigh-Ritz step on the active columns of S: X <- S C_x, P <- S C_p with C_p the
  // W and P parts of C_x made orthonormal and orthogonal to C_x (so the new X and P are
  // orthonormal without dividing by anything small). False when it fails.
  const auto rayleigh_ritz = [&]() -> bool {
    std::vector<Index> active;
    for (Index j = 0; j < m; ++j) {
      active.push_back(j);
    }
    for (Index j = 0; j < nw; ++j) {
      active.push_back(m + j);
    }
    for (Index j = 0; j < np; ++j) {
      active.push_back(2 * m + j);
    }
    const auto na = static_cast<Index>(active.size());
    const Eigen::MatrixXd h_all = cross(s, ks, threads);
    Eigen::MatrixXd h(na, na);
    for (Index i = 0; i < na; ++i) {
      for (Index j = 0; j < na; ++j) {
        const auto ai = active[static_cast<std::size_t>(i)];
        const auto aj = active[static_cast<std::size_t>(j)];
        h(i, j) = (h_all(ai, aj) + h_all(aj, ai)) / 2;
      }
    }
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(h);
    if (es.info() != Eigen::Success || !es.eigenvalues().allFinite()) {
      return false;
    }
    lambda = es.eigenvalues().tail(m).reverse();
    const Eigen::MatrixXd cx = es.eigenvectors().rightCols(m).rowwise().reverse();
    Eigen::MatrixXd cp = cx;
    cp.topRows(m).setZero();
    cp -= cx * (cx.transpose() * cp);
    cp -= cx * (cx.transpose() * cp);
    // Unit columns first: a column near convergence (a small step) keeps its direction.
    for (Index j = 0; j < m; ++j) {
      const double norm = cp.col(j).norm();
      cp.col(j) *= norm > 1e-150 ? 1 / norm : 0.0;
    }
    const Eigen::MatrixXd t = whitening(cp.transpose() * cp, 1e-12);
    const Eigen::MatrixXd cpo = cp * t;
    // Coefficients over all n columns of S (zero rows for the inactive ones).
    Eigen::MatrixXd c = Eigen::MatrixXd::Zero(n, m + cpo.cols());
    for (Index i = 0; i < na; ++i) {
      const auto ai = active[static_cast<std::size_t>(i)];
      c.row(ai).head(m) = cx.row(i);
      c.row(ai).tail(cpo.cols()) = cpo.row(i);
    }
    const Index npn = cpo.cols();
    for (Eigen::MatrixXd* b : {&s, &ks}) {
      for_row_blocks(d, threads, [&](Index r0, Index nr) {
        const Eigen::MatrixXd rows = b->middleRows(r0, nr);
        const Eigen::MatrixXd out = rows * c;
        b->block(r0, 0, nr, m) = out.leftCols(m);
        b->block(r0, m, nr, m).setZero();
        b->block(r0, 2 * m, nr, npn) = out.rightCols(npn);
        b->block(r0, 2 * m + npn, nr, m - npn).setZero();
      });
    }
    nw = 0;
    np = npn;
    return true;
  };
  if (!rayleigh_ritz()) {
    r.status = EigenStatus::numerical_issue;
    return r;
  }

  // The convergence bound of pair j at the current Ritz values.
  const auto bound = [&](Index j) { return pair_bound(options, d, lambda(j), lambda(0)); };
  auto progress = residual_progress(report);
  std::vector<double> res(static_cast<std::size_t>(m));
  std::vector<double> history;  // the worst ratio of each iteration
  bool converged = false;
  for (Index it = 0;; ++it) {
    double worst = 0;  // the largest residual / bound of the wanted pairs
    for (Index j = 0; j < m; ++j) {
      res[static_cast<std::size_t>(j)] = (ks.col(j) - lambda(j) * s.col(j)).norm();
      if (j < count) {
        const double b = bound(j);
        worst = std::max(worst, b > 0 ? res[static_cast<std::size_t>(j)] / b
                                      : (res[static_cast<std::size_t>(j)] > 0 ? 1e300 : 0.0));
      }
    }
    if (worst <= 1) {
      // Confirmed by a fresh product (the recurrence's K X drifts): K X into KS's W columns.
      apply(s.data(), ks.data() + m * d, count);
      r.products += count;
      bool all = true;
      for (Index j = 0; j < count; ++j) {
        ks.col(j) = ks.col(m + j);
        res[static_cast<std::size_t>(j)] = (ks.col(j) - lambda(j) * s.col(j)).norm();
        all = all && res[static_cast<std::size_t>(j)] <= bound(j);
      }
      ks.middleCols(m, count).setZero();
      if (all) {
        converged = true;
        break;
      }
    }
    progress(worst);
    if (it >= options.max_iterations) {
      break;
    }
    r.iterations = it + 1;
    // A cluster of close eigenvalues cut by the block converges slowly: when the wanted
    // residuals have not halved in 20 iterations, the block grows (doubled, within d / 3 and the
    // memory limit) by random directions orthogonal to X, and the iteration restarts from X.
    history.push_back(worst);
    const Index grown = std::min(2 * m, d / 3);
    // (the old blocks live beside the new ones while X is copied: m + grown counted)
    if (history.size() > 20 && worst > 0.5 * history[history.size() - 21] &&
        options.subspace == 0 && grown > m && fits(m + grown)) {
      Eigen::MatrixXd s2 = Eigen::MatrixXd::Zero(d, 3 * grown);
      Eigen::MatrixXd ks2 = Eigen::MatrixXd::Zero(d, 3 * grown);
      s2.leftCols(m) = s.leftCols(m);
      ks2.leftCols(m) = ks.leftCols(m);
      std::mt19937_64 rng(0x5eed2026 + static_cast<std::uint64_t>(grown));
      std::normal_distribution<double> normal;
      for (Index j = m; j < grown; ++j) {
        for (Index i = 0; i < d; ++i) {
          s2(i, j) = normal(rng);
        }
      }
      const Index added =
          orthonormalize(s2.middleCols(m, grown - m), s2.leftCols(m), s2.leftCols(0), threads);
      apply(s2.data() + m * d, ks2.data() + m * d, added);
      r.products += added;
      s = std::move(s2);
      ks = std::move(ks2);
      // The block is m + added columns wide, in storage of 3 x grown columns (W and P start at
      // the new m; columns past 3 m, if any direction was dropped, stay zero and unused).
      m += added;
      n = 3 * grown;
      nw = 0;
      np = 0;
      res.resize(static_cast<std::size_t>(m));
      history.clear();
      if (!rayleigh_ritz()) {
        r.status = EigenStatus::numerical_issue;
        return r;
      }
      continue;
    }
    // W: the residuals of the unconverged columns, orthonormal and orthogonal to X and P.
    nw = 0;
    for (Index j = 0; j < m; ++j) {
      if (res[static_cast<std::size_t>(j)] > bound(j)) {
        s.col(m + nw) = ks.col(j) - lambda(j) * s.col(j);
        ++nw;
      }
    }
    nw = orthonormalize(s.middleCols(m, nw), s.leftCols(m), s.middleCols(2 * m, np), threads);
    s.middleCols(m + nw, m - nw).setZero();
    if (nw > 0) {
      apply(s.data() + m * d, ks.data() + m * d, nw);
      r.products += nw;
    }
    if (!rayleigh_ritz()) {
      r.status = EigenStatus::numerical_issue;
      return r;
    }
  }
  // The leading eigenpairs whose fresh residual is within the tolerance (all of them when
  // converged): their values, residuals and, when asked, vectors.
  Index good = count;
  if (!converged) {
    apply(s.data(), ks.data() + m * d, count);
    r.products += count;
    good = 0;
    while (good < count) {
      const Index j = good;
      const double rj = (ks.col(m + j) - lambda(j) * s.col(j)).norm();
      if (!(rj <= bound(j))) {
        break;
      }
      res[static_cast<std::size_t>(j)] = rj;
      ++good;
    }
  }
  r.status = converged ? EigenStatus::converged : EigenStatus::not_converged;
  r.values = lambda.head(good);
  r.residuals.resize(good);
  for (Index j = 0; j < good; ++j) {
    const double l = std::fabs(lambda(j));
    const double rj = res[static_cast<std::size_t>(j)];
    r.residuals(j) = l > 0 ? rj / l : (rj == 0 ? 0.0 : std::numeric_limits<double>::infinity());
  }
  if (options.vectors) {
    r.vectors = s.leftCols(good);
    fix_signs(r.vectors);
  }
  if (report) {
    report(1.0);
  }
  return r;
}

bool any_equal_rows(
    Index n, const std::function<std::span<const double>(Index, std::vector<double>&)>& row) {
  std::vector<std::pair<std::uint64_t, Index>> hashes(static_cast<std::size_t>(n));
  std::vector<double> scratch;
  const auto hash = [](std::span<const double> r) {
    std::uint64_t h = 1469598103934665603ULL ^ r.size();  // FNV-1a over the bit patterns
    for (const double x : r) {
      h = (h ^ std::bit_cast<std::uint64_t>(x)) * 1099511628211ULL;
    }
    return h;
  };
  for (Index i = 0; i < n; ++i) {
    hashes[static_cast<std::size_t>(i)] = {hash(row(i, scratch)), i};
  }
  std::sort(hashes.begin(), hashes.end());
  std::vector<double> other;
  for (std::size_t i = 1; i < hashes.size(); ++i) {
    if (hashes[i].first == hashes[i - 1].first) {
      const std::span<const double> a = row(hashes[i - 1].second, scratch);
      const std::span<const double> b = row(hashes[i].second, other);
      if (std::equal(a.begin(), a.end(), b.begin(), b.end(), [](double x, double y) {
            return std::bit_cast<std::uint64_t>(x) == std::bit_cast<std::uint64_t>(y);
          })) {
        return true;
      }
    }
  }
  return false;
}

}  // namespace pathlift::detail
