#pragma once
// What the block eigensolvers (block_eigen.cpp's LOBPCG, block_lanczos.cpp's Lanczos) do with
// their tall d x k blocks: products and updates in fixed row blocks across threads, sums added
// in block order (the same result for any thread count); and their convergence test.

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <vector>

#include "pathlift/kernel.hpp"

namespace pathlift::detail {

using Cols = Eigen::Ref<Eigen::MatrixXd>;
using ConstCols = Eigen::Ref<const Eigen::MatrixXd>;

constexpr Index k_rows_per_task = 8192;  // rows of the d x k blocks per task (fixed shapes)

Index row_tasks(Index d);

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
Eigen::MatrixXd cross(const ConstCols& a, const ConstCols& b, int threads);

/// x -= a c, row block by row block.
void subtract(Cols x, const ConstCols& a, const Eigen::MatrixXd& c, int threads);

/// x -= a c, then a^T x, in one pass over the row blocks (each block of x is final once its
/// own rows are subtracted; the products summed in block order, as cross()).
Eigen::MatrixXd subtract_cross(Cols x, const ConstCols& a, const Eigen::MatrixXd& c, int threads);

/// The second pass of classical Gram-Schmidt on x, given c = a^T x (a orthonormal): x -= a c,
/// for a single column x (of norm `norm`) restricted to the columns j of a with which it still
/// has a cosine above 1e-12 (|c(j, 0)| > 1e-12 ||x||; nothing when there are none); the whole
/// pass for a block (its whitening may amplify a cosine by 1e5). Returns whether x changed. The
/// first pass (Lanczos's own coefficients subtracted) leaves cosines of 1e-16 to 2e-14 on resnet18,
/// where this pass cost as much as a third of the iteration; they grow where x is small beside K z,
/// and there it runs. The basis stays orthogonal to 1e-12, far inside the sqrt(eps) that Lanczos
/// needs (semi-orthogonality: H then equals V^T K V to working precision).
bool reorthogonalize(Cols x, const ConstCols& a, const Eigen::MatrixXd& c, double norm,
                     int threads);

/// x <- x c in place (c: k x k' with k' <= k; columns k'.. of x zeroed).
void transform(Cols x, const Eigen::MatrixXd& c, int threads);

/// An orthonormal basis of the span of the columns of the small matrix c (n x k), by the
/// eigendecomposition of c^T c (directions whose squared singular value is below `drop` times
/// the largest, or below 1e-28, dropped): the coefficients t (k x k') with (c t)^T (c t) = I.
Eigen::MatrixXd whitening(const Eigen::MatrixXd& g, double drop);

/// W (d x nw) made orthonormal and orthogonal to the orthonormal columns of x and p: two
/// rounds of projection and whitening. Returns the number of columns kept (the others zero).
Index orthonormalize(Cols w, const ConstCols& x, const ConstCols& p, int threads);

/// The convergence bound of a pair of Ritz value lambda_j, lambda_0 the largest: tolerance *
/// |lambda_j| plus what roundoff in a product allows, 64 eps sqrt(d) lambda_0.
double pair_bound(const EigenOptions& options, Index d, double lambda_j, double lambda_0);

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

}  // namespace pathlift::detail
