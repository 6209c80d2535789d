#pragma once
// --max-memory: its parsing, the memory the loaded model holds, and the work's EngineOptions.

#include <cstddef>
#include <string>

#include "pathlift/options.hpp"

namespace pathlift::cli {

struct ComputeOptions;

/// Parses "8G", "512M", "1.5GiB", "1000000" (bytes); "" = 0 (the default limit).
std::size_t parse_memory_size(const std::string& text);

/// EngineOptions from the options, with a progress bar on stderr (terminal only) labelled
/// `label`, shown once the work has taken more than about a second.
EngineOptions engine_options(const ComputeOptions& opts, const std::string& label);

/// Records the process's resident memory before any work (the binary and its libraries: the
/// 64 MB the memory contract allows beyond the limit), so that engine_options() can leave the
/// work only what --max-memory has left once the model and data are loaded.
void note_memory_baseline();
/// Bytes resident now beyond that baseline (the loaded model, theta, data), 0 before it.
std::size_t loaded_bytes();
/// The memory limit of the work: --max-memory (0: the default) less loaded_bytes(), at least 1.
std::size_t work_memory(const ComputeOptions& opts);
/// " (what --max-memory leaves beside the 394.36 MiB the model and data hold)" for a memory
/// refusal (the bytes held when work_memory() last set a limit), or "" when it set none or
/// nothing was loaded: the limit a message names is the work's.
std::string memory_note();

}  // namespace pathlift::cli
