#pragma once
/// \file options.hpp
/// The options convention: every computation that can run long, allocate much or use threads
/// takes an `EngineOptions` (threads, memory limit, progress); options specific to one
/// computation live in a struct of their own that holds an `EngineOptions engine` member.

#include <cstddef>
#include <functional>
#include <string_view>

namespace pathlift {

/// How long work reports its progress: the phase it is in ("enumerating paths", "unrolling the
/// layer graph", "eliminating B mod p", ...) and the fraction of that phase done, 0..1 (1 when
/// the phase ends; -1: running, extent unknown). Called from the calling thread only, often:
/// a display throttles itself.
using Progress = std::function<void(std::string_view phase, double fraction)>;

/// Options shared by the computations of the path engine and the DPs.
struct EngineOptions {
  /// OpenMP threads; 0 = all cores. Results are bit-identical whatever the thread count.
  int threads = 0;
  /// Refuse work whose results need more bytes than this; 0 = half of physical RAM.
  std::size_t max_memory = 0;
  /// The progress of long work (none when empty).
  Progress progress = {};
};

/// The most threads a computation may ask for: 8 x the cores, and at least 64.
int max_threads();

/// The number of threads `threads` asks for: itself when positive, else OMP_NUM_THREADS's
/// first number when the environment sets one, else every core the process may run on
/// (omp_get_num_procs()), whatever another library in the process set as OpenMP's default
/// (PyTorch sets its count of physical cores). Throws std::invalid_argument, with the bound,
/// above max_threads().
int resolve_threads(int threads);

}  // namespace pathlift
