#pragma once
/// \file balance.hpp
/// Rescalings chosen to balance a network before training, on any architecture pathlift
/// imports (per hidden unit on a DAG, per channel class with weight sharing), the function
/// unchanged: PathCond (Lebeurrier, Vayer, Gribonval, 2026) and ENorm (Stock et al., 2019).
/// Both act through the rescaling symmetries: log-scales alpha, one per free class of
/// parameter_classes() (symmetry.hpp), change theta_k into theta_k exp(c_k) with
/// c_k = alpha[target k] - alpha[source k]; Phi and the network's function stay the same.
/// docs/balance.md.

#include <span>
#include <string>
#include <vector>

#include "pathlift/model.hpp"
#include "pathlift/options.hpp"
#include "pathlift/types.hpp"

namespace pathlift {

struct BalanceOptions {
  /// Iterations at most: Newton steps on the log-scales, or coordinate-descent sweeps where a
  /// Newton step cannot decrease the objective (docs/balance.md).
  Index max_sweeps = 1000;
  /// Stop (converged) once the stationarity, the largest relative violation of the optimality
  /// condition over the classes (BalanceReport::stationarity), is at most this; a finite number
  /// >= 0.
  double tolerance = 1e-10;
  EngineOptions engine;  ///< for the kernel diagonal (path_cond) and the classes
};

struct BalanceReport {
  std::vector<double> theta;       ///< the rescaled theta (the same function)
  std::vector<double> log_scales;  ///< alpha, one per class
  Index classes = 0;               ///< free classes (hidden units, channel classes)
  Index sweeps = 0;                ///< iterations made (Newton steps and coordinate sweeps)
  bool converged = false;          ///< stationarity <= the tolerance
  double criterion_before = 0;     ///< the objective at theta
  double criterion_after = 0;      ///< the objective at the rescaled theta
  /// The largest relative violation of the stationarity condition over the classes (see
  /// path_cond, enorm).
  double stationarity = 0;
};

/// The report as JSON: classes, sweeps, converged, criterion_before, criterion_after and
/// stationarity (theta and log_scales, d and class-many numbers, are the caller's to write).
std::string to_json(const BalanceReport& report, int indent = 2);

/// Throws std::invalid_argument naming the option when max_sweeps < 0 or the tolerance is not a
/// finite number >= 0 (path_cond and enorm check their options with it; a caller may check them
/// before loading anything).
void check_balance_options(const BalanceOptions& options);

/// PathCond: the rescaling that minimises n log(sum_k G_kk) - sum_k log G_kk, G_kk the path
/// kernel's diagonal after rescaling (kernel_diagonal; a rescaling multiplies G_kk by
/// exp(-2 c_k)), n the parameters with G_kk > 0 (d when none is 0; those with G_kk = 0 do not
/// move the objective and are left out; the objective is 0 when none is counted). Convex in
/// alpha; damped Newton steps (the sparse Hessian over the classes solved by conjugate
/// gradients), and coordinate sweeps with each class's exact minimiser (a quadratic in
/// exp(2 alpha_h)) where a Newton step cannot decrease the objective; the G_kk held as logs where
/// float64 needs it (no square, ratio or discriminant leaves float64, whatever their
/// magnitudes); G is computed once. Stationarity per class h:
/// n (sum_{k out of h} G_kk - sum_{k into h} G_kk) / sum_k G_kk = |out(h)| - |in(h)| (biases
/// incoming); `stationarity` is the largest |left - right| / max(1, n (out + in) / sum), and
/// `converged` says it is within options.tolerance. Throws std::invalid_argument for bad options
/// (check_balance_options), a bad theta or a network whose classes are coupled
/// (ParameterClasses::constraints > 0, on the layer graph and on its unrolled network when that
/// fits: the latter merges equalities the former keeps as constraints), TooLarge or RangeError as
/// kernel_diagonal, RangeError naming the entry when a rescaled theta_k would leave float64's
/// normal range (nothing is returned then). Complexity: O(d) an iteration, plus a Newton step's
/// conjugate gradients (each O(pairs of classes a parameter joins)); kernel_diagonal once.
BalanceReport path_cond(const Model& model, std::span<const double> theta,
                        const BalanceOptions& options = {});

/// ENorm: the rescaling that minimises sum_k theta_k^2. At the optimum every class's incoming
/// and outgoing squared norms are equal (`stationarity`: the largest |in - out| / (in + out)); a
/// class with nothing in or nothing out is left alone. The same descent as path_cond, on log of
/// the sum of the squares; the squares are held as logs where float64 needs it (theta of any
/// magnitude float64 holds). Same errors as path_cond (no kernel diagonal).
BalanceReport enorm(const Model& model, std::span<const double> theta,
                    const BalanceOptions& options = {});

}  // namespace pathlift
