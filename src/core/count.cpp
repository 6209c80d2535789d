#include "pathlift/count.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "pathlift/error.hpp"
#include "src/core/checked.hpp"

namespace pathlift {

Count Count::from_log10(double log10_value) {
  Count c;
  c.m_exact = false;
  c.m_log10 = log10_value;
  return c;
}

std::uint64_t Count::value() const {
  if (!m_exact) {
    throw CountOverflow(
        fmt::format("count ~10^{:.3f} does not fit in 64 bits (max ~1.8e19)", m_log10));
  }
  return m_value;
}

double Count::approx() const {
  if (m_exact) {
    return static_cast<double>(m_value);
  }
  return std::pow(10.0, m_log10);  // inf beyond double's range
}

double Count::log10() const {
  if (m_exact) {
    return m_value == 0 ? -std::numeric_limits<double>::infinity()
                        : std::log10(static_cast<double>(m_value));
  }
  return m_log10;
}

std::string Count::to_string() const {
  if (m_exact) {
    return std::to_string(m_value);
  }
  if (m_log10 < 300) {
    return fmt::format("~{:.6e}", approx());
  }
  return fmt::format("~10^{:.6f}", m_log10);
}

namespace {
double log10_sum(double a, double b) {
  const double hi = std::max(a, b);
  const double lo = std::min(a, b);
  return hi + std::log10(1.0 + std::pow(10.0, lo - hi));
}
}  // namespace

Count operator+(const Count& a, const Count& b) {
  if (a.m_exact && b.m_exact) {
    std::uint64_t sum = 0;
    if (!detail::add_overflows(a.m_value, b.m_value, sum)) {
      return Count(sum);
    }
  }
  if (a.is_zero()) {
    return b;
  }
  if (b.is_zero()) {
    return a;
  }
  return Count::from_log10(log10_sum(a.log10(), b.log10()));
}

Count operator*(const Count& a, const Count& b) {
  if (a.is_zero() || b.is_zero()) {
    return Count(0);
  }
  if (a.m_exact && b.m_exact) {
    std::uint64_t prod = 0;
    if (!detail::mul_overflows(a.m_value, b.m_value, prod)) {
      return Count(prod);
    }
  }
  return Count::from_log10(a.log10() + b.log10());
}

}  // namespace pathlift
