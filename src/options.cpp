#include "pathlift/options.hpp"

#include <omp.h>

namespace pathlift {

int resolve_threads(int threads) {
  return threads > 0 ? threads : omp_get_max_threads();
}

}  // namespace pathlift
