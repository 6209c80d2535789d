#pragma once
// The restarted Lanczos iteration of kernel_top_eigenvalues on any matrix-free product, shared
// by the DAG (kernel_spectrum.cpp) and the layer graph (layer_dp.cpp).

#include <functional>

#include "pathlift/kernel.hpp"

namespace pathlift::detail {

/// The `count` largest eigenvalues of the symmetric d x d operator y = apply(x) (Spectra's
/// SymEigsSolver). Throws std::invalid_argument for count >= d or bad options; a failure to
/// converge is a status. options.engine.progress, when set, hears -1 when the iteration starts
/// (its extent is unknown until it converges) and 1 when it ends.
KernelEigenvalues lanczos_top_eigenvalues(Index d,
                                          const std::function<void(const double*, double*)>& apply,
                                          Index count, const EigenOptions& options);

}  // namespace pathlift::detail
