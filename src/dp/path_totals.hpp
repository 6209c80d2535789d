#pragma once
// P and nnz(B) of a network by dynamic programming, O(m + d), for the memory estimates taken
// before any work (limits.cpp) and for count_paths.

#include "pathlift/counting.hpp"
#include "pathlift/network.hpp"

namespace pathlift::detail {

struct PathTotals {
  Count paths;  ///< P
  Count nnz;    ///< nnz(B): the sum of the path lengths
};

/// P and nnz(B) (exact below 2^64, log10 beyond). Complexity: O(m + d).
PathTotals path_totals(const Network& net);

}  // namespace pathlift::detail
