#include "pathlift/options.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
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
  return threads > 0 ? threads : omp_get_max_threads();
}

}  // namespace pathlift
