#include "validators.hpp"

#include <fmt/format.h>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <utility>

#include "common.hpp"
#include "pathlift/error.hpp"
#include "pathlift/mod_p.hpp"

namespace pathlift::cli {

namespace {

/// The number text starts with (std::strtod), the characters it takes (0 when none), and
/// whether it is beyond float64's range (above it, or below its smallest normal number).
struct LeadingNumber {
  double value = 0;
  std::size_t used = 0;
  bool out_of_range = false;
};

LeadingNumber leading_number(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text.c_str(), &end);
  return {value, static_cast<std::size_t>(end - text.c_str()), errno == ERANGE};
}

CLI::Validator number_check(bool strict) {
  const char* want = strict ? "a number > 0" : "a number >= 0";
  return {[strict, want](const std::string& text) -> std::string {
            const auto [value, used, out_of_range] = leading_number(text);
            const bool ok = used == text.size() && !out_of_range && std::isfinite(value) &&
                            (strict ? value > 0 : value >= 0);
            return ok ? std::string() : fmt::format("'{}' is not {}", text, want);
          },
          strict ? "POSITIVE" : "NONNEGATIVE"};
}

}  // namespace

const CLI::Validator non_negative_number = number_check(false);
const CLI::Validator positive_number = number_check(true);
const CLI::Validator any_number{
    [](const std::string& text) -> std::string {
      const auto [value, used, out_of_range] = leading_number(text);
      if (used != text.size() || text.empty()) {
        return fmt::format("'{}' is not a number", printable(text));
      }
      return out_of_range ? fmt::format("'{}' is beyond float64's range", printable(text))
                          : std::string();
    },
    ""};

std::optional<std::uint64_t> parse_unsigned(std::string_view text) {
  std::uint64_t value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || text[0] == '-' || text[0] == '+' || ec != std::errc() ||
      ptr != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

namespace {

CLI::Validator integer_check(std::uint64_t least) {
  return {[least](const std::string& text) -> std::string {
            const auto value = parse_unsigned(text);
            const bool ok = value && *value >= least &&
                            *value <= static_cast<std::uint64_t>(std::numeric_limits<Index>::max());
            return ok ? std::string()
                      : fmt::format("'{}' is not an integer >= {} (digits only, below 2^63)",
                                    printable(text), least);
          },
          least == 0 ? "UINT" : "POSITIVE_INT"};
}

}  // namespace

const CLI::Validator positive_integer = integer_check(1);
const CLI::Validator seed_number{[](const std::string& text) -> std::string {
                                   return parse_unsigned(text)
                                              ? std::string()
                                              : fmt::format(
                                                    "'{}' is not a seed: an integer from "
                                                    "0 to 2^64 - 1",
                                                    printable(text));
                                 },
                                 "SEED"};
const CLI::Validator non_empty{
    [](const std::string& text) { return text.empty() ? std::string("the value is empty") : ""; },
    ""};

void add_prime_option(CLI::App& cmd, std::uint64_t& prime, const std::string& description) {
  cmd.add_option("--prime", prime, description)->check([](const std::string& text) -> std::string {
    const auto p = parse_unsigned(text);
    if (!p) {
      return fmt::format("'{}' is not a number (digits only)", printable(text));
    }
    return (*p < (std::uint64_t{1} << 63) && is_prime(*p))
               ? ""
               : fmt::format("{} is not a prime below 2^63", *p);
  });
}

}  // namespace pathlift::cli
