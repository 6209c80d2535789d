#pragma once
// The text names of an enum, one table read both ways: to_string gives a value's first name,
// parse accepts any of its names (aliases included, e.g. "auto" for automatic) and, for an
// unknown one, throws std::invalid_argument naming it and listing the valid names.

#include <fmt/format.h>

#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace pathlift::detail {

/// One name of `value`. An entry right after another of the same value is an alias: accepted by
/// parse_enum, never returned by enum_name.
template <class E>
struct EnumName {
  E value;
  std::string_view name;
};

/// The first name of `value` in `table` ("?" for a value the table lacks).
template <class E, std::size_t N>
constexpr std::string_view enum_name(const std::array<EnumName<E>, N>& table, E value) {
  for (const EnumName<E>& e : table) {
    if (e.value == value) {
      return e.name;
    }
  }
  return "?";
}

/// The value named `text`. Throws std::invalid_argument for any other text:
/// "unknown <what> 'x': expected automatic (or auto), svd or gram_eigenvalues (or eig)".
template <class E, std::size_t N>
E parse_enum(const std::array<EnumName<E>, N>& table, std::string_view text,
             std::string_view what) {
  for (const EnumName<E>& e : table) {
    if (e.name == text) {
      return e.value;
    }
  }
  // Each value once, its aliases in parentheses: "a, b (or c) or d".
  std::vector<std::string> names;
  for (std::size_t i = 0; i < N; ++i) {
    if (i > 0 && table[i - 1].value == table[i].value) {
      names.back() += fmt::format(" (or {})", table[i].name);
    } else {
      names.emplace_back(table[i].name);
    }
  }
  std::string list = names.front();
  for (std::size_t i = 1; i < names.size(); ++i) {
    list += (i + 1 == names.size() ? " or " : ", ") + names[i];
  }
  throw std::invalid_argument(fmt::format("unknown {} '{}': expected {}", what, text, list));
}

}  // namespace pathlift::detail
