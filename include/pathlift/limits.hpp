#pragma once
/// \file limits.hpp
/// Memory limits: what each object the path engine builds needs, computed from the DP counts
/// before anything is enumerated, and the refusal (TooLarge) when it exceeds the limit.

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>

#include "pathlift/counting.hpp"
#include "pathlift/network.hpp"

namespace pathlift {

/// Half of the physical memory: the default for every `max_memory` of 0.
std::size_t default_max_memory();

/// `max_memory`, or default_max_memory() when it is 0. Throws std::invalid_argument (with both
/// sizes) when `max_memory` exceeds the physical memory: such a limit could not be honoured.
std::size_t effective_max_memory(std::size_t max_memory);

/// "1.50 GiB" style.
std::string format_bytes(double bytes);

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

/// The one refusal of work that would not fit: throws TooLarge when `bytes` exceeds the limit
/// (`max_memory`, 0 = default) or is not a finite number. `what` names the object and its
/// sizes ("the forward pass on n = 10 samples, m = 6 nodes"); the message adds the bytes
/// needed and the limit. The library's messages never name a CLI flag: the CLI and Python
/// add their own hint when they catch TooLarge.
void require_bytes(double bytes, std::size_t max_memory, std::string_view what);

/// require_bytes for a dense rows x cols matrix of `scalar_size`-byte entries; the message
/// gives "<what> needs a dense rows x cols matrix".
void require_dense(Index rows, Index cols, std::size_t scalar_size, std::size_t max_memory,
                   std::string_view what);

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
