#include "pathlift/mod_p.hpp"

#include <fmt/format.h>

#include <cmath>
#include <random>
#include <stdexcept>

#include "src/core/modular_field.hpp"

namespace pathlift {

bool is_prime(std::uint64_t n) {
  return detail::modular_is_prime(n);
}

std::uint64_t random_prime() try {
  std::random_device device;  // the operating system's entropy, 32 bits a call
  for (;;) {
    const std::uint64_t bits = (std::uint64_t{device()} << 32) | device();
    // Odd, in [2^60, 2^61): 59 random bits between the leading and the last one.
    const std::uint64_t n =
        (std::uint64_t{1} << 60) | ((bits & ((std::uint64_t{1} << 59) - 1)) << 1) | 1;
    if (detail::modular_is_prime(n)) {
      return n;
    }
  }
} catch (const std::exception& e) {
  throw std::runtime_error(fmt::format(
      "random_prime: no random numbers from the operating system ({}); give a prime instead",
      e.what()));
}

std::uint64_t dyadic_residue(double x, std::uint64_t p) {
  detail::modular_require_prime(p, "dyadic_residue");
  if (p == 2) {
    throw std::invalid_argument(
        "dyadic_residue: the prime must be odd (2 divides the denominators of doubles)");
  }
  if (!std::isfinite(x)) {
    throw std::invalid_argument(fmt::format("dyadic_residue: {} is not a finite number", x));
  }
  const detail::ModField f(p);
  return f.to_residue(f.from_dyadic(x));
}

}  // namespace pathlift
