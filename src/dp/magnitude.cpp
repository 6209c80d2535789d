#include "pathlift/magnitude.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "pathlift/error.hpp"
#include "pathlift/limits.hpp"
#include "src/dp/log_weights.hpp"
#include "src/network/dag.hpp"
#include "src/network/dag_dp.hpp"
#include "src/network/parameters.hpp"

namespace pathlift {

namespace {

constexpr double k_inf = std::numeric_limits<double>::infinity();

void widen(LogRange& r, const LogRange& x) {
  r.min_log10 = std::min(r.min_log10, x.min_log10);
  r.max_log10 = std::max(r.max_log10, x.max_log10);
}

LogRange shifted(const LogRange& x, double by) {
  return x.empty() ? LogRange{} : LogRange{x.min_log10 + by, x.max_log10 + by};
}

/// The ranges of the products of the paths summed at a node: all their weights (`full`), and all
/// but one (`skip`, the entries of dPhi). Paths through a zero weight have product 0: left out
/// of `full`, and of `skip` unless the zero is the weight skipped.
struct PathRanges {
  LogRange full;
  LogRange skip;
};

/// The max-plus and min-plus ring of dag_dp.hpp on log10|w_e| (-inf for a zero weight).
struct RangeRing {
  using value_type = PathRanges;
  const std::vector<double>* log_w;

  [[nodiscard]] value_type zero() const { return {}; }
  [[nodiscard]] value_type start(NodeId) const { return {LogRange{0, 0}, LogRange{}}; }
  [[nodiscard]] value_type extend(EdgeId e, const value_type& x) const {
    const double w = (*log_w)[static_cast<std::size_t>(e)];
    value_type y;
    if (w > -k_inf) {
      y.full = shifted(x.full, w);
      y.skip = shifted(x.skip, w);
    }
    widen(y.skip, x.full);  // e is the weight left out
    return y;
  }
  void add(value_type& acc, const value_type& x) const {
    widen(acc.full, x.full);
    widen(acc.skip, x.skip);
  }
  void finish(NodeId, value_type&) const {}
};

std::string type_name(int digits) {
  return digits == std::numeric_limits<float>::digits ? "float32" : "float64";
}

}  // namespace

void require_representable(std::span<const double> values, std::string_view what,
                           std::string_view hint) {
  std::size_t not_finite = 0;
  std::size_t subnormal = 0;
  for (const double x : values) {
    if (!std::isfinite(x)) {
      ++not_finite;
    } else if (x != 0 && std::abs(x) < std::numeric_limits<double>::min()) {
      ++subnormal;
    }
  }
  if (not_finite > 0) {
    throw RangeError(fmt::format("{} of {} values of {} are not finite (overflow beyond {:.1e}){}",
                                 not_finite, values.size(), what,
                                 std::numeric_limits<double>::max(), hint));
  }
  if (subnormal > 0) {
    throw RangeError(fmt::format(
        "{} of {} values of {} are below the smallest normal float64 {:.1e} (underflow: "
        "precision lost){}",
        subnormal, values.size(), what, std::numeric_limits<double>::min(), hint));
  }
}

LiftingRange lifting_range(const Network& net, std::span<const double> theta) {
  check_theta(net, theta);
  const detail::EdgeTheta<double> w(net.parameter_map().get(), theta);
  const std::vector<double> log_w = detail::log10_abs(w.span());
  const detail::DagView g(net);
  const RangeRing ring{&log_w};
  const auto f = detail::dag_forward(g, ring);
  const auto b = detail::dag_backward(g, ring);
  LiftingRange out;
  for (Index v = 0; v < g.n; ++v) {
    const auto& fv = f[static_cast<std::size_t>(v)];
    const auto& gv = b.total[static_cast<std::size_t>(v)];
    if (g.is_output[static_cast<std::size_t>(v)] != 0) {
      widen(out.phi, fv.full);
      widen(out.jacobian, fv.skip);
    }
    // Every node is on a path (a node without inputs is an input, one without outputs an
    // output); a prefix that overflows is computed even where every suffix holds a zero weight
    // (inf x 0 = NaN), so every node's products count.
    widen(out.partial, fv.full);
    widen(out.partial, gv.full);
  }
  return out;
}

template <class T>
std::string range_problem(const LogRange& range, std::string_view what) {
  if (range.empty()) {
    return "";
  }
  const char* type =
      std::numeric_limits<T>::digits == std::numeric_limits<float>::digits ? "float32" : "float64";
  std::string out;
  if (!(range.max_log10 < max_log10_of<T>() - 1e-9)) {
    out = fmt::format("{} reaches 10^{:.1f}, beyond the largest {} {:.1e} (overflow to inf)", what,
                      range.max_log10, type, static_cast<double>(std::numeric_limits<T>::max()));
  }
  if (!(range.min_log10 > min_log10_of<T>() + 1e-9)) {
    out += fmt::format(
        "{}{} goes down to 10^{:.1f}, below the smallest normal {} {:.1e} "
        "(underflow: precision lost, then 0)",
        out.empty() ? "" : "; ", what, range.min_log10, type,
        static_cast<double>(std::numeric_limits<T>::min()));
  }
  return out;
}

template <class T>
std::string describe_problems(const LiftingRange& range) {
  std::string out;
  for (const auto& [r, what] :
       {std::pair{&range.phi, "|Phi_p|"}, std::pair{&range.jacobian, "|dPhi[p, k]|"},
        std::pair{&range.partial, "a product of weights along a path"}}) {
    const std::string problem = range_problem<T>(*r, what);
    if (!problem.empty()) {
      out += out.empty() ? problem : "; " + problem;
    }
  }
  return out;
}

template <class T>
void require_fits(const LiftingRange& range, bool jacobian, std::string_view what) {
  std::string problem = range_problem<T>(jacobian ? range.jacobian : range.phi,
                                         jacobian ? "|dPhi[p, k]|" : "|Phi_p|");
  if (problem.empty()) {
    problem = range_problem<T>(range.partial, "a product of weights along a path");
  }
  if (!problem.empty()) {
    throw RangeError(fmt::format("{} cannot be computed in {}: {}", what,
                                 type_name(std::numeric_limits<T>::digits), problem));
  }
}

#define PATHLIFT_MAGNITUDE(T)                                               \
  template std::string range_problem<T>(const LogRange&, std::string_view); \
  template std::string describe_problems<T>(const LiftingRange&);           \
  template void require_fits<T>(const LiftingRange&, bool, std::string_view);
PATHLIFT_MAGNITUDE(double)
PATHLIFT_MAGNITUDE(float)
#undef PATHLIFT_MAGNITUDE

}  // namespace pathlift
