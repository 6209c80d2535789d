#pragma once
/// \file magnitude.hpp
/// Magnitudes beyond floating point: the range of |Phi_p| and of the entries of dPhi over all
/// paths, by dynamic programming (no path enumerated), and the test of whether they fit a float
/// type. Phi and dPhi as sign and log10 magnitude, exact at any magnitude, are in lifting.hpp.
///
/// A product of weights overflows (inf) above the largest finite value of its type and loses
/// precision below the smallest normal one (subnormal, then 0). The range says, before anything
/// is computed, whether an entry of Phi or dPhi will; the computations that would produce such
/// entries are refused with RangeError (the CLI's exit 4), and the sign and log10 forms give the
/// exact answer instead (docs/conventions.md#magnitudes).

#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pathlift/network.hpp"
#include "pathlift/options.hpp"
#include "pathlift/sparse.hpp"

namespace pathlift {

/// The smallest and largest log10|x| over the non-zero values of a set (min > max when every
/// value is 0 or there is none). Values exactly 0 (a zero weight on the path) are not counted:
/// they are exact in any type.
struct LogRange {
  double min_log10 = std::numeric_limits<double>::infinity();
  double max_log10 = -std::numeric_limits<double>::infinity();

  [[nodiscard]] bool empty() const { return min_log10 > max_log10; }
};

/// The ranges of |Phi_p| over the paths and of |dPhi[p, k]| = |prod_{e in p, e != k} theta_e|
/// over the entries of dPhi (per edge: a parameter shared by several edges of a path adds its
/// terms, which this range does not follow).
struct LiftingRange {
  LogRange phi;
  LogRange jacobian;
  /// The products from the inputs to each node and from each node to the outputs (on a path):
  /// the prefix and suffix products that Phi and dPhi are computed from.
  LogRange partial;

  /// Whether Phi, dPhi and the products they are computed from fit T.
  template <class T>
  [[nodiscard]] bool fits_all() const;
};

/// The ranges at theta (d entries, checked as check_theta does), by one forward pass over the
/// edges in max-plus and min-plus arithmetic on log|theta_e|.
/// Complexity: O(m + d) time, O(m) memory.
LiftingRange lifting_range(const Network& net, std::span<const double> theta);

/// Throws RangeError naming `what` when one of `values` is not finite (overflow, or NaN from
/// inf - inf) or is subnormal (an underflow that lost precision): "3 of 4 values of f(X) are
/// not finite (overflow beyond 1.8e+308)". `hint` ends the message (the caller's way out).
/// The one check of a float64 result computed without a scale (forward outputs, K, diag K).
void require_representable(std::span<const double> values, std::string_view what,
                           std::string_view hint = {});

/// log10 of the largest finite T and of the smallest normal T (308.25 and -307.65 for double).
template <class T>
double max_log10_of() {
  return std::log10(static_cast<double>(std::numeric_limits<T>::max()));
}
template <class T>
double min_log10_of() {
  return std::log10(static_cast<double>(std::numeric_limits<T>::min()));
}

/// Whether every value of `range` is a normal number of T (or 0): no overflow, no underflow.
/// A margin of 1e-9 in log10 keeps the rounding of the products inside.
template <class T>
bool fits(const LogRange& range) {
  return range.empty() ||
         (range.max_log10 < max_log10_of<T>() - 1e-9 && range.min_log10 > min_log10_of<T>() + 1e-9);
}

template <class T>
bool LiftingRange::fits_all() const {
  return fits<T>(phi) && fits<T>(jacobian) && fits<T>(partial);
}

/// The message of a range that does not fit T, "" when it fits: "|Phi_p| reaches 10^2205.4,
/// beyond the largest float64 1.8e308 (overflow to inf)" and/or "... down to 10^-3300.1, below
/// the smallest normal float64 2.2e-308 (underflow)". `what` names the values ("|Phi_p|").
template <class T>
std::string range_problem(const LogRange& range, std::string_view what);

/// Throws RangeError when Phi (`jacobian` false) or dPhi (true) or the products they are computed
/// from do not fit T: "<what> cannot be computed in float64: |Phi_p| reaches 10^2205.4, ...".
template <class T>
void require_fits(const LiftingRange& range, bool jacobian, std::string_view what);

/// range_problem for every part of `range` that does not fit T, joined with "; " ("" when all
/// fit): the one description of a lifting out of range, for errors and warnings.
template <class T>
std::string describe_problems(const LiftingRange& range);

}  // namespace pathlift
