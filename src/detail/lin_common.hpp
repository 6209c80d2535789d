#pragma once
// Small helpers shared by forward.cpp and linearize.cpp.

#include <omp.h>

#include <string>

#include "pathlift/network.hpp"
#include "pathlift/paths.hpp"

namespace pathlift::detail {

/// The slope an activation uses on a negative pre-activation (identity: 1).
inline double lin_negative_slope(const Activation& act) {
  return act.kind == ActivationKind::identity ? 1.0 : act.negative_slope;
}

/// True when the activation has a kink at 0 (ReLU, leaky ReLU with a slope other than 1).
inline bool lin_is_kinked(const Activation& act) {
  return lin_negative_slope(act) != 1.0;
}

inline int lin_threads(const EngineOptions& options) {
  return options.threads > 0 ? options.threads : omp_get_max_threads();
}

/// Throws TooLarge when `bytes` exceed the memory limit; `what` names the object and its
/// sizes ("the forward pass on n = 10 samples, m = 6 nodes").
void lin_require_memory(double bytes, std::size_t max_memory, const std::string& what);

}  // namespace pathlift::detail
