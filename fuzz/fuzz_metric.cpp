// The path-metric and the Lipschitz bound (path_metric.hpp) on hostile parameter vectors
// (numeric_input.hpp: every float64 bit pattern): a result or a refusal naming theta or theta2,
// never a NaN, never a value below the truth. Where the magnitudes let float64 enumerate the
// paths, the metric is checked against sum_p |Phi_p(theta) - Phi_p(theta2)|: equal when exact,
// above otherwise; the Lipschitz constant is never below the metric.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "numeric_input.hpp"
#include "pathlift/lifting.hpp"
#include "pathlift/path_free.hpp"

namespace {

using pathlift::fuzz::fail;

void check(const pathlift::fuzz::NumericCase& c) {
  using namespace pathlift;
  PathMetric metric;
  if (!fuzz::expect_numeric([&] { metric = path_metric(c.model, c.theta, c.theta2); }, {"theta"})) {
    return;
  }
  if (!(metric.value.mantissa >= 0) || !std::isfinite(metric.value.mantissa)) {
    fail("the metric is not a number >= 0", fmt::format("{}", metric.value.mantissa));
  }
  // The Lipschitz constant bounds the true metric: never below it where the metric is exact,
  // the metric itself (or its bound) when no sign changes.
  LipschitzBound bound;
  if (fuzz::expect_numeric([&] { bound = lipschitz_bound(c.model, c.theta, c.theta2); },
                           {"theta"})) {
    const double lc = bound.constant.is_zero() ? -INFINITY : bound.constant.log10();
    const double lm = metric.value.is_zero() ? -INFINITY : metric.value.log10();
    const double slack = 1e-9 * (1 + std::fabs(lm));
    if (!(bound.constant.mantissa >= 0) || (metric.exact && lc < lm - slack) ||
        (bound.sign_changes == 0 && std::isfinite(lm) && std::fabs(lc - lm) > slack)) {
      fail("the Lipschitz constant is not the metric, or below the exact metric",
           fmt::format("C 10^{} vs metric 10^{} (exact {}, {} sign changes)", lc, lm, metric.exact,
                       bound.sign_changes));
    }
  }
  // The truth, by enumeration in float64, where no product leaves [1e-150, 1e150].
  const Network* net = c.model.dag();
  std::shared_ptr<const Network> unrolled;
  if (net == nullptr) {
    unrolled = c.model.unrolled();
    net = unrolled.get();
  }
  if (!fuzz::moderate(c.theta, 1e-30, 1e30) || !fuzz::moderate(c.theta2, 1e-30, 1e30)) {
    return;
  }
  const Buffer<double> a = path_lifting(*net, std::span<const double>(c.theta));
  const Buffer<double> b = path_lifting(*net, std::span<const double>(c.theta2));
  double truth = 0;
  double scale =
      0;  // the sum of |Phi_p| of both: the rounding of the enumeration is relative to it
  for (std::size_t p = 0; p < a.size(); ++p) {
    truth += std::fabs(a[p] - b[p]);
    scale += std::fabs(a[p]) + std::fabs(b[p]);
  }
  const double value = metric.value.value();
  const double slack = 1e-9 * truth + 1e-14 * scale;
  if (metric.exact ? std::fabs(value - truth) > slack : value < truth - slack) {
    fail(metric.exact ? "the exact metric differs from the enumerated one"
                      : "the metric's bound is below the enumerated metric",
         fmt::format("{} vs {} (paths {})", value, truth, a.size()));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  check(pathlift::fuzz::numeric_case(data, size));
  return 0;
}
