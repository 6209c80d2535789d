#pragma once
// The CLI's JSON and text output: the --json header, numbers beyond double's range, where
// the text goes.

#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "pathlift/count.hpp"
#include "pathlift/scaled_real.hpp"

namespace pathlift::cli {

/// A number beyond double's range for --json: its value when it fits a double, else null (its
/// log10 goes beside it).
nlohmann::ordered_json scaled_value_json(const ScaledReal& x);
/// log10 |x|, or null for 0.
nlohmann::ordered_json scaled_log10_json(const ScaledReal& x);
/// x, or null when it is not a finite double (JSON has no inf).
nlohmann::ordered_json finite_or_null(double x);
/// A path count: exact when it is, else its double (null beyond double's range).
nlohmann::ordered_json count_json(const Count& c);
/// For text: "1.2345678900e+03  (log10 3.091515)", "10^1234.5678901234  (beyond double's
/// range)", or "0".
std::string scaled_text(const ScaledReal& x);

/// The header every `--json` output starts with (docs/cli.md#json): "format":
/// "pathlift-<command>", "version": `layout_version` (of that command's keys, bumped when one
/// changes meaning), "pathlift_version", "network" (the description of the model) and "theta"
/// (where theta came from; null for a command that takes no theta).
nlohmann::ordered_json json_header(std::string_view command, int layout_version,
                                   const std::string& network,
                                   const std::optional<std::string>& theta);

/// A `--json` result on stdout: `header` followed by the keys of `body`, a JSON object written
/// by the library (to_json(...)).
void print_json(nlohmann::ordered_json header, const std::string& body);
/// A `--json` result on stdout, indented by 2.
void print_json(const nlohmann::ordered_json& j);

/// Where a command's human-readable text goes: stdout when it is the result, stderr when the
/// data goes to -o (a file, or `-`: stdout then holds the data only). docs/cli.md#streams.
std::FILE* text_stream(const std::string& output);

/// Refuses --json with `-o -` (both would write to stdout).
void require_one_stdout_result(bool json, const std::string& output);

}  // namespace pathlift::cli
