#pragma once
// The restarted Lanczos iteration of kernel_top_eigenvalues on any matrix-free product, shared
// by the DAG (kernel_spectrum.cpp) and the layer graph (layer_dp.cpp).

#include "pathlift/kernel.hpp"
#include "src/dp/detail/block_eigen.hpp"

namespace pathlift::detail {

/// The `count` largest eigenvalues of the symmetric d x d operator (Spectra's SymEigsSolver on
/// one column at a time), with the eigenvectors and their residuals when options.vectors.
/// Throws std::invalid_argument for count >= d or bad options; a failure to converge is a
/// status. options.engine.progress, when set, hears -1 when the iteration starts (its extent
/// is unknown until it converges) and 1 when it ends.
KernelEigenvalues lanczos_top_eigenvalues(Index d, const BlockProduct& apply, Index count,
                                          const EigenOptions& options);

/// The matrix-free method of options.method: Lanczos when asked, or for automatic when d < 3
/// x LOBPCG's block or its blocks exceed the memory limit; LOBPCG otherwise
/// (lobpcg_top_eigenpairs). The caller handles dense.
KernelEigenvalues matrix_free_top_eigenpairs(Index d, const BlockProduct& apply, Index count,
                                             const EigenOptions& options);

}  // namespace pathlift::detail
