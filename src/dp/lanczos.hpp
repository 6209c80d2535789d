#pragma once
// The matrix-free eigensolvers of kernel_top_eigenvalues on any product, shared by the DAG
// (kernel_spectrum.cpp) and the layer graph (layer_dp.cpp).

#include "pathlift/kernel.hpp"
#include "src/dp/detail/block_eigen.hpp"

namespace pathlift::detail {

/// The matrix-free method of options.method: LOBPCG when asked (lobpcg_top_eigenpairs), else
/// (lanczos, automatic) thick-restart block Lanczos (lanczos_top_eigenpairs) with a block of 1
/// vector, or of count vectors when the network has twin units (`twins`: equal incoming weights
/// from the same sources, detail::any_equal_rows), the mark of a permutation symmetry of the
/// network, the way eigenvalues repeat in practice (a block of count finds them in one run; a
/// block of 1 finds their copies by its multiplicity check, a run each).
/// The caller handles dense.
KernelEigenvalues matrix_free_top_eigenpairs(Index d, const BlockProduct& apply, Index count,
                                             bool twins, const EigenOptions& options);

}  // namespace pathlift::detail
