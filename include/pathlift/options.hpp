#pragma once
/// \file options.hpp
/// The options convention: every computation that can run long, allocate much or use threads
/// takes an `EngineOptions` (threads, memory limit, progress); options specific to one
/// computation live in a struct of their own that holds an `EngineOptions engine` member.

#include <cstddef>
#include <functional>

namespace pathlift {

/// Options shared by the computations of the path engine and the DPs.
struct EngineOptions {
  /// OpenMP threads; 0 = all cores. Results are bit-identical whatever the thread count.
  int threads = 0;
  /// Refuse work whose results need more bytes than this; 0 = half of physical RAM.
  std::size_t max_memory = 0;
  /// Called from the calling thread with the fraction done (0..1) during long work.
  std::function<void(double)> progress;
};

/// The most threads a computation may ask for: 8 x the cores, and at least 64.
int max_threads();

/// The number of threads `threads` asks for: itself when positive, else every core OpenMP
/// offers (omp_get_max_threads()). Throws std::invalid_argument, with the bound, above
/// max_threads().
int resolve_threads(int threads);

}  // namespace pathlift
