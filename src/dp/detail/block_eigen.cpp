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
#include "src/core/detail/eigen_threads.hpp"
#include "src/core/detail/progress.hpp"

namespace pathlift::detail {

namespace {

using Cols = Eigen::Ref<Eigen::MatrixXd>;
using ConstCols = Eigen::Ref<const Eigen::MatrixXd>;

constexpr Index k_rows_per_task = 8192;  // rows of the d x k blocks per task (fixed shapes)

Index row_tasks(Index d) {
  return (d + k_rows_per_task - 1) / k_rows_per_task;
}

/// f(first row, rows) over the row blocks, in parallel.
template <class F>
void for_row_blocks(Index d, int threads, const F& f) {
  const Index tasks = row_tasks(d);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (Index t = 0; t < tasks; ++t) {
    const Index r0 = t * k_rows_per_task;
    f(r0, std::min(d - r0, k_rows_per_task));
  }
}

/// The sum over the row blocks of [0, d) of part(r0, nr) (r x c each), made in parallel and
/// added in block order: the same for any thread count.
template <class F>
Eigen::MatrixXd block_sum(Index d, Index r, Index c, int threads, const F& part) {
  std::vector<Eigen::MatrixXd> parts(static_cast<std::size_t>(row_tasks(d)));
  for_row_blocks(d, threads, [&](Index r0, Index nr) {
    part(r0, nr, parts[static_cast<std::size_t>(r0 / k_rows_per_task)]);
  });
  Eigen::MatrixXd sum = Eigen::MatrixXd::Zero(r, c);
  for (const Eigen::MatrixXd& p : parts) {
    sum += p;
  }
  return sum;
}

/// a^T b, per row block in parallel and summed in block order.
Eigen::MatrixXd cross(const ConstCols& a, const ConstCols& b, int threads) {
  return block_sum(a.rows(), a.cols(), b.cols(), threads,
                   [&](Index r0, Index nr, Eigen::MatrixXd& p) {
                     p.noalias() = a.middleRows(r0, nr).transpose() * b.middleRows(r0, nr);
                   });
}

/// x -= a c, row block by row block.
void subtract(Cols x, const ConstCols& a, const Eigen::MatrixXd& c, int threads) {
  for_row_blocks(x.rows(), threads, [&](Index r0, Index nr) {
    x.middleRows(r0, nr).noalias() -= a.middleRows(r0, nr) * c;
  });
}

/// x -= a c, then a^T x, in one pass over the row blocks (each block of x is final once its
/// own rows are subtracted; the products summed in block order, as cross()).
Eigen::MatrixXd subtract_cross(Cols x, const ConstCols& a, const Eigen::MatrixXd& c, int threads) {
  return block_sum(x.rows(), a.cols(), x.cols(), threads,
                   [&](Index r0, Index nr, Eigen::MatrixXd& p) {
                     auto xb = x.middleRows(r0, nr);
                     const auto ab = a.middleRows(r0, nr);
                     xb.noalias() -= ab * c;
                     p.noalias() = ab.transpose() * xb;
                   });
}

/// The second pass of classical Gram-Schmidt on x, given c = a^T x (a orthonormal): x -= a c,
/// restricted to the columns j of a with which some column i of x still has a cosine above
/// 1e-12 (|c(j, i)| > 1e-12 ||x_i||); nothing when there are none. The first pass (Lanczos's
/// own coefficients subtracted) leaves cosines of 1e-16 to 2e-14 on resnet18, where this pass
/// cost as much as a third of the iteration; they grow where x is small beside K z, and there it
/// runs. The basis stays orthogonal to 1e-12, far inside the sqrt(eps) that Lanczos needs
/// (semi-orthogonality: H then equals V^T K V to working precision).
void reorthogonalize(Cols x, const ConstCols& a, const Eigen::MatrixXd& c, int threads) {
  const Eigen::VectorXd norms = cross(x, x, threads).diagonal().cwiseSqrt();
  std::vector<Index> lean;
  for (Index j = 0; j < c.rows(); ++j) {
    bool keep = false;
    for (Index i = 0; i < c.cols(); ++i) {
      keep = keep || !(std::fabs(c(j, i)) <= 1e-12 * norms(i));  // NaN: kept
    }
    if (keep) {
      lean.push_back(j);
    }
  }
  if (lean.size() == static_cast<std::size_t>(a.cols())) {
    subtract(x, a, c, threads);
    return;
  }
  if (lean.empty()) {
    return;
  }
  for_row_blocks(x.rows(), threads, [&](Index r0, Index nr) {
    auto xb = x.middleRows(r0, nr);
    for (const Index j : lean) {
      xb.noalias() -= a.col(j).segment(r0, nr) * c.row(j);
    }
  });
}

/// x <- x c in place (c: k x k' with k' <= k; columns k'.. of x zeroed).
void transform(Cols x, const Eigen::MatrixXd& c, int threads) {
  for_row_blocks(x.rows(), threads, [&](Index r0, Index nr) {
    const Eigen::MatrixXd rows = x.middleRows(r0, nr);
    x.block(r0, 0, nr, c.cols()).noalias() = rows * c;
    x.block(r0, c.cols(), nr, x.cols() - c.cols()).setZero();
  });
}

/// An orthonormal basis of the span of the columns of the small matrix c (n x k), by the
/// eigendecomposition of c^T c (directions whose squared singular value is below `drop` times
/// the largest, or below 1e-28, dropped): the coefficients t (k x k') with (c t)^T (c t) = I.
Eigen::MatrixXd whitening(const Eigen::MatrixXd& g, double drop) {
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(g);
  const Eigen::VectorXd& e = es.eigenvalues();
  const double top = e.size() > 0 ? e.maxCoeff() : 0.0;
  std::vector<Index> keep;
  for (Index i = e.size(); i-- > 0;) {
    if (e(i) > drop * top && e(i) > 1e-28) {
      keep.push_back(i);
    }
  }
  Eigen::MatrixXd t(g.rows(), static_cast<Index>(keep.size()));
  for (std::size_t j = 0; j < keep.size(); ++j) {
    t.col(static_cast<Index>(j)) = es.eigenvectors().col(keep[j]) / std::sqrt(e(keep[j]));
  }
  return t;
}

/// W (d x nw) made orthonormal and orthogonal to the orthonormal columns of x and p: two
/// rounds of projection and whitening. Returns the number of columns kept (the others zero).
Index orthonormalize(Cols w, const ConstCols& x, const ConstCols& p, int threads) {
  Index nw = w.cols();
  for (int round = 0; round < 2 && nw > 0; ++round) {
    auto wa = w.leftCols(nw);
    subtract(wa, x, cross(x, wa, threads), threads);
    if (p.cols() > 0) {
      subtract(wa, p, cross(p, wa, threads), threads);
    }
    for (Index j = 0; j < nw; ++j) {
      const double norm = wa.col(j).norm();
      wa.col(j) *= norm > 0 ? 1 / norm : 0.0;
    }
    const Eigen::MatrixXd t = whitening(cross(wa, wa, threads), 1e-12);
    transform(wa, t, threads);
    nw = t.cols();
  }
  return nw;
}

/// The convergence bound of a pair of Ritz value lambda_j, lambda_0 the largest: tolerance *
/// |lambda_j| plus what roundoff in a product allows, 64 eps sqrt(d) lambda_0.
double pair_bound(const EigenOptions& options, Index d, double lambda_j, double lambda_0) {
  const double roundoff =
      64 * std::numeric_limits<double>::epsilon() * std::sqrt(static_cast<double>(d));
  return options.tolerance * std::fabs(lambda_j) + roundoff * std::max(lambda_0, 0.0);
}

/// A progress callback fed the worst residual / bound ratio of each step: the fraction of its
/// way (log scale) from the first ratio down to 1.
template <class Report>
auto residual_progress(const Report& report) {
  return [&report, first = -1.0](double worst) mutable {
    if (!report || !(worst > 0) || worst >= 1e300) {
      return;
    }
    if (first < 0) {
      first = worst;
    }
    if (first > 1) {
      report(std::clamp(std::log(first / worst) / std::log(first), 0.0, 1.0));
    }
  };
}

}  // namespace

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

Eigen::VectorXd eigen_residuals(const BlockProduct& apply, const Eigen::VectorXd& values,
                                const Eigen::MatrixXd& vectors) {
  const Index k = vectors.cols();
  Eigen::MatrixXd kv(vectors.rows(), k);
  apply(vectors.data(), kv.data(), k);
  Eigen::VectorXd r(k);
  for (Index j = 0; j < k; ++j) {
    const double res = (kv.col(j) - values(j) * vectors.col(j)).norm();
    const double lambda = std::fabs(values(j));
    r(j) = lambda > 0 ? res / lambda : (res == 0 ? 0.0 : std::numeric_limits<double>::infinity());
  }
  return r;
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

Index lanczos_basis(Index count, const EigenOptions& options) {
  return options.subspace > 0 ? options.subspace : std::max(2 * count + 1, count + 20);
}

double lanczos_bytes(Index d, Index count, Index block, Index basis) {
  return static_cast<double>(d) * static_cast<double>(basis + 2 * block + 2 * count) *
         sizeof(double);
}

KernelEigenvalues lanczos_top_eigenpairs(Index d, const BlockProduct& apply, Index count,
                                         Index block, const EigenOptions& options) {
  if (options.max_iterations < 1 || !(options.tolerance > 0)) {
    throw std::invalid_argument(
        fmt::format("Lanczos needs max_iterations >= 1 and tolerance > 0 (got {} and {})",
                    options.max_iterations, options.tolerance));
  }
  if (count >= d) {
    throw std::invalid_argument(fmt::format(
        "Lanczos finds at most d - 1 = {} eigenvalues of K; use the dense method for all {}", d - 1,
        d));
  }
  const Index b = std::clamp<Index>(block, 1, count);
  Index nmax = std::min(lanczos_basis(count, options), d);
  if (options.subspace == 0) {
    // The default basis narrowed to what the memory limit leaves (within count + 2 blocks).
    const auto fit =
        static_cast<Index>(static_cast<double>(effective_max_memory(options.engine.max_memory)) /
                           (static_cast<double>(d) * sizeof(double)));
    nmax = std::max(std::min(nmax, fit - 2 * b - 2 * count), std::min(count + 2 * b, d));
  }
  if (nmax < count + 2 * b) {
    throw std::invalid_argument(fmt::format(
        "Lanczos's subspace of {} vectors (within d = {}) must be at least the {} eigenvalues "
        "plus two blocks of {}",
        nmax, d, count, b));
  }
  require_bytes(lanczos_bytes(d, count, b, nmax), options.engine.max_memory,
                fmt::format("block Lanczos on the path kernel (d = {}, a basis of {} vectors, "
                            "two blocks of {} and the {} eigenvectors with their products)",
                            d, nmax, b, count));
  const int threads = resolve_threads(options.engine.threads);
  const EigenSingleThread eigen_threads;  // row blocks in parallel, Eigen serial inside
  const auto report = phase_callback(options.engine.progress, "eigenpairs of K (block Lanczos)");
  if (report) {
    report(0.0);
  }
  KernelEigenvalues r;
  r.method = EigenMethod::lanczos;
  // The Krylov-Schur relation K V = V H + F S^T: V (d x n) orthonormal, H = V^T K V, F (d x nb)
  // orthogonal to V, S (n x nb). It starts with n = 0 and F random; each step appends F made
  // orthonormal (Z = F T, F = Z B) and keeps the relation with F' = K Z - V S B^T - Z Z^T K Z;
  // a restart keeps the top k Ritz vectors (V <- V Y_k, H <- diag, S <- Y_k^T S).
  Eigen::MatrixXd v(d, nmax);
  Eigen::MatrixXd f(d, b);
  Eigen::MatrixXd kz(d, b);
  std::mt19937_64 rng(0x5eed2026);
  // F random (the start; and past an invariant subspace smaller than count, where K V = V H
  // holds with S = 0), orthonormal and orthogonal to the first n columns of V.
  const auto random_f = [&](Index n_basis) {
    std::normal_distribution<double> normal;
    for (Index j = 0; j < b; ++j) {
      for (Index i = 0; i < d; ++i) {
        f(i, j) = normal(rng);
      }
    }
    (void)orthonormalize(f, v.leftCols(n_basis), v.leftCols(0), threads);
  };
  random_f(0);
  Index n = 0;
  Index nb = b;
  Eigen::MatrixXd h(0, 0);
  Eigen::MatrixXd s(0, b);
  Eigen::VectorXd theta;  // Ritz values, largest first
  Eigen::MatrixXd y;      // their vectors in V's coordinates
  const auto bound = [&](Index j) { return pair_bound(options, d, theta(j), theta(0)); };
  auto progress = residual_progress(report);
  bool converged = false;
  Eigen::MatrixXd x;  // the top count Ritz vectors, V Y, and their fresh residuals
  Eigen::VectorXd res;
  const auto ritz_pairs = [&] {
    x.resize(d, count);
    const Eigen::MatrixXd yc = y.leftCols(count);
    for_row_blocks(d, threads, [&](Index r0, Index nr) {
      x.middleRows(r0, nr).noalias() = v.block(r0, 0, nr, n) * yc;
    });
    res = eigen_residuals(apply, theta.head(count), x);
    r.products += count;
  };
  for (;;) {
    // Z = F T orthonormal (directions below 1e-5 of the largest dropped: near an invariant
    // subspace the block narrows).
    // Scale-free: the Gram matrix over its largest diagonal entry (0: K V = V H already).
    const Eigen::MatrixXd g = cross(f.leftCols(nb), f.leftCols(nb), threads);
    const double top = nb > 0 ? g.diagonal().maxCoeff() : 0.0;
    const Eigen::MatrixXd t = top > 0 && std::isfinite(top)
                                  ? Eigen::MatrixXd(whitening(g / top, 1e-10) / std::sqrt(top))
                                  : Eigen::MatrixXd(nb, 0);
    const Index nz = std::min(t.cols(), nmax - n);
    if (nz > 0) {
      const Eigen::MatrixXd tz = t.leftCols(nz);
      for_row_blocks(d, threads, [&](Index r0, Index nr) {
        v.block(r0, n, nr, nz).noalias() = f.block(r0, 0, nr, nb) * tz;
      });
      const Eigen::MatrixXd off = s * (tz.transpose() * g).transpose();  // S B^T, n x nz
      apply(v.col(n).data(), kz.data(), nz);
      r.products += nz;
      Eigen::MatrixXd m = cross(v.middleCols(n, nz), kz.leftCols(nz), threads);
      m = (m + m.transpose()).eval() / 2;
      Eigen::MatrixXd h2 = Eigen::MatrixXd::Zero(n + nz, n + nz);
      h2.topLeftCorner(n, n) = h;
      h2.topRightCorner(n, nz) = off;
      h2.bottomLeftCorner(nz, n) = off.transpose();
      h2.bottomRightCorner(nz, nz) = m;
      // F' = K Z - [V Z] [S B^T; M], then one reorthogonalisation against [V Z]: a pass over the
      // basis that subtracts and projects row block by row block, and a second on the columns
      // that F still leans on (reorthogonalize: usually none).
      f.swap(kz);  // F's columns become K Z's (both d x b; the next product refills kz)
      Eigen::MatrixXd coef(n + nz, nz);
      coef.topRows(n) = off;
      coef.bottomRows(nz) = m;
      const Eigen::MatrixXd again =
          subtract_cross(f.leftCols(nz), v.leftCols(n + nz), coef, threads);
      reorthogonalize(f.leftCols(nz), v.leftCols(n + nz), again, threads);
      n += nz;
      nb = nz;
      h = std::move(h2);
      s = Eigen::MatrixXd::Zero(n, nb);
      s.bottomRows(nb).setIdentity();
    } else if (n < count) {
      // K V = V H with fewer than count columns (K of low rank): new random directions.
      random_f(n);
      nb = b;
      s = Eigen::MatrixXd::Zero(n, nb);
      continue;
    } else {
      nb = 0;  // K V = V H: the Ritz pairs are exact
    }
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(h);
    if (es.info() != Eigen::Success || !es.eigenvalues().allFinite()) {
      r.status = EigenStatus::numerical_issue;
      return r;
    }
    theta = es.eigenvalues().reverse();
    y = es.eigenvectors().rowwise().reverse();
    // ||K V y - theta V y|| = ||F S^T y||, from F^T F.
    const Eigen::MatrixXd ff =
        nb > 0 ? cross(f.leftCols(nb), f.leftCols(nb), threads) : Eigen::MatrixXd::Zero(0, 0);
    double worst = 0;
    const Index have = std::min(count, n);
    for (Index j = 0; j < have; ++j) {
      const Eigen::VectorXd c =
          nb > 0 ? Eigen::VectorXd(s.transpose() * y.col(j)) : Eigen::VectorXd::Zero(0);
      const double rj = nb > 0 ? std::sqrt(std::max(0.0, c.dot(ff * c))) : 0.0;
      const double bj = bound(j);
      worst = std::max(worst, bj > 0 ? rj / bj : (rj > 0 ? 1e300 : 0.0));
    }
    if (have == count && worst <= 1) {
      // Confirmed by fresh products (the relation drifts by rounding).
      ritz_pairs();
      converged = true;
      for (Index j = 0; j < count; ++j) {
        converged = converged && res(j) * std::fabs(theta(j)) <= bound(j);
      }
      if (converged || nb == 0) {
        break;
      }
    }
    progress(worst);
    if (n + nb > nmax) {
      // Thick restart: the top k Ritz vectors, room for at least one more block.
      if (r.iterations >= options.max_iterations) {
        break;
      }
      ++r.iterations;
      const Index k = std::max(count, std::min((nmax + count) / 2, nmax - nb));
      const Eigen::MatrixXd yk = y.leftCols(k);
      transform(v.leftCols(n), yk, threads);
      h = theta.head(k).asDiagonal();
      s = (yk.transpose() * s).eval();
      n = k;
    }
  }
  r.status = converged ? EigenStatus::converged : EigenStatus::not_converged;
  if (!converged) {
    // The leading pairs whose fresh residual (of the last Ritz vectors: n >= count once a
    // restart is due) is within the tolerance.
    ritz_pairs();
  }
  Index good = count;
  if (!converged) {
    good = 0;
    while (good < count && res(good) * std::fabs(theta(good)) <= bound(good)) {
      ++good;
    }
  }
  r.values = theta.head(good);
  r.residuals = res.head(good);
  if (options.vectors) {
    r.vectors = x.leftCols(good);
    fix_signs(r.vectors);
  }
  if (report) {
    report(1.0);
  }
  return r;
}

}  // namespace pathlift::detail
