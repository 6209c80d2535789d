#pragma once
/// \file mod_p.hpp
/// The field Z/pZ as pathlift uses it: the default prime, dense matrices of residues, primality
/// and the residue of a double. Exact linear algebra over it is in modular.hpp.

#include <cstdint>
#include <vector>

#include "pathlift/types.hpp"

namespace pathlift {

/// The default prime for rank certificates: 2^61 - 1 (a Mersenne prime; products of two
/// residues fit in 128 bits).
inline constexpr std::uint64_t default_prime = (std::uint64_t{1} << 61) - 1;

/// A rows x cols matrix of residues in [0, prime), row-major.
struct ModMatrix {
  std::uint64_t prime = 0;
  Index rows = 0;
  Index cols = 0;
  std::vector<std::uint64_t> data;

  [[nodiscard]] std::uint64_t& at(Index r, Index c) {
    return data[static_cast<std::size_t>(r * cols + c)];
  }
  [[nodiscard]] std::uint64_t at(Index r, Index c) const {
    return data[static_cast<std::size_t>(r * cols + c)];
  }
};

/// Whether n is prime (deterministic Miller-Rabin, exact for every 64-bit n).
bool is_prime(std::uint64_t n);

/// A prime drawn uniformly at random among the primes in [2^60, 2^61) (odd numbers drawn from
/// std::random_device until is_prime accepts one), for Monte Carlo certificates: a non-zero
/// integer below 2^B has at most B / 60 prime factors in that range, so a random prime divides
/// it with probability at most (B / 60) / random_prime_count.
std::uint64_t random_prime();

/// A lower bound on the number of primes in [2^60, 2^61), by Dusart's bounds on pi(x):
/// pi(2^61) > x / ln x (1 + 1 / ln x) = 5.58e16 and pi(2^60) < x / ln x (1 + 1.2762 / ln x) =
/// 2.86e16.
inline constexpr double random_prime_count = 2.7e16;

/// The residue modulo an odd prime p < 2^63 of a finite double x. Every finite double is a
/// dyadic rational m 2^e (m an integer), and 2 is invertible mod an odd p, so this is the image
/// of x under the ring map Z[1/2] -> Z/pZ: sums and products of doubles, taken exactly, map to
/// sums and products of their residues. Throws std::invalid_argument for a non-finite x or a p
/// that is not an odd prime < 2^63. Complexity: O(log p).
std::uint64_t dyadic_residue(double x, std::uint64_t p);

}  // namespace pathlift
