#pragma once
/// \file modular.hpp
/// Dense matrices of residues modulo a prime: the exact integer matrices (B^T B) whose rank
/// modulo p is a certified lower bound of their rank over Q.

#include <cstdint>
#include <vector>

#include "pathlift/types.hpp"

namespace pathlift {

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

/// The default prime for rank certificates: 2^61 - 1 (a Mersenne prime; products of two
/// residues fit in 128 bits).
inline constexpr std::uint64_t default_prime = (std::uint64_t{1} << 61) - 1;

}  // namespace pathlift
