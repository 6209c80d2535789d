#pragma once
// Entering an OpenMP parallel region has a fixed cost: libgomp's final barrier makes a futex
// system call even for a team of one thread (several microseconds on a virtual machine, more
// than a small Phi or Jacobian takes). Small work therefore runs on the calling thread without
// entering a region at all.

namespace pathlift::detail {

/// Runs body() on a team of `threads` OpenMP threads when `parallel` and threads > 1, else
/// directly on the calling thread. body may contain orphaned `#pragma omp for` loops: on the
/// calling thread alone they run whole, and omp_get_thread_num() is 0.
template <class Body>
void run_team(int threads, bool parallel, Body&& body) {
  if (parallel && threads > 1) {
#pragma omp parallel num_threads(threads)
    body();
  } else {
    body();
  }
}

}  // namespace pathlift::detail
