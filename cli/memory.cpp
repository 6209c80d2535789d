#include "memory.hpp"

#include <fmt/format.h>
#include <unistd.h>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <limits>
#include <memory>
#include <stdexcept>

#include "common.hpp"
#include "pathlift/error.hpp"
#include "pathlift/limits.hpp"

namespace pathlift::cli {

std::size_t parse_memory_size(const std::string& text) {
  if (text.empty()) {
    return 0;
  }
  const auto bad = [&](std::string_view why) {
    return std::invalid_argument(
        fmt::format("--max-memory '{}': {} (expected a positive size such as 8G, 512M, 1.5G or "
                    "1000000 bytes)",
                    printable(text), why));
  };
  // digits [. digits] then a unit: no sign, exponent, space or other trailing text.
  const std::size_t int_end = text.find_first_not_of("0123456789");
  std::size_t number_end = int_end == std::string::npos ? text.size() : int_end;
  if (number_end < text.size() && text[number_end] == '.') {
    number_end = std::min(text.find_first_not_of("0123456789", number_end + 1), text.size());
  }
  if (number_end == 0 || text[0] == '.' || text[number_end - 1] == '.') {
    throw bad("not a number");
  }
  std::string unit = text.substr(number_end);
  for (char& c : unit) {
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  int power = -1;  // of 1024
  if (unit.empty() || unit == "B") {
    power = 0;
  } else if (unit.size() <= 3 &&
             (unit.size() == 1 || unit.substr(1) == "B" || unit.substr(1) == "IB")) {
    const auto at = std::string_view("KMGT").find(unit[0]);
    power = at == std::string_view::npos ? -1 : static_cast<int>(at) + 1;
  }
  if (power < 0) {
    throw bad(fmt::format("unknown unit '{}' (B, K, M, G or T)", printable(unit)));
  }
  // Exact: the integer part times 1024^power, plus the fraction's share, overflow-checked.
  std::uint64_t bytes = 0;
  const auto whole = text.substr(0, std::min(int_end, number_end));
  const auto [ptr, ec] = std::from_chars(whole.data(), whole.data() + whole.size(), bytes);
  (void)ptr;
  const std::uint64_t scale = std::uint64_t{1} << (10 * power);
  if (ec != std::errc() || __builtin_mul_overflow(bytes, scale, &bytes)) {
    throw bad("too large");
  }
  if (number_end > whole.size()) {
    const double fraction = std::stod("0" + text.substr(whole.size(), number_end - whole.size()));
    if (power == 0 && fraction != 0) {
      throw bad("a fraction of a byte");
    }
    if (__builtin_add_overflow(
            bytes, static_cast<std::uint64_t>(fraction * static_cast<double>(scale)), &bytes)) {
      throw bad("too large");
    }
  }
  if (bytes == 0) {
    throw bad("less than one byte");
  }
  if (bytes > std::numeric_limits<std::size_t>::max()) {
    throw bad("too large");
  }
  return static_cast<std::size_t>(bytes);
}

namespace {

/// The resident set of this process in bytes (/proc/self/statm), 0 when unknown.
std::size_t resident_set_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) {
    return 0;
  }
  unsigned long long size = 0;
  unsigned long long resident = 0;
  const int got = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  const long page = sysconf(_SC_PAGESIZE);
  return got == 2 && page > 0 ? static_cast<std::size_t>(resident) * static_cast<std::size_t>(page)
                              : 0;
}

std::size_t g_memory_baseline = 0;
std::size_t g_memory_held = 0;  // loaded_bytes() when the work's limit was last set

}  // namespace

void note_memory_baseline() {
  g_memory_baseline = resident_set_bytes();
}

std::size_t loaded_bytes() {
  if (g_memory_baseline == 0) {
    return 0;
  }
  const std::size_t now = resident_set_bytes();
  return now > g_memory_baseline ? now - g_memory_baseline : 0;
}

std::size_t work_memory(const ComputeOptions& opts) {
  // --max-memory bounds the whole process: the work gets what the loaded model and data left.
  // Blocks kept for reuse by an earlier pass (types.hpp, up to 1 GiB) are resident but not
  // held: handed back first, so that they count neither as held nor twice.
  (void)release_cached_buffers();
  const std::size_t limit = effective_max_memory(parse_memory_size(opts.max_memory));
  const std::size_t held = loaded_bytes();
  g_memory_held = held;
  return held < limit ? limit - held : 1;
}

std::string memory_note() {
  // What was held when the limit was set: by the time a refusal is printed, the model may be
  // freed.
  const std::size_t held = g_memory_held;
  return held == 0
             ? std::string()
             : fmt::format(" (what --max-memory leaves beside the {} the model and data hold)",
                           format_bytes(static_cast<double>(held)));
}

EngineOptions engine_options(const ComputeOptions& opts, const std::string& label) {
  EngineOptions e;
  e.threads = opts.threads;
  (void)resolve_threads(e.threads);  // refuses more than the machine can run, before the work
  e.max_memory = work_memory(opts);
  auto bar = std::make_shared<ProgressBar>(label);
  e.progress = [bar](std::string_view /*phase*/, double fraction) { (*bar)(fraction); };
  return e;
}

}  // namespace pathlift::cli
