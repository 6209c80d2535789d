#pragma once
// Eigenpairs of the path kernel on a matrix-free block product (kernel.hpp): LOBPCG, and the
// residuals of any eigenpairs, shared by the DAG (kernel_spectrum.cpp) and the layer graph
// (layer_dp.cpp).

#include <Eigen/Core>
#include <functional>

#include "pathlift/kernel.hpp"

namespace pathlift::detail {

/// out = K v for the column-major d x k blocks v and out (k columns, one sweep).
using BlockProduct = std::function<void(const double* v, double* out, Index k)>;

/// LOBPCG's block size: options.subspace, or count + max(2, count / 2).
Index lobpcg_block(Index count, const EigenOptions& options);

/// The bytes of LOBPCG's two d x 3 block matrices of doubles (S = [X W P] and K S).
double lobpcg_bytes(Index d, Index block);

/// The `count` largest eigenpairs of the symmetric positive semi-definite d x d operator K by
/// LOBPCG (Knyazev's locally optimal block preconditioned conjugate gradient, without a
/// preconditioner): a block of m = lobpcg_block(count, options) vectors,
/// each iteration one product K W of its unconverged residual directions and a Rayleigh-Ritz
/// step on [X, W, P], the basis made well-conditioned by the eigendecomposition of its Gram
/// matrix (directions below 1e-10 of the largest dropped), so close eigenvalues do not stall
/// it. An eigenpair has converged when ||K x - lambda x|| <= tolerance * lambda + 64 eps
/// sqrt(d) lambda_max (the second term: what roundoff in a product allows); the residuals of the
/// result come from a fresh product, never from the recurrence. Deterministic (a fixed random
/// start). Throws std::invalid_argument when 3 m > d (the dense method serves) or for bad options,
/// TooLarge when the 2 x d x 3m blocks exceed options.engine.max_memory. Progress: the residual's
/// way down to the tolerance.
KernelEigenvalues lobpcg_top_eigenpairs(Index d, const BlockProduct& apply, Index count,
                                        const EigenOptions& options);

/// ||K v_j - lambda_j v_j|| / lambda_j for the columns of `vectors` (one block product; +inf
/// for lambda_j = 0 with a non-zero residual, 0 when both are 0).
Eigen::VectorXd eigen_residuals(const BlockProduct& apply, const Eigen::VectorXd& values,
                                const Eigen::MatrixXd& vectors);

/// Each column scaled to unit norm (an orthonormalised basis drifts from it by rounding, 1e-10
/// after many LOBPCG steps) and its sign fixed so that its entry of largest magnitude is
/// positive (the first such entry): eigenvectors that do not depend on the method or the start.
void fix_signs(Eigen::MatrixXd& vectors);

}  // namespace pathlift::detail
