#include "magnitudes.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "pathlift/error.hpp"

namespace pathlift::cli {

template <class T>
void require_lifting_fits(const Network& net, std::span<const double> theta, bool jacobian,
                          std::string_view what, std::string_view hint) {
  try {
    require_fits<T>(lifting_range(net, theta), jacobian, what);
  } catch (const RangeError& e) {
    throw RangeError(fmt::format("{}{}", e.what(), hint));
  }
}

template void require_lifting_fits<double>(const Network&, std::span<const double>, bool,
                                           std::string_view, std::string_view);
template void require_lifting_fits<float>(const Network&, std::span<const double>, bool,
                                          std::string_view, std::string_view);

std::vector<double> sign_log10_rows(const SignedLog10& values) {
  std::vector<double> out(2 * values.sign.size());
  for (std::size_t p = 0; p < values.sign.size(); ++p) {
    out[2 * p] = values.sign[p];
    out[2 * p + 1] = values.log10[p];
  }
  return out;
}

}  // namespace pathlift::cli
