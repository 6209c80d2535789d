#pragma once
// The range of the path kernel's diagonal on a layer graph, from its scaled sums (layer_dp.cpp):
// what path_free.cpp needs to tell a 0 of diag(K) from an underflow.

#include <span>

#include "pathlift/layers.hpp"
#include "pathlift/magnitude.hpp"
#include "pathlift/options.hpp"

namespace pathlift::detail {

/// log10 of the smallest and of the largest nonzero K[k, k] at theta (an empty range when K's
/// diagonal is 0), computed with a scale (no overflow, no underflow); the same passes as
/// kernel_diagonal. A graph whose parameter blocks repeat on a path is unrolled, and the range is
/// then that of dPhi[p, k]^2 (a bound: K[k, k] >= dPhi[p, k]^2). Throws TooLarge over
/// options.max_memory.
LogRange kernel_diagonal_range(const LayerGraph& graph, std::span<const double> theta,
                               const EngineOptions& options);

}  // namespace pathlift::detail
