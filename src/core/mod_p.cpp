#include "pathlift/mod_p.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "src/core/modular_field.hpp"

namespace pathlift {

bool is_prime(std::uint64_t n) {
  return detail::modular_is_prime(n);
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
  if (x == 0) {
    return 0;
  }
  // x = m 2^(e - 53) with |m| < 2^53 an integer.
  int e = 0;
  const double frac = std::frexp(x, &e);
  const auto m = static_cast<std::int64_t>(std::ldexp(frac, 53));
  const detail::ModField f(p);
  std::uint64_t r = f.from_int(m);
  const int shift = e - 53;
  const std::uint64_t two = f.from_int(shift >= 0 ? 2 : static_cast<std::int64_t>((p + 1) / 2));
  std::uint64_t base = two;
  for (unsigned k = static_cast<unsigned>(shift >= 0 ? shift : -shift); k > 0; k >>= 1U) {
    if ((k & 1U) != 0) {
      r = f.mul(r, base);
    }
    base = f.mul(base, base);
  }
  return f.to_residue(r);
}

}  // namespace pathlift
