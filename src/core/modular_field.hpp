#pragma once
// Arithmetic modulo a prime p < 2^63 for the rank certificates.
//
// Odd primes use Montgomery multiplication (R = 2^64): values are kept in Montgomery form
// x R mod p inside the elimination kernels, so a product costs three 64-bit multiplications
// and no division. p = 2 takes a plain path (Montgomery needs an odd modulus).

#include <cstdint>

namespace pathlift::detail {

__extension__ typedef unsigned __int128 u128;  // NOLINT(modernize-use-using)

/// Deterministic Miller-Rabin for 64-bit n (the first 12 primes as bases are enough).
bool modular_is_prime(std::uint64_t n);

/// Throws std::invalid_argument unless p is a prime < 2^63 (`what` names the caller).
void modular_require_prime(std::uint64_t p, const char* what);

/// The field Z/pZ. Elements are stored in an internal form (Montgomery form for odd p);
/// from_int()/to_int() convert. Zero is 0 in both forms.
class ModField {
 public:
  explicit ModField(std::uint64_t p);

  [[nodiscard]] std::uint64_t prime() const { return m_p; }

  /// The residue of an integer, in internal form.
  [[nodiscard]] std::uint64_t from_int(std::int64_t v) const {
    const std::int64_t p = static_cast<std::int64_t>(m_p);
    std::int64_t r = v % p;
    if (r < 0) {
      r += p;
    }
    return from_residue(static_cast<std::uint64_t>(r));
  }
  /// A residue in [0, p), to internal form.
  [[nodiscard]] std::uint64_t from_residue(std::uint64_t r) const {
    return m_odd ? redc(static_cast<u128>(r) * m_r2) : r;
  }
  /// Internal form back to the residue in [0, p).
  [[nodiscard]] std::uint64_t to_residue(std::uint64_t a) const { return m_odd ? redc(a) : a; }

  [[nodiscard]] std::uint64_t add(std::uint64_t a, std::uint64_t b) const {
    const std::uint64_t s = a + b;  // < 2^64 since a, b < p < 2^63
    return s >= m_p ? s - m_p : s;
  }
  [[nodiscard]] std::uint64_t sub(std::uint64_t a, std::uint64_t b) const {
    return a >= b ? a - b : a + m_p - b;
  }
  [[nodiscard]] std::uint64_t neg(std::uint64_t a) const { return a == 0 ? 0 : m_p - a; }
  [[nodiscard]] std::uint64_t mul(std::uint64_t a, std::uint64_t b) const {
    return m_odd ? redc(static_cast<u128>(a) * b) : (a * b) % m_p;
  }
  /// The image of a finite double x = m 2^e (m an integer) under Z[1/2] -> Z/pZ, in internal
  /// form; p must be odd (2 invertible) and x finite, which the caller has checked
  /// (dyadic_residue, mod_p.hpp, is the checked form). Complexity: O(log |e|).
  [[nodiscard]] std::uint64_t from_dyadic(double x) const;
  /// The inverse of a non-zero element (Fermat: a^(p-2)).
  [[nodiscard]] std::uint64_t inv(std::uint64_t a) const;
  /// The internal form of 1.
  [[nodiscard]] std::uint64_t one() const { return m_one; }

 private:
  // Montgomery reduction: t < p * 2^64 -> t / 2^64 mod p, in [0, p).
  [[nodiscard]] std::uint64_t redc(u128 t) const {
    const std::uint64_t m = static_cast<std::uint64_t>(t) * m_neg_inv;
    const u128 s = t + static_cast<u128>(m) * m_p;  // no overflow: p < 2^63
    const std::uint64_t u = static_cast<std::uint64_t>(s >> 64);
    return u >= m_p ? u - m_p : u;
  }

  std::uint64_t m_p;
  bool m_odd;
  std::uint64_t m_neg_inv = 0;  // -p^-1 mod 2^64
  std::uint64_t m_r2 = 0;       // 2^128 mod p
  std::uint64_t m_one = 1;      // internal form of 1
};

}  // namespace pathlift::detail
