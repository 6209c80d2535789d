#pragma once
// The rules of the path-metric shared by the DAG (path_metric.cpp) and the layer graph
// (layer_path_metric.cpp): which formula applies (dominance), the difference of two path-norms,
// and the Lipschitz bound's detour through the point that zeroes the disagreeing signs.

#include <cmath>
#include <span>
#include <vector>

#include "pathlift/path_metric.hpp"
#include "src/core/detail/scaled_arith.hpp"

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

/// x - y for x >= y >= 0 (scaled; 0 when y >= x to rounding).
inline ScaledReal scaled_difference(const ScaledReal& x, const ScaledReal& y) {
  if (y.is_zero()) {
    return x;
  }
  const double d = x.mantissa - dp_ldexp(y.mantissa, y.exponent - x.exponent);
  if (!(d > 0)) {
    return {};
  }
  ScaledReal out;
  dp_normalize(d, x.exponent, out.mantissa, out.exponent);
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

/// The path-metric from the L1 path-norm `norm1(theta)` and the telescoping bound
/// `telescope(a, b)` (forward at |b|, backward at |a|), the smaller of its two orders.
template <class Norm1, class Telescope>
PathMetric path_metric_by(std::span<const double> theta, std::span<const double> theta2,
                          const Norm1& norm1, const Telescope& telescope) {
  if (dominates(theta, theta2)) {
    return {scaled_difference(norm1(theta), norm1(theta2)), true};
  }
  if (dominates(theta2, theta)) {
    return {scaled_difference(norm1(theta2), norm1(theta)), true};
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
