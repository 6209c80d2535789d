#pragma once
// A non-negative product of doubles as a mantissa in [0.5, 1) and an exponent, or 0: the values
// of the max-plus passes (the L^inf path-norm, norms.cpp; the heaviest paths' search,
// layer_dp/heavy_paths.cpp), exact to the rounding of each multiplication whatever the range.

#include <cmath>
#include <cstdint>

namespace pathlift::detail {

struct MaxValue {
  double m = 0;
  std::int64_t k = 0;

  /// 1.
  static constexpr MaxValue one() { return {0.5, 1}; }

  [[nodiscard]] bool less(const MaxValue& o) const {
    return m == 0 ? o.m != 0 : (o.m != 0 && (k < o.k || (k == o.k && m < o.m)));
  }
  [[nodiscard]] bool same(const MaxValue& o) const { return m == o.m && (m == 0 || k == o.k); }
  /// This times |w|.
  [[nodiscard]] MaxValue times(double w) const {
    if (m == 0 || w == 0) {
      return {};
    }
    int e = 0;
    const double x = std::frexp(m * std::fabs(w), &e);
    return {x, k + e};
  }
  [[nodiscard]] MaxValue times(const MaxValue& o) const {
    if (m == 0 || o.m == 0) {
      return {};
    }
    int e = 0;
    const double x = std::frexp(m * o.m, &e);
    return {x, k + o.k + e};
  }
  /// The value rounded to `bits` bits of mantissa: products of the same factors multiplied in
  /// different orders, which differ in the last places, compare equal.
  [[nodiscard]] MaxValue coarse(int bits) const {
    if (m == 0) {
      return {};
    }
    const double q = std::round(std::ldexp(m, bits));
    return q == std::ldexp(1.0, bits) ? MaxValue{0.5, k + 1} : MaxValue{std::ldexp(q, -bits), k};
  }
};

}  // namespace pathlift::detail
