#pragma once
// log10 of the absolute weights: the terms every log-magnitude form sums (lifting_range's DP,
// the sign and log10 forms of Phi and dPhi).

#include <cmath>
#include <span>
#include <vector>

namespace pathlift::detail {

/// log10|w_e| of each entry of `w` (-inf at a zero): the terms every log form sums.
inline std::vector<double> log10_abs(std::span<const double> w) {
  std::vector<double> out(w.size());
  for (std::size_t e = 0; e < w.size(); ++e) {
    out[e] = std::log10(std::abs(w[e]));
  }
  return out;
}

}  // namespace pathlift::detail
