#include "pathlift/limits.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "pathlift/error.hpp"

namespace pathlift {

namespace {

/// The physical memory in bytes (sysconf), asked once: every engine call checks a limit.
std::size_t physical_memory() {
  static const std::size_t bytes = [] {
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page_size = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page_size <= 0) {
      return std::size_t{8} << 30;  // unknown: assume 8 GiB of RAM
    }
    return static_cast<std::size_t>(pages) * static_cast<std::size_t>(page_size);
  }();
  return bytes;
}

}  // namespace

std::size_t default_max_memory() {
  return physical_memory() / 2;
}

std::size_t effective_max_memory(std::size_t max_memory) {
  if (max_memory == 0) {
    return default_max_memory();
  }
  // A limit the machine cannot honour would let work through to fail in the allocator
  // (std::bad_alloc, without sizes) instead of being refused with them.
  if (max_memory > physical_memory()) {
    throw std::invalid_argument(fmt::format(
        "the memory limit of {} ({} bytes) is above the physical memory of {} ({} bytes)",
        format_bytes(static_cast<double>(max_memory)), max_memory,
        format_bytes(static_cast<double>(physical_memory())), physical_memory()));
  }
  return max_memory;
}

std::string format_bytes(double bytes) {
  if (!std::isfinite(bytes)) {
    return "an unbounded number of bytes";
  }
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 6) {
    bytes /= 1024.0;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.2f} {}", bytes, units[u]);
}

void require_bytes(double bytes, std::size_t max_memory, std::string_view what) {
  const std::size_t limit = effective_max_memory(max_memory);
  if (!(bytes <= static_cast<double>(limit))) {
    throw TooLarge(fmt::format("{} needs {} ({:.0f} bytes), over the memory limit of {}", what,
                               format_bytes(bytes), bytes,
                               format_bytes(static_cast<double>(limit))));
  }
}

void require_dense(Index rows, Index cols, std::size_t scalar_size, std::size_t max_memory,
                   std::string_view what) {
  const double bytes =
      static_cast<double>(rows) * static_cast<double>(cols) * static_cast<double>(scalar_size);
  require_bytes(
      bytes, max_memory,
      fmt::format("{} (a dense {} x {} matrix of {}-byte entries)", what, rows, cols, scalar_size));
}

}  // namespace pathlift
