#pragma once
/// \file counting.hpp
/// Path counting by dynamic programming over the DAG, never by enumeration: P, paths per
/// output and per input node, paths through each edge, the length histogram, nnz(B).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "pathlift/network.hpp"

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

/// Path counts of a network (docs/conventions.md#paths: paths from an input to an output,
/// passing through output nodes allowed).
struct PathCounts {
  Count paths;                    ///< P
  Count nnz;                      ///< nnz(B) = sum of path lengths
  std::vector<Count> per_output;  ///< paths ending at each output, in output order
  std::vector<Count> per_input;   ///< paths starting at each input (bias included), input order
  std::vector<Count> per_edge;    ///< paths through each edge (column sums of B)
  /// length_histogram[l] = number of paths of length l (entry 0 is always 0); empty when
  /// refused (length_histogram_refused says why).
  std::vector<Count> length_histogram;
  /// Empty when length_histogram was computed; else why it was not: the TooLarge message with
  /// the bytes it needs and the memory limit. The other counts are computed regardless.
  std::string length_histogram_refused;
  int max_path_length = 0;  ///< longest input-to-output path (edges)
};

/// Counts paths by dynamic programming: forward counts F(v) (partial paths input -> v) and
/// backward counts G(v) = [v output] + sum_{v->w} G(w). Overflow is detected, never wrapped.
/// The length histogram holds, for each node still to be read by a successor, its counts over
/// its range of path lengths; when that peak exceeds `max_memory` (0: default_max_memory()),
/// the histogram alone is skipped and length_histogram_refused says so (never a throw).
/// Complexity: O(m + d) for the counts; the histogram O(sum over edges of the source's range
/// of lengths) time (O(d) in a layered network, up to O(d * max_path_length)) and memory
/// O(m + the largest sum of the live nodes' ranges).
PathCounts count_paths(const Network& net, std::size_t max_memory = 0);

/// P alone (cheaper than count_paths). Complexity: O(m + d).
Count count_paths_total(const Network& net);

}  // namespace pathlift
