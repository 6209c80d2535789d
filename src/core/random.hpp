#pragma once
// Reproducible random numbers: the same sequence on every platform and standard library
// (std::uniform_*_distribution are implementation-defined, so they are not used).

#include <cmath>
#include <cstdint>
#include <numbers>
#include <utility>
#include <vector>

namespace pathlift::detail {

class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : m_state(seed) {}

  std::uint64_t next() {
    std::uint64_t z = (m_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  /// Uniform integer in [0, n), n >= 1 (Lemire's method without the rejection's bias).
  std::uint64_t below(std::uint64_t n) {
    const std::uint64_t limit = (0 - n) % n;
    std::uint64_t x = next();
    while (x < limit) {
      x = next();
    }
    return x % n;
  }
  /// Standard normal (Box-Muller, both halves used).
  double normal() {
    if (m_has_spare) {
      m_has_spare = false;
      return m_spare;
    }
    double u1 = uniform();
    while (u1 <= 0.0) {
      u1 = uniform();
    }
    const double u2 = uniform();
    const double radius = std::sqrt(-2.0 * std::log(u1));
    m_spare = radius * std::sin(2.0 * std::numbers::pi * u2);
    m_has_spare = true;
    return radius * std::cos(2.0 * std::numbers::pi * u2);
  }

 private:
  std::uint64_t m_state;
  double m_spare = 0;
  bool m_has_spare = false;
};

template <class T>
void shuffle(std::vector<T>& items, SplitMix64& rng) {
  for (std::size_t i = items.size(); i > 1; --i) {
    std::swap(items[i - 1], items[rng.below(i)]);
  }
}

}  // namespace pathlift::detail
