#pragma once
/// \file error.hpp
/// Exceptions thrown by pathlift. Each derives from the standard type the Python bindings map:
/// std::invalid_argument -> ValueError, std::out_of_range -> IndexError,
/// std::overflow_error -> OverflowError, std::length_error -> MemoryError.
/// Messages name the offending node, edge, key or value.

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace pathlift {

/// A network that violates the model of docs/conventions.md#roles (cycle, isolated node, ...).
class NetworkError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// A file or string that is not valid input (bad JSON, bad field, wrong width).
class FormatError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// A model's input shape: needed and not given (an ONNX input with symbolic or missing
/// per-sample dimensions: needed() is true), or given for a model whose input is fixed (a
/// pathlift-network or pathlift-layers file: needed() is false). A face names its own option.
class InputShapeError : public FormatError {
 public:
  InputShapeError(const std::string& what, bool needed) : FormatError(what), m_needed(needed) {}
  [[nodiscard]] bool needed() const noexcept { return m_needed; }

 private:
  bool m_needed;
};

/// A model (ONNX, PyTorch) with operations pathlift cannot represent; the message lists every
/// one of them (name and type), not only the first.
class UnsupportedModel : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// A floating-point result that would overflow (beyond the largest finite value) or underflow
/// (below the smallest normal value) where an exact answer was asked for: the magnitudes in the
/// message (magnitude.hpp). The CLI's exit 4.
class RangeError : public std::range_error {
 public:
  using std::range_error::range_error;
};

/// A count that does not fit in 64 bits where an exact count is needed.
class CountOverflow : public std::overflow_error {
 public:
  using std::overflow_error::overflow_error;
};

/// Work refused because it would not fit (sizes and the limit in the message): its result
/// exceeds the memory allowed, or its paths are too many to index.
class TooLarge : public std::length_error {
 public:
  /// Why: the memory limit (raise it), or too many paths (P, nnz or a count beyond 64 bits or
  /// beyond an index type) or too much work (the layer graph's path-length histogram): no
  /// limit helps; the path-free computations do not enumerate.
  enum class Reason : unsigned char { memory_limit, too_many_paths };

  explicit TooLarge(const std::string& what, Reason reason = Reason::memory_limit)
      : std::length_error(what), m_reason(reason) {}

  [[nodiscard]] Reason reason() const noexcept { return m_reason; }

 private:
  Reason m_reason;
};

/// `text` from the input (a node or parameter name, a token) as an error message shows it:
/// backslash, control characters and bytes that are not UTF-8 escaped (\n, \t, \\, \x1b,
/// ...), cut after `max_chars` characters with "...", so a name cannot break or flood a message
/// or the terminal.
/// Complexity: O(min(size, max_chars)).
std::string printable(std::string_view text, std::size_t max_chars = 64);

}  // namespace pathlift
