#include "pathlift/limits.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <limits>

#include "pathlift/error.hpp"
#include "src/detail/enum_names.hpp"

namespace pathlift {

std::size_t default_max_memory() {
  // Asked once: sysconf(_SC_PHYS_PAGES) is a system call, and every engine call checks a limit.
  static const std::size_t limit = [] {
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page_size = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page_size <= 0) {
      return std::size_t{4} << 30;  // unknown: assume 8 GiB of RAM
    }
    return static_cast<std::size_t>(pages) / 2 * static_cast<std::size_t>(page_size);
  }();
  return limit;
}

std::size_t effective_max_memory(std::size_t max_memory) {
  return max_memory == 0 ? default_max_memory() : max_memory;
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

namespace {
double as_double(const Count& c) {
  return c.approx();
}
}  // namespace

std::size_t estimate_bytes(const Count& paths, const Count& nnz_count, Index d, PathObject object,
                           std::size_t scalar_size) {
  const double p = as_double(paths);
  const double nnz = as_double(nnz_count);
  const double index = sizeof(Index);
  const double edge = sizeof(EdgeId);
  const auto s = static_cast<double>(scalar_size);
  double bytes = 0;
  switch (object) {
    case PathObject::path_set:
      bytes = (p + 1) * index + nnz * edge + 2 * p * sizeof(NodeId);
      break;
    case PathObject::path_lifting:
      bytes = p * s;
      break;
    case PathObject::skeleton:
      bytes = (p + 1) * index + nnz * edge;
      break;
    case PathObject::jacobian:
      bytes = (p + 1) * index + nnz * edge + nnz * s;
      break;
    case PathObject::dense_jacobian:
      bytes = p * static_cast<double>(d) * s;
      break;
  }
  if (!(bytes < static_cast<double>(std::numeric_limits<std::size_t>::max()))) {
    return std::numeric_limits<std::size_t>::max();
  }
  return static_cast<std::size_t>(bytes);
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

namespace {

constexpr std::array k_path_object_names{
    detail::EnumName<PathObject>{PathObject::path_set, "path_set"},
    detail::EnumName<PathObject>{PathObject::path_set, "paths"},
    detail::EnumName<PathObject>{PathObject::path_lifting, "path_lifting"},
    detail::EnumName<PathObject>{PathObject::path_lifting, "phi"},
    detail::EnumName<PathObject>{PathObject::skeleton, "skeleton"},
    detail::EnumName<PathObject>{PathObject::jacobian, "jacobian"},
    detail::EnumName<PathObject>{PathObject::dense_jacobian, "dense_jacobian"}};

}  // namespace

std::string_view to_string(PathObject object) {
  return detail::enum_name(k_path_object_names, object);
}

PathObject parse_path_object(std::string_view name) {
  return detail::parse_enum(k_path_object_names, name, "path object");
}

void require_memory(const Count& paths, const Count& nnz, Index d, std::size_t bytes,
                    std::size_t max_memory, const std::string& what) {
  const std::size_t limit = effective_max_memory(max_memory);
  if (!paths.exact() || !nnz.exact()) {
    throw TooLarge(
        fmt::format(
            "{}: P = {} paths (nnz = {}) does not fit in 64 bits; nothing can be enumerated "
            "(the path-free computations need no enumeration: norms, the kernel, the rank by DP)",
            what, paths.to_string(), nnz.to_string()),
        TooLarge::Reason::too_many_paths);
  }
  if (bytes > limit) {
    throw TooLarge(fmt::format(
        "{} needs {} ({} bytes) for P = {} paths, nnz = {}, d = {}, over the memory limit of {}",
        what, format_bytes(static_cast<double>(bytes)), bytes, paths.to_string(), nnz.to_string(),
        d, format_bytes(static_cast<double>(limit))));
  }
}

}  // namespace pathlift
