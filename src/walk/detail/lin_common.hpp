#pragma once
// Small helpers shared by forward.cpp and linearize.cpp.

#include "pathlift/network.hpp"

namespace pathlift::detail {

/// The slope an activation uses on a negative pre-activation (identity: 1).
inline double lin_negative_slope(const Activation& act) {
  return act.kind == ActivationKind::identity ? 1.0 : act.negative_slope;
}

/// True when the activation has a kink at 0 (ReLU, leaky ReLU with a slope other than 1).
inline bool lin_is_kinked(const Activation& act) {
  return lin_negative_slope(act) != 1.0;
}

}  // namespace pathlift::detail
