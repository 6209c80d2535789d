#include "pathlift/scaled_real.hpp"

#include <cmath>
#include <limits>
#include <numbers>

#include "src/core/scaled_arith.hpp"

namespace pathlift {

double ScaledReal::value() const {
  return detail::dp_ldexp(mantissa, exponent);
}

double ScaledReal::log10() const {
  if (mantissa == 0) {
    return -std::numeric_limits<double>::infinity();
  }
  return std::log10(std::fabs(mantissa)) +
         static_cast<double>(exponent) * std::numbers::ln2 / std::numbers::ln10;
}

bool ScaledReal::fits_double() const {
  return mantissa == 0 || std::isnormal(value());
}

ScaledReal ScaledReal::from_double(double x) {
  ScaledReal r;
  detail::dp_normalize(x, 0, r.mantissa, r.exponent);
  return r;
}

ScaledReal scaled_root(const ScaledReal& x, double s) {
  if (x.mantissa == 0 || s == 1) {
    return x;
  }
  ScaledReal r;
  if (s == 2) {
    // sqrt(m 2^k) with k even: sqrt(m) 2^(k/2); odd: sqrt(2m) 2^((k-1)/2). Exact to rounding.
    const bool odd = (x.exponent & 1) != 0;
    const double m = std::sqrt(odd ? 2 * x.mantissa : x.mantissa);
    detail::dp_normalize(m, (odd ? x.exponent - 1 : x.exponent) / 2, r.mantissa, r.exponent);
    return r;
  }
  // (f 2^k)^(1/s) = 2^((log2 f + k) / s) with f in [0.5, 1): k / s is split into an integer
  // part q and a remainder computed exactly (fma), so a large k costs no precision.
  int e = 0;
  const double f = std::frexp(x.mantissa, &e);
  const auto k = static_cast<double>(x.exponent) + e;
  const double q0 = std::floor(k / s);
  const double rem = std::fma(-q0, s, k);        // in [0, s)
  const double frac = (std::log2(f) + rem) / s;  // in [-1/s, 1)
  const double fi = std::floor(frac);
  const double q = q0 + fi;
  if (!(std::fabs(q0) < 0x1p62) || !(std::fabs(q) < 0x1p62)) {
    // Only for absurd s (e.g. 1e-300): 2^(+-2^62) stands for "beyond any scale" (value() is
    // inf or 0), and the exponent stays representable.
    constexpr std::int64_t far = std::int64_t{1} << 62;
    return ScaledReal{1.0, q > 0 ? far : -far};
  }
  detail::dp_normalize(std::exp2(frac - fi), static_cast<std::int64_t>(q), r.mantissa, r.exponent);
  return r;
}

}  // namespace pathlift
