#include "pathlift/path_memory.hpp"

#include <fmt/format.h>

#include <array>
#include <limits>
#include <utility>

#include "pathlift/error.hpp"
#include "pathlift/limits.hpp"
#include "src/core/enum_names.hpp"
#include "src/dp/path_totals.hpp"

namespace pathlift {

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
