// PathCond and ENorm (balance.hpp) on hostile parameter vectors and options (numeric_input.hpp):
// a rescaled theta or a refusal (bad theta or options named; RangeError beyond float64), never a
// non-finite entry; converged only with the stationarity within the tolerance; the same signs and
// zeros, and the same path-lifting (sign and log10 of every Phi_p, which a rescaling keeps).

#include <cmath>
#include <cstddef>
#include <cstdint>

#include <fmt/format.h>

#include "numeric_input.hpp"
#include "pathlift/balance.hpp"
#include "pathlift/lifting.hpp"

namespace {

using pathlift::fuzz::fail;

void check(const pathlift::fuzz::NumericCase& c) {
  using namespace pathlift;
  for (const bool cond : {true, false}) {
    BalanceReport r;
    if (!fuzz::expect_numeric(
            [&] {
              r = cond ? path_cond(c.model, c.theta, c.options)
                       : enorm(c.model, c.theta, c.options);
            },
            {"theta", "tolerance", "max_sweeps"})) {
      continue;
    }
    const char* what = cond ? "path_cond" : "enorm";
    if (r.theta.size() != c.theta.size()) {
      fail(what, "theta's size changed");
    }
    for (std::size_t k = 0; k < r.theta.size(); ++k) {
      if (!std::isfinite(r.theta[k]) || (r.theta[k] == 0) != (c.theta[k] == 0) ||
          std::signbit(r.theta[k]) != std::signbit(c.theta[k])) {
        fail(what, fmt::format("theta[{}] = {} rescaled to {}", k, c.theta[k], r.theta[k]));
      }
    }
    if (std::isnan(r.stationarity) || (r.converged && !(r.stationarity <= c.options.tolerance))) {
      fail(what, fmt::format("converged {} with stationarity {} (tolerance {})", r.converged,
                             r.stationarity, c.options.tolerance));
    }
    // The function: every path's sign and log10 magnitude kept (to the rescaling's rounding).
    const Network* net = c.model.dag();
    std::shared_ptr<const Network> unrolled;
    if (net == nullptr) {
      unrolled = c.model.unrolled();
      net = unrolled.get();
    }
    const SignedLog10 before = log_path_lifting(*net, c.theta);
    const SignedLog10 after = log_path_lifting(*net, r.theta);
    for (std::size_t p = 0; p < before.sign.size(); ++p) {
      const double x = before.log10[p];
      const double y = after.log10[p];
      if (before.sign[p] != after.sign[p] ||
          (std::isfinite(x) && std::fabs(x - y) > 1e-9 * (1 + std::fabs(x)))) {
        fail(what, fmt::format("path {}: Phi went from {} 10^{} to {} 10^{}", p, before.sign[p], x,
                               after.sign[p], y));
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  check(pathlift::fuzz::numeric_case(data, size));
  return 0;
}
