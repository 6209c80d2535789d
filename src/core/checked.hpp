#pragma once
// Checked arithmetic on counts (igraph's safe_intop.h): one home for every count that must
// never wrap. The overflow policy is the caller's: `*_or_throw` throws TooLarge with the
// caller's message, `saturating_*` clamps at a cap, and the plain forms report overflow.

#include <cstdint>
#include <string_view>
#include <vector>

#include "pathlift/error.hpp"
#include "pathlift/types.hpp"

namespace pathlift::detail {

/// a + b into r; true on overflow (r is then unspecified).
template <class T>
[[nodiscard]] inline bool add_overflows(T a, T b, T& r) {
  return __builtin_add_overflow(a, b, &r);
}

/// a * b into r; true on overflow.
template <class T>
[[nodiscard]] inline bool mul_overflows(T a, T b, T& r) {
  return __builtin_mul_overflow(a, b, &r);
}

/// a + b, or TooLarge(message(), too_many_paths) on overflow; `message` is called only then.
template <class T, class Message>
inline T checked_add(T a, T b, const Message& message) {
  T r{};
  if (__builtin_add_overflow(a, b, &r)) {
    throw TooLarge(message(), TooLarge::Reason::too_many_paths);
  }
  return r;
}

/// a * b, or TooLarge(message()) on overflow.
template <class T, class Message>
inline T checked_mul(T a, T b, const Message& message) {
  T r{};
  if (__builtin_mul_overflow(a, b, &r)) {
    throw TooLarge(message(), TooLarge::Reason::too_many_paths);
  }
  return r;
}

/// min(a + b, cap) for 0 <= a, b <= cap (cap small enough that a + b cannot overflow).
template <class T>
[[nodiscard]] constexpr T saturating_add(T a, T b, T cap) {
  const T r = a + b;
  return r < cap ? r : cap;
}

/// a + b clamped at the type's maximum ("does not fit"), never wrapped.
[[nodiscard]] inline std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

/// a * b clamped at the type's maximum.
[[nodiscard]] inline std::uint64_t saturating_mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

/// The product of a shape's dims (its entries), or -1 when one is negative or the product
/// overflows 64 bits.
inline Index entries_of(const std::vector<Index>& dims) {
  Index n = 1;
  for (const Index d : dims) {
    if (d < 0 || mul_overflows(n, d, n)) {
      return -1;
    }
  }
  return n;
}

}  // namespace pathlift::detail
