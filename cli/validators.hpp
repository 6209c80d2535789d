#pragma once
// Checks of option values whose messages name the value, and --prime.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pathlift::cli {

/// Option checks whose message names the value: a number >= 0, a number > 0 (CLI11's own
/// print the range of a double).
extern const CLI::Validator non_negative_number;
extern const CLI::Validator positive_number;
/// A number, any (inf and nan included): the library checks its range and names it (path-norm
/// exponents).
extern const CLI::Validator any_number;
/// Strict integer checks (digits only, no sign, space or exponent, below 2^63): an integer >= 1
/// (CLI11's own would answer "0 not in range 0 to 1.8e308"); a seed (an integer
/// from 0 to 2^64 - 1: "-1" is refused, not wrapped); a value that is not empty (`--ff ''`
/// would otherwise mean the default network).
extern const CLI::Validator positive_integer;
extern const CLI::Validator seed_number;
extern const CLI::Validator non_empty;

/// `text` as an unsigned decimal integer (digits only, below 2^64), else nullopt.
std::optional<std::uint64_t> parse_unsigned(std::string_view text);

/// --prime P, checked to be a prime below 2^63 (the modular ranks of rank and prove).
void add_prime_option(CLI::App& cmd, std::uint64_t& prime, const std::string& description);

}  // namespace pathlift::cli
