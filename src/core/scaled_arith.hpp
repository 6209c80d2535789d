#pragma once
// Scaled doubles m * 2^k: the arithmetic of ScaledReal (scaled_real.hpp) and of the scaled
// dynamic programmes (src/dp/dp_scaled.hpp, the layer DP). A value is m * 2^k with m = 0
// or 2^-256 <= |m| <= 2^256 after dp_normalize.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace pathlift::detail {

inline constexpr double dp_hi = 0x1p256;
inline constexpr double dp_lo = 0x1p-256;
inline constexpr double dp_tiny = 0x1p-600;

/// A shift for ldexp, clamped (beyond +-2200 the result is 0 or inf anyway).
inline int dp_shift(std::int64_t s) {
  return static_cast<int>(std::clamp<std::int64_t>(s, -2200, 2200));
}

inline double dp_ldexp(double x, std::int64_t s) {
  return s == 0 ? x : std::ldexp(x, dp_shift(s));
}

/// True when a fast sum must be recomputed term by term: zero, below 2^-600, inf or NaN.
inline bool dp_suspect(double acc) {
  const double a = std::fabs(acc);
  return !(a >= dp_tiny && a <= std::numeric_limits<double>::max());
}

/// acc * 2^K as (m, k) with m in [2^-256, 2^256] (or 0; a non-finite acc is kept as is).
inline void dp_normalize(double acc, std::int64_t K, double& m, std::int64_t& k) {
  const double a = std::fabs(acc);
  if ((a >= dp_lo && a <= dp_hi) || acc == 0 || !std::isfinite(acc)) {
    m = acc;
    k = K;
    return;
  }
  int e = 0;
  m = std::frexp(acc, &e);
  k = K + e;
}

/// Exponent of an accumulator that has not received a term yet.
inline constexpr std::int64_t dp_no_exponent = std::numeric_limits<std::int64_t>::min();

/// Adds term * 2^tk to the accumulator (m, k), whose exponent may differ. The accumulator's
/// exponent becomes max(k, tk) even for a zero term: a term that underflowed is then small
/// relative to the accumulator's unit, so the final dp_suspect check also covers it.
inline void dp_merge(double& m, std::int64_t& k, double term, std::int64_t tk) {
  if (tk > k) {
    m = (m == 0 ? 0.0 : dp_ldexp(m, k - tk)) + term;
    k = tk;
  } else {
    m += dp_ldexp(term, tk - k);
  }
}

}  // namespace pathlift::detail
