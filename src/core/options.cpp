#include "pathlift/options.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

namespace pathlift {

int max_threads() {
  return std::max(64, 8 * omp_get_num_procs());
}

int resolve_threads(int threads) {
  if (threads > max_threads()) {
    // libgomp aborts or crashes when it cannot create that many threads.
    throw std::invalid_argument(fmt::format(
        "threads = {} is more than this machine allows: at most {} (8 x its {} cores, or 64)",
        threads, max_threads(), omp_get_num_procs()));
  }
  if (threads > 0) {
    return threads;
  }
  // OMP_NUM_THREADS when the user sets it (its first number), else every core the process may
  // run on. Not omp_get_max_threads(): another library in the process may have changed it
  // (importing PyTorch sets it to its count of physical cores, 1 on a 2-thread machine).
  if (const char* env = std::getenv("OMP_NUM_THREADS")) {
    char* end = nullptr;
    const long n = std::strtol(env, &end, 10);
    if (end != env && n > 0) {
      return static_cast<int>(std::min<long>(n, max_threads()));
    }
  }
  return omp_get_num_procs();
}

}  // namespace pathlift
