#pragma once
// The rules of the path-metric shared by the DAG (path_metric.cpp) and the layer graph
// (layer_dp.cpp): when the telescoping sum is the metric (dominance), the differences it weighs
// the edges by, and the Lipschitz bound's detour through the point that zeroes the
// disagreeing signs.

#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "pathlift/path_metric.hpp"
#include "src/core/scaled_arith.hpp"

namespace pathlift::detail {

/// |b_k| <= |a_k| with the same sign, or b_k = 0, for every k.
inline bool dominates(std::span<const double> a, std::span<const double> b) {
  for (std::size_t k = 0; k < a.size(); ++k) {
    if (b[k] != 0 &&
        (std::signbit(a[k]) != std::signbit(b[k]) || std::fabs(b[k]) > std::fabs(a[k]))) {
      return false;
    }
  }
  return true;
}

/// |a_k - b_k| for every k, as values[k] * 2^exponent: exponent 0, or 1 (every value halved)
/// when a difference overflows (1.5e308 and -1.5e308): the edge terms of the telescoping sum
/// take it with their scale.
struct AbsDifferences {
  std::vector<double> values;
  std::int64_t exponent = 0;
};

inline AbsDifferences abs_differences(std::span<const double> a, std::span<const double> b) {
  AbsDifferences out{std::vector<double>(a.size()), 0};
  bool finite = true;
  for (std::size_t k = 0; k < a.size(); ++k) {
    out.values[k] = std::fabs(a[k] - b[k]);
    finite = finite && std::isfinite(out.values[k]);
  }
  if (!finite) {
    // Halving is exact for the entries that overflowed (they are near 2^1024) and loses at most
    // the last bit of a subnormal difference.
    for (std::size_t k = 0; k < a.size(); ++k) {
      out.values[k] = std::fabs(0.5 * a[k] - 0.5 * b[k]);
    }
    out.exponent = 1;
  }
  return out;
}

/// x + y for x, y >= 0 (scaled).
inline ScaledReal scaled_add(const ScaledReal& x, const ScaledReal& y) {
  double m = 0;
  std::int64_t k = dp_no_exponent;
  for (const ScaledReal& z : {x, y}) {
    if (!z.is_zero()) {
      dp_merge(m, k, z.mantissa, z.exponent);
    }
  }
  return m == 0 ? ScaledReal{} : ScaledReal{m, k};
}

/// The path-metric from the telescoping sum `telescope(a, b)` (forward at |b|, backward at |a|).
/// When one vector dominates the other (dominates(a, b)), every term of the sum is >= 0 and
/// prod_p |a| - prod_p |b| = sum_{k in p} (|a_k| - |b_k|) prod_{j before k} |b_j|
/// prod_{j after k} |a_j| exactly: the sum is the metric, summed without the cancellation of
/// ||Phi(a)||_1 - ||Phi(b)||_1 (pruning a weight of 1e-18 beside norms of order 1 gave 0).
/// Otherwise it bounds the metric, in both orders: the smaller.
template <class Telescope>
PathMetric path_metric_by(std::span<const double> theta, std::span<const double> theta2,
                          const Telescope& telescope) {
  if (dominates(theta, theta2)) {
    return {telescope(theta, theta2), true};
  }
  if (dominates(theta2, theta)) {
    return {telescope(theta2, theta), true};
  }
  // Both orders bound the metric (the telescoping is not symmetric): the smaller one.
  const ScaledReal ab = telescope(theta, theta2);
  const ScaledReal ba = telescope(theta2, theta);
  const bool ab_smaller = ab.is_zero() || (!ba.is_zero() && ab.log10() <= ba.log10());
  return {ab_smaller ? ab : ba, false};
}

/// The Lipschitz constant from a path-metric function metric(a, b).
template <class Metric>
LipschitzBound lipschitz_bound_by(std::span<const double> theta, std::span<const double> theta2,
                                  const Metric& metric) {
  LipschitzBound out;
  std::vector<double> agreeing(theta.begin(), theta.end());
  for (std::size_t k = 0; k < theta.size(); ++k) {
    if (theta[k] != 0 && theta2[k] != 0 && std::signbit(theta[k]) != std::signbit(theta2[k])) {
      agreeing[k] = 0.0;
      ++out.sign_changes;
    }
  }
  if (out.sign_changes == 0) {
    const PathMetric m = metric(theta, theta2);
    out.constant = m.value;
    out.exact = m.exact;
    return out;
  }
  const PathMetric first = metric(theta, agreeing);
  const PathMetric second = metric(agreeing, theta2);
  out.constant = scaled_add(first.value, second.value);
  return out;
}

}  // namespace pathlift::detail
