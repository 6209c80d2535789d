#include "src/core/modular_field.hpp"

#include <cmath>

#include <fmt/format.h>

#include <stdexcept>

namespace pathlift::detail {

namespace {

std::uint64_t mulmod_slow(std::uint64_t a, std::uint64_t b, std::uint64_t n) {
  return static_cast<std::uint64_t>(static_cast<u128>(a) * b % n);
}

std::uint64_t powmod_slow(std::uint64_t a, std::uint64_t e, std::uint64_t n) {
  std::uint64_t r = 1 % n;
  a %= n;
  while (e != 0) {
    if ((e & 1) != 0) {
      r = mulmod_slow(r, a, n);
    }
    a = mulmod_slow(a, a, n);
    e >>= 1;
  }
  return r;
}

}  // namespace

bool modular_is_prime(std::uint64_t n) {
  if (n < 2) {
    return false;
  }
  constexpr std::uint64_t bases[] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37};
  for (const std::uint64_t q : bases) {
    if (n % q == 0) {
      return n == q;
    }
  }
  std::uint64_t d = n - 1;
  int s = 0;
  while ((d & 1) == 0) {
    d >>= 1;
    ++s;
  }
  for (const std::uint64_t a : bases) {
    std::uint64_t x = powmod_slow(a, d, n);
    if (x == 1 || x == n - 1) {
      continue;
    }
    bool composite = true;
    for (int i = 1; i < s; ++i) {
      x = mulmod_slow(x, x, n);
      if (x == n - 1) {
        composite = false;
        break;
      }
    }
    if (composite) {
      return false;
    }
  }
  return true;
}

void modular_require_prime(std::uint64_t p, const char* what) {
  if (p >= (std::uint64_t{1} << 63) || !modular_is_prime(p)) {
    throw std::invalid_argument(
        fmt::format("{}: the modulus {} is not a prime below 2^63", what, p));
  }
}

ModField::ModField(std::uint64_t p) : m_p(p), m_odd(p % 2 == 1) {
  modular_require_prime(p, "modular arithmetic");
  if (m_odd) {
    std::uint64_t inv = p;  // p * p = 1 mod 8: 3 correct bits, doubled by each Newton step
    for (int i = 0; i < 5; ++i) {
      inv *= 2 - p * inv;
    }
    m_neg_inv = 0 - inv;
    const std::uint64_t r1 = static_cast<std::uint64_t>((static_cast<u128>(1) << 64) % p);
    m_r2 = mulmod_slow(r1, r1, p);
    m_one = r1;
  }
}

std::uint64_t ModField::from_dyadic(double x) const {
  if (x == 0) {
    return 0;
  }
  // x = m 2^(e - 53) with |m| < 2^53 an integer.
  int e = 0;
  const double frac = std::frexp(x, &e);
  const auto m = static_cast<std::int64_t>(std::ldexp(frac, 53));
  std::uint64_t r = from_int(m);
  const int shift = e - 53;
  std::uint64_t base = from_int(shift >= 0 ? 2 : static_cast<std::int64_t>((m_p + 1) / 2));
  for (unsigned k = static_cast<unsigned>(shift >= 0 ? shift : -shift); k > 0; k >>= 1U) {
    if ((k & 1U) != 0) {
      r = mul(r, base);
    }
    base = mul(base, base);
  }
  return r;
}

std::uint64_t ModField::inv(std::uint64_t a) const {
  if (a == 0) {
    throw std::domain_error("modular inverse of 0");
  }
  std::uint64_t e = m_p - 2;
  std::uint64_t r = m_one;
  std::uint64_t base = a;
  while (e != 0) {
    if ((e & 1) != 0) {
      r = mul(r, base);
    }
    base = mul(base, base);
    e >>= 1;
  }
  return r;
}

}  // namespace pathlift::detail
