#pragma once
/// \file error.hpp
/// Exceptions thrown by pathlift. Each derives from the standard type the Python bindings map:
/// std::invalid_argument -> ValueError, std::out_of_range -> IndexError,
/// std::overflow_error -> OverflowError, std::length_error -> MemoryError.
/// Messages name the offending node, edge, key or value.

#include <stdexcept>
#include <string>

namespace pathlift {

/// A network that violates the model of MATH.md (cycle, isolated node, ...).
class NetworkError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// A file or string that is not valid input (bad JSON, bad field, wrong width).
class FormatError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// A count that does not fit in 64 bits where an exact count is needed.
class CountOverflow : public std::overflow_error {
 public:
  using std::overflow_error::overflow_error;
};

/// Work refused because its result would not fit in the memory allowed (sizes in the message).
class TooLarge : public std::length_error {
 public:
  using std::length_error::length_error;
};

}  // namespace pathlift
