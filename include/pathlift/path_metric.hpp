#pragma once
/// \file path_metric.hpp
/// The l1 path-metric ||Phi(theta) - Phi(theta2)||_1 and the Lipschitz bound it gives (Gonon,
/// Brisebarre, Riccietti, Gribonval, ICML 2025): for parameters with the same signs coordinate
/// by coordinate (a zero agreeing with either sign),
///   ||f_theta(x) - f_theta2(x)||_1 <= max(||x||_inf, 1) ||Phi(theta) - Phi(theta2)||_1
/// for every input x, on any DAG ReLU network (convolutions, pooling, skips, frozen BatchNorm).
/// It certifies pruning and quantization, and is invariant under rescalings. No path is
/// enumerated: one forward and one backward pass (two of each without dominance;
/// docs/path_metric.md). The layer graph's forms are in layer_dp.hpp, the Model's in
/// path_free.hpp.

#include <span>
#include <string>

#include "pathlift/network.hpp"
#include "pathlift/options.hpp"
#include "pathlift/scaled_real.hpp"
#include "pathlift/types.hpp"

namespace pathlift {

/// The path-metric, or an upper bound of it.
struct PathMetric {
  /// ||Phi(theta) - Phi(theta2)||_1 when exact, else an upper bound of it (a ScaledReal: right
  /// beyond double's range).
  ScaledReal value;
  /// True when one of theta, theta2 dominates the other: |theta2_k| <= |theta_k| with the same
  /// sign or theta2_k = 0 for every k (pruning, shrinking), or the other way round. Then every
  /// |Phi_p(theta2)| <= |Phi_p(theta)| with the same sign, the metric is
  /// ||Phi(theta)||_1 - ||Phi(theta2)||_1, and the telescoping sum below equals it term by term:
  /// it is computed so, a sum of terms >= 0 (no cancellation: right to rounding relative to the
  /// metric itself, however small beside the norms).
  bool exact = false;
};

/// ||Phi(theta) - Phi(theta2)||_1. Exact when one vector dominates the other
/// (PathMetric::exact: the telescoping sum with the dominated vector as b, where it equals the
/// metric); otherwise the smaller of the telescoping bound and the same with theta and theta2
/// swapped (so the result is symmetric)
///   sum_p sum_{k in p} |a_k - b_k| prod_{j before k} |b_j| prod_{j after k} |a_j|
///   = sum over edges e of |a_e - b_e| F_b(src e) G_a(dst e)
/// (a = theta, b = theta2; |prod a - prod b| <= that sum term by term; F_b the forward sums
/// of |theta2| from the inputs, G_a the backward sums of |theta| to the outputs), >= the
/// metric, equal to it when theta and theta2 differ on at most one edge of every path. A
/// difference |a_e - b_e| beyond float64 (1.5e308 against -1.5e308) is taken halved with its
/// scale: the value is a ScaledReal, right beyond float64.
/// Throws std::invalid_argument for a theta or theta2 without d finite entries (naming it).
/// Complexity: O(m + d): two forward and two backward passes (one of each when exact).
PathMetric path_metric(const Network& net, std::span<const double> theta,
                       std::span<const double> theta2, const EngineOptions& options = {});

/// The constant C of ||f_theta(x) - f_theta2(x)||_1 <= max(||x||_inf, 1) C, for every input x.
struct LipschitzBound {
  ScaledReal constant;     ///< C
  bool exact = false;      ///< C is the path-metric itself (signs agree, one dominates)
  Index sign_changes = 0;  ///< coordinates where theta and theta2 have opposite signs
};

/// The metric as JSON: metric (null beyond double's range), log10_metric, exact.
std::string to_json(const PathMetric& metric, int indent = 2);

/// C for any pair. When the signs agree (coordinate by coordinate, 0 agreeing with both),
/// C = path_metric(theta, theta2). Otherwise through theta0 = theta with the disagreeing
/// coordinates set to 0, which agrees in sign with both (the triangle inequality):
/// C = path_metric(theta, theta0) (exact: theta dominates theta0) + path_metric(theta0,
/// theta2). Same errors and complexity as path_metric (twice with sign changes).
LipschitzBound lipschitz_bound(const Network& net, std::span<const double> theta,
                               std::span<const double> theta2, const EngineOptions& options = {});

/// The bound as JSON: lipschitz_constant (null beyond double's range), log10_lipschitz_constant,
/// lipschitz_exact, sign_changes (keys that sit beside the metric's in one object).
std::string to_json(const LipschitzBound& bound, int indent = 2);

}  // namespace pathlift
