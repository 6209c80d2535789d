#include "json_output.hpp"

#include <fmt/format.h>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "pathlift/version.hpp"

namespace pathlift::cli {

nlohmann::ordered_json scaled_value_json(const ScaledReal& x) {
  return x.fits_double() ? nlohmann::ordered_json(x.value()) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json finite_or_null(double x) {
  return std::isfinite(x) ? nlohmann::ordered_json(x) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json scaled_log10_json(const ScaledReal& x) {
  return finite_or_null(x.log10());
}

nlohmann::ordered_json count_json(const Count& c) {
  return c.exact() ? nlohmann::ordered_json(c.value()) : finite_or_null(c.approx());
}

std::string scaled_text(const ScaledReal& x) {
  if (x.is_zero()) {
    return "0";
  }
  if (x.fits_double()) {
    return fmt::format("{:.10e}  (log10 {:.6f})", x.value(), x.log10());
  }
  return fmt::format("10^{:.10f}  (beyond double's range)", x.log10());
}

nlohmann::ordered_json json_header(std::string_view command, int layout_version,
                                   const std::string& network,
                                   const std::optional<std::string>& theta) {
  nlohmann::ordered_json j;
  j["format"] = fmt::format("pathlift-{}", command);
  j["version"] = layout_version;
  j["pathlift_version"] = version_string;
  j["network"] = network;
  j["theta"] = theta ? nlohmann::ordered_json(*theta) : nlohmann::ordered_json(nullptr);
  return j;
}

void print_json(nlohmann::ordered_json header, const std::string& body) {
  header.update(nlohmann::ordered_json::parse(body));
  print_json(header);
}

void print_json(const nlohmann::ordered_json& j) {
  fmt::print("{}\n", j.dump(2));
}

std::FILE* text_stream(const std::string& output) {
  return output.empty() ? stdout : stderr;
}

void require_one_stdout_result(bool json, const std::string& output) {
  if (json && output == "-") {
    throw std::invalid_argument(
        "--json and -o - would both write to stdout: write the data to a file, or drop --json");
  }
}

}  // namespace pathlift::cli
