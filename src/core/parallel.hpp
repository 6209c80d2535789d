#pragma once
// Entering an OpenMP parallel region has a fixed cost: libgomp's final barrier makes a futex
// system call even for a team of one thread (several microseconds on a virtual machine, more
// than a small Phi or Jacobian takes). Small work therefore runs on the calling thread without
// entering a region at all.

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <memory>
#include <mutex>

#include "pathlift/options.hpp"
#include "pathlift/types.hpp"

namespace pathlift::detail {

/// Below this many entries (path entries, edges), work runs on the calling thread.
inline constexpr Index k_parallel_min_entries = 1 << 16;

/// Runs body() on a team of `threads` OpenMP threads when `parallel` and threads > 1, else
/// directly on the calling thread. body may contain orphaned `#pragma omp for` loops: on the
/// calling thread alone they run whole, and omp_get_thread_num() is 0. Called from inside a
/// caller's parallel region, the serial case runs in a team of one: an orphaned loop would
/// otherwise bind to the caller's team and run only a share of its iterations.
template <class Body>
void run_team(int threads, bool parallel, Body&& body) {
  if (parallel && threads > 1) {
#pragma omp parallel num_threads(threads)
    body();
  } else if (omp_in_parallel() != 0) {
#pragma omp parallel num_threads(1)
    body();
  } else {
    body();
  }
}

/// Threads for d x d work: one below 2^16 entries, where starting threads costs more than the
/// work (the result is the same for any count).
inline int square_work_threads(Index d, const EngineOptions& options) {
  if (d * d < (Index{1} << 16)) {
    return 1;
  }
  return resolve_threads(options.threads);
}

/// Calls f(i, j) for every pair i < j < d, in 64 x 64 blocks of the upper triangle shared among
/// `threads` threads (each pair once): the symmetrisation of a d x d matrix of which exactly
/// one of (i, j), (j, i) was written.
template <class F>
void for_each_upper_pair(Index d, int threads, const F& f) {
  constexpr Index block = 64;
  const Index nb = (d + block - 1) / block;
  run_team(threads, true, [&] {
#pragma omp for schedule(dynamic, 1)
    for (Index bi = 0; bi < nb; ++bi) {
      for (Index bj = bi; bj < nb; ++bj) {
        for (Index i = bi * block; i < std::min(d, (bi + 1) * block); ++i) {
          for (Index j = std::max(i + 1, bj * block); j < std::min(d, (bj + 1) * block); ++j) {
            f(i, j);
          }
        }
      }
    }
  });
}

/// Runs body(i) for i in [0, n) on OpenMP threads (dynamic schedule), each thread on its own
/// copy of `body` (its scratch buffers, allocated by init()); the first exception thrown is
/// rethrown on the calling thread.
template <class Body>
void parallel_for(Index n, int threads, const Body& body) {
  std::exception_ptr error;
  std::mutex error_mutex;
  std::atomic<bool> failed{false};
  const auto record = [&] {
    const std::lock_guard<std::mutex> lock(error_mutex);
    if (!error) {
      error = std::current_exception();
    }
    failed = true;
  };
  run_team(threads, true, [&] {
    // Exceptions must not cross the worksharing loop: each is caught where it is thrown.
    std::unique_ptr<Body> local;
    try {
      local = std::make_unique<Body>(body);
      local->init();
    } catch (...) {
      record();
    }
#pragma omp for schedule(dynamic, 1)
    for (Index i = 0; i < n; ++i) {
      if (local && !failed) {
        try {
          (*local)(i);
        } catch (...) {
          record();
        }
      }
    }
  });
  if (error) {
    std::rethrow_exception(error);
  }
}

}  // namespace pathlift::detail
