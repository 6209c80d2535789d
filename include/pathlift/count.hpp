#pragma once
/// \file count.hpp
/// Count: the number type of every path count (P, nnz(B), paths per node), exact in 64 bits
/// and known by its log10 beyond.

#include <cstdint>
#include <string>

namespace pathlift {

/// A non-negative count: exact while it fits in 64 bits, else flagged and kept as log10.
class Count {
 public:
  Count() = default;
  /// An exact count.
  Count(std::uint64_t value) : m_value(value) {}  // NOLINT(google-explicit-constructor)
  /// A count too large for 64 bits, known by its log10.
  static Count from_log10(double log10_value);

  /// True when the count fits in 64 bits; value() is then exact.
  [[nodiscard]] bool exact() const { return m_exact; }
  /// The exact count; throws CountOverflow when it does not fit in 64 bits.
  [[nodiscard]] std::uint64_t value() const;
  /// The count as a double (inf beyond double's range).
  [[nodiscard]] double approx() const;
  /// log10 of the count (-inf for 0).
  [[nodiscard]] double log10() const;
  /// Decimal when exact, else "~1.234e+25" style ("10^1234.5" beyond double's range).
  [[nodiscard]] std::string to_string() const;

  [[nodiscard]] bool is_zero() const { return m_exact && m_value == 0; }

  friend Count operator+(const Count& a, const Count& b);
  friend Count operator*(const Count& a, const Count& b);
  Count& operator+=(const Count& b) { return *this = *this + b; }
  bool operator==(const Count& other) const = default;

 private:
  std::uint64_t m_value = 0;
  double m_log10 = 0;  // used when !m_exact
  bool m_exact = true;
};

}  // namespace pathlift
