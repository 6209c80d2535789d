#pragma once
// Eigenpairs of the path kernel on a matrix-free block product (kernel.hpp): LOBPCG
// (block_eigen.cpp), block Lanczos (block_lanczos.cpp) and the residuals of any eigenpairs, shared
// by the DAG (kernel_spectrum.cpp) and the layer graph (layer_dp.cpp).

#include <Eigen/Core>
#include <functional>
#include <span>
#include <vector>

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

/// Lanczos's basis (options.subspace, or max(2 count + 1, count + 20) vectors), and the bytes of
/// its d x (basis + 2 blocks + 2 count) doubles (the eigenvectors and their products).
Index lanczos_basis(Index count, const EigenOptions& options);
double lanczos_bytes(Index d, Index count, Index block, Index basis);

/// The `count` largest eigenpairs of the symmetric d x d operator K by thick-restart block
/// Lanczos (Krylov-Schur: K V = V H + F S^T kept through each block step and restart, every
/// new block reorthogonalised against the basis once, the basis in fixed row blocks across
/// threads). A step costs one product per vector of the block and a pass over the basis (a
/// second on the basis columns the new block still leans on, block_basis.hpp's
/// reorthogonalize: usually none); a restart keeps the top Ritz vectors. A block of b vectors (1 to
/// count) finds up to b copies of a repeated eigenvalue; with b < count (a block of 1: the fewest
/// products) a converged run is followed by a multiplicity check: single-vector runs on K
/// deflated by the pairs found, from new random starts, until the largest eigenvalue beside them
/// is not above the count-th (each one above joins: a missed copy); a check that does not
/// converge gives status not_converged. Ritz residuals come from the relation; convergence (the
/// test of lobpcg_top_eigenpairs) is confirmed by fresh products, which give the residuals
/// reported. max_iterations caps the restarts of each run. Deterministic (fixed random starts).
/// Throws
/// std::invalid_argument for bad options, count >= d or a basis below count + 2 blocks, TooLarge
/// beyond options.engine.max_memory.
KernelEigenvalues lanczos_top_eigenpairs(Index d, const BlockProduct& apply, Index count,
                                         Index block, const EigenOptions& options);

/// Whether two of the rows 0..n-1 are equal entry for entry (bit patterns; -0 and 0 differ, as
/// no symmetry maps one to the other). row(i, scratch) returns row i, which may live in scratch.
/// Used to detect twin units (equal incoming weights from the same sources), without which
/// the network has no permutation symmetry and K no repeated eigenvalue from one.
bool any_equal_rows(Index n,
                    const std::function<std::span<const double>(Index, std::vector<double>&)>& row);

/// ||K v_j - lambda_j v_j|| for the columns of `vectors` (one block product).
Eigen::VectorXd residual_norms(const BlockProduct& apply, const Eigen::VectorXd& values,
                               const Eigen::MatrixXd& vectors);

/// norms_j / |lambda_j| (+inf for lambda_j = 0 with a non-zero norm, 0 when both are 0).
Eigen::VectorXd relative_residuals(const Eigen::VectorXd& norms, const Eigen::VectorXd& values);

/// ||K v_j - lambda_j v_j|| / lambda_j for the columns of `vectors` (one block product; +inf
/// for lambda_j = 0 with a non-zero residual, 0 when both are 0).
Eigen::VectorXd eigen_residuals(const BlockProduct& apply, const Eigen::VectorXd& values,
                                const Eigen::MatrixXd& vectors);

/// Each column scaled to unit norm (an orthonormalised basis drifts from it by rounding, 1e-10
/// after many LOBPCG steps) and its sign fixed so that its entry of largest magnitude is
/// positive (the first such entry): eigenvectors that do not depend on the method or the start.
void fix_signs(Eigen::MatrixXd& vectors);

}  // namespace pathlift::detail
