// Thick-restart block Lanczos on the matrix-free block product of the path kernel
// (block_eigen.hpp's lanczos_top_eigenpairs).

#include <fmt/format.h>

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "pathlift/limits.hpp"
#include "pathlift/options.hpp"
#include "src/core/eigen_threads.hpp"
#include "src/core/progress.hpp"
#include "src/dp/detail/block_basis.hpp"
#include "src/dp/detail/block_eigen.hpp"

namespace pathlift::detail {

Index lanczos_basis(Index count, const EigenOptions& options) {
  return options.subspace > 0 ? options.subspace : std::max(2 * count + 1, count + 20);
}

double lanczos_bytes(Index d, Index count, Index block, Index basis) {
  return static_cast<double>(d) * static_cast<double>(basis + 2 * block + 2 * count) *
         sizeof(double);
}

namespace {

constexpr std::uint64_t k_lanczos_seed = 0x5eed2026;

/// One thick-restart block Lanczos run from the random start of `seed` (lanczos_top_eigenpairs
/// without its multiplicity check); the vectors are returned when options.vectors.
KernelEigenvalues lanczos_run(Index d, const BlockProduct& apply, Index count, Index block,
                              const EigenOptions& options, std::uint64_t seed,
                              std::string_view label, double lambda_top = 0) {
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
  const auto report = phase_callback(options.engine.progress, label);
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
  std::mt19937_64 rng(seed);
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
  // lambda_top: the scale of the roundoff floor where the operator is a deflated K (its own
  // largest eigenvalue may be 0 while its products carry K's rounding).
  const auto bound = [&](Index j) {
    return pair_bound(options, d, theta(j), std::max(theta(0), lambda_top));
  };
  auto progress = residual_progress(report);
  bool converged = false;
  Eigen::MatrixXd x;        // the top count Ritz vectors, V Y, and their fresh residuals
  Eigen::VectorXd res;      // relative, reported
  Eigen::VectorXd res_abs;  // ||K x - theta x||, tested
  const auto ritz_pairs = [&] {
    x.resize(d, count);
    const Eigen::MatrixXd yc = y.leftCols(count);
    for_row_blocks(d, threads, [&](Index r0, Index nr) {
      x.middleRows(r0, nr).noalias() = v.block(r0, 0, nr, n) * yc;
    });
    res_abs = residual_norms(apply, theta.head(count), x);
    res = relative_residuals(res_abs, theta.head(count));
    r.products += count;
  };
  // F^T F of F's first nb columns, kept from where F last changed (one pass over F a step).
  Eigen::MatrixXd g = cross(f.leftCols(nb), f.leftCols(nb), threads);
  for (;;) {
    // Z = F T orthonormal (directions below 1e-5 of the largest dropped: near an invariant
    // subspace the block narrows).
    // Scale-free: the Gram matrix over its largest diagonal entry (0: K V = V H already).
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
      g = cross(f.leftCols(nz), f.leftCols(nz), threads);
      if (reorthogonalize(f.leftCols(nz), v.leftCols(n + nz), again, std::sqrt(g(0, 0)), threads)) {
        g = cross(f.leftCols(nz), f.leftCols(nz), threads);
      }
      n += nz;
      nb = nz;
      h = std::move(h2);
      s = Eigen::MatrixXd::Zero(n, nb);
      s.bottomRows(nb).setIdentity();
    } else if (n < count) {
      // K V = V H with fewer than count columns (K of low rank): new random directions.
      random_f(n);
      nb = b;
      g = cross(f.leftCols(nb), f.leftCols(nb), threads);
      s = Eigen::MatrixXd::Zero(n, nb);
      continue;
    } else {
      nb = 0;  // K V = V H: the Ritz pairs are exact
      g.resize(0, 0);
    }
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(h);
    if (es.info() != Eigen::Success || !es.eigenvalues().allFinite()) {
      r.status = EigenStatus::numerical_issue;
      return r;
    }
    theta = es.eigenvalues().reverse();
    y = es.eigenvectors().rowwise().reverse();
    // ||K V y - theta V y|| = ||F S^T y||, from F^T F.
    const Eigen::MatrixXd& ff = g;
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
        converged = converged && res_abs(j) <= bound(j);
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
    while (good < count && res_abs(good) <= bound(good)) {
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

/// Completes the converged pairs of `r` (values largest first, unit vectors in r.vectors) with
/// the copies of repeated eigenvalues that a block of fewer than count vectors cannot see (its
/// Krylov space holds one direction of each eigenspace per start vector): Lanczos on the
/// deflated operator (I - Q Q^T) K (I - Q Q^T), Q the pairs found so far, from a new random
/// start, gives the largest eigenvalue mu of K beside them. Above the count-th value (beyond
/// twice its convergence bound) it is a missed copy or eigenvalue: it joins, and the check runs
/// again; else the top count are complete. Each check costs one single-vector run (tens of
/// products); status not_converged when one does not converge (the copies then unknown).
void complete_multiplicities(Index d, const BlockProduct& apply, Index count,
                             const EigenOptions& options, KernelEigenvalues& r) {
  const int threads = resolve_threads(options.engine.threads);
  Eigen::MatrixXd q = r.vectors;  // every pair found, orthonormal
  std::vector<double> lambda(r.values.data(), r.values.data() + r.values.size());
  const BlockProduct deflated = [&](const double* x, double* y, Index k) {
    Eigen::MatrixXd px = Eigen::Map<const Eigen::MatrixXd>(x, d, k);
    subtract(px, q, cross(q, px, threads), threads);
    apply(px.data(), y, k);
    Eigen::Map<Eigen::MatrixXd> ym(y, d, k);
    subtract(ym, q, cross(q, ym, threads), threads);
  };
  EigenOptions inner = options;
  inner.vectors = true;
  inner.subspace = 0;
  bool changed = false;
  for (Index round = 0; round < count && q.cols() + 3 <= d; ++round) {
    const KernelEigenvalues extra = lanczos_run(
        d, deflated, 1, 1, inner, k_lanczos_seed + 1 + static_cast<std::uint64_t>(round),
        "eigenpairs of K (the copies of repeated eigenvalues)", r.values(0));
    r.products += extra.products;
    r.iterations += extra.iterations;
    if (extra.status != EigenStatus::converged || extra.values.size() == 0) {
      r.status = EigenStatus::not_converged;
      break;
    }
    std::vector<Index> order(lambda.size());
    std::iota(order.begin(), order.end(), Index{0});
    std::stable_sort(order.begin(), order.end(), [&](Index a, Index b) {
      return lambda[static_cast<std::size_t>(a)] > lambda[static_cast<std::size_t>(b)];
    });
    const double last =
        lambda[static_cast<std::size_t>(order[static_cast<std::size_t>(count - 1)])];
    const double mu = extra.values(0);
    if (!(mu >
          last + 2 * pair_bound(options, d, last, lambda[static_cast<std::size_t>(order[0])]))) {
      break;
    }
    Eigen::MatrixXd y = extra.vectors.leftCols(1);
    subtract(y, q, cross(q, y, threads), threads);
    const double norm = y.norm();
    if (!(norm > 0.5)) {  // not a new direction: the deflation has nothing more to give
      r.status = EigenStatus::not_converged;
      break;
    }
    q.conservativeResize(Eigen::NoChange, q.cols() + 1);
    q.col(q.cols() - 1) = y / norm;
    lambda.push_back(mu);
    changed = true;
  }
  if (!changed) {
    return;
  }
  std::vector<Index> order(lambda.size());
  std::iota(order.begin(), order.end(), Index{0});
  std::stable_sort(order.begin(), order.end(), [&](Index a, Index b) {
    return lambda[static_cast<std::size_t>(a)] > lambda[static_cast<std::size_t>(b)];
  });
  r.values.resize(count);
  r.vectors.resize(d, count);
  for (Index j = 0; j < count; ++j) {
    const Index from = order[static_cast<std::size_t>(j)];
    r.values(j) = lambda[static_cast<std::size_t>(from)];
    r.vectors.col(j) = q.col(from);
  }
  r.residuals = eigen_residuals(apply, r.values, r.vectors);
  r.products += count;
}

}  // namespace

KernelEigenvalues lanczos_top_eigenpairs(Index d, const BlockProduct& apply, Index count,
                                         Index block, const EigenOptions& options) {
  const Index b = std::clamp<Index>(block, 1, count);
  if (b >= count) {
    return lanczos_run(d, apply, count, b, options, k_lanczos_seed,
                       "eigenpairs of K (block Lanczos)");
  }
  EigenOptions with_vectors = options;
  with_vectors.vectors = true;
  KernelEigenvalues r = lanczos_run(d, apply, count, b, with_vectors, k_lanczos_seed,
                                    "eigenpairs of K (block Lanczos)");
  if (r.status == EigenStatus::converged) {
    complete_multiplicities(d, apply, count, options, r);
  }
  if (options.vectors) {
    fix_signs(r.vectors);
  } else {
    r.vectors.resize(0, 0);
  }
  return r;
}

}  // namespace pathlift::detail
