#pragma once
/// \file limits.hpp
/// Memory limits: the default limit, the one refusal of work that would not fit (TooLarge, with
/// the sizes), before anything is allocated. What the path engine's objects need is in
/// path_memory.hpp.

#include <cstddef>
#include <string>
#include <string_view>

#include "pathlift/types.hpp"

namespace pathlift {

/// Half of the physical memory: the default for every `max_memory` of 0.
std::size_t default_max_memory();

/// `max_memory`, or default_max_memory() when it is 0. Throws std::invalid_argument (with both
/// sizes) when `max_memory` exceeds the physical memory: such a limit could not be honoured.
std::size_t effective_max_memory(std::size_t max_memory);

/// "1.50 GiB" style.
std::string format_bytes(double bytes);

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

}  // namespace pathlift
