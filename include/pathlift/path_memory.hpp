#pragma once
/// \file path_memory.hpp
/// What each object the path engine builds needs in memory, computed from the DP counts before
/// anything is enumerated, and the refusal (TooLarge) when it exceeds the limit (limits.hpp).

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>

#include "pathlift/count.hpp"
#include "pathlift/network.hpp"

namespace pathlift {

/// The objects the path engine can build, for memory estimates.
enum class PathObject {
  path_set,       ///< offsets + edge ids + start and end nodes
  path_lifting,   ///< Phi: P values
  skeleton,       ///< B: offsets + column indices
  jacobian,       ///< dPhi with its pattern (B's arrays + values)
  dense_jacobian  ///< dPhi as a dense P x d matrix
};

/// "path_set", "path_lifting", "skeleton", "jacobian", "dense_jacobian".
std::string_view to_string(PathObject object);

/// The object named `name`: a to_string name, or "paths" (path_set), "phi" (path_lifting).
/// Throws std::invalid_argument naming `name` and listing the valid names otherwise.
PathObject parse_path_object(std::string_view name);

/// Bytes needed for `object` with scalars of `scalar_size` bytes (saturating at SIZE_MAX).
std::size_t estimate_bytes(const Count& paths, const Count& nnz, Index d, PathObject object,
                           std::size_t scalar_size = sizeof(double));

/// Throws TooLarge when P or nnz does not fit in 64 bits, or when `bytes` exceeds the limit
/// (`max_memory`, 0 = default). The message gives P, nnz, d, the bytes needed and the limit.
void require_memory(const Count& paths, const Count& nnz, Index d, std::size_t bytes,
                    std::size_t max_memory, const std::string& what);

/// Bytes needed to hold all of `objects` at once for `net` (an object listed twice is held
/// twice), P and nnz counted by DP (saturating at SIZE_MAX). Complexity: O(m + d).
std::size_t estimate_bytes(const Network& net, std::initializer_list<PathObject> objects,
                           std::size_t scalar_size = sizeof(double));

/// require_memory for work that holds all of `objects` at once (an object listed twice is held
/// twice), with P and nnz counted by DP: the check a function runs before building several
/// results, so that the peak, not each result, is within the limit. `what` names the work.
/// Complexity: O(m + d).
void require_memory(const Network& net, std::initializer_list<PathObject> objects,
                    std::size_t max_memory, const std::string& what,
                    std::size_t scalar_size = sizeof(double));

}  // namespace pathlift
