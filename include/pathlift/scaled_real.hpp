#pragma once
/// \file scaled_real.hpp
/// ScaledReal: the number type of the path-free sums (path-norms, traces of the kernel), a
/// double mantissa with a 64-bit binary exponent, right far beyond double's range.

#include <cstdint>

namespace pathlift {

/// A real number that may lie outside double's range: mantissa * 2^exponent. Zero is stored
/// as mantissa 0. Produced by the path-free computations (path-norms, trace of the kernel).
struct ScaledReal {
  double mantissa = 0;
  std::int64_t exponent = 0;

  /// The value as a double: +-inf beyond double's range, 0 (or a subnormal) below it.
  [[nodiscard]] double value() const;
  /// log10 |x| (exact to rounding whatever the exponent); -inf for 0.
  [[nodiscard]] double log10() const;
  /// True when value() represents the number without overflow or underflow to zero.
  [[nodiscard]] bool fits_double() const;
  [[nodiscard]] bool is_zero() const { return mantissa == 0; }

  /// x as a ScaledReal (x finite).
  static ScaledReal from_double(double x);
};

/// x^(1/s) for x >= 0 and s > 0 (exact square root for s = 2, identity for s = 1).
ScaledReal scaled_root(const ScaledReal& x, double s);

}  // namespace pathlift
