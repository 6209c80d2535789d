#include "pathlift/limits.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

#include "pathlift/error.hpp"
#include "src/detail/enum_names.hpp"
#include "src/detail/path_totals.hpp"

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

namespace {

/// The bytes of all of `objects` at once, and their names joined by " + ".
std::pair<std::size_t, std::string> objects_bytes(const detail::PathTotals& t, Index d,
                                                  std::initializer_list<PathObject> objects,
                                                  std::size_t scalar_size) {
  double bytes = 0;
  std::string names;
  for (const PathObject object : objects) {
    bytes += static_cast<double>(estimate_bytes(t.paths, t.nnz, d, object, scalar_size));
    names += fmt::format("{}{}", names.empty() ? "" : " + ", to_string(object));
  }
  const auto max = std::numeric_limits<std::size_t>::max();
  return {bytes < static_cast<double>(max) ? static_cast<std::size_t>(bytes) : max, names};
}

}  // namespace

std::size_t estimate_bytes(const Network& net, std::initializer_list<PathObject> objects,
                           std::size_t scalar_size) {
  return objects_bytes(detail::path_totals(net), net.num_params(), objects, scalar_size).first;
}

void require_memory(const Network& net, std::initializer_list<PathObject> objects,
                    std::size_t max_memory, const std::string& what, std::size_t scalar_size) {
  const detail::PathTotals t = detail::path_totals(net);
  const auto [bytes, names] = objects_bytes(t, net.num_params(), objects, scalar_size);
  require_memory(t.paths, t.nnz, net.num_params(), bytes, max_memory,
                 fmt::format("{} ({})", what, names));
}

}  // namespace pathlift
