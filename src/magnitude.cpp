#include "pathlift/magnitude.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "pathlift/error.hpp"
#include "pathlift/lifting.hpp"
#include "pathlift/limits.hpp"
#include "pathlift/paths.hpp"
#include "src/detail/dag.hpp"
#include "src/detail/dag_dp.hpp"
#include "src/detail/one_parameter_per_edge.hpp"
#include "src/detail/parameters.hpp"
#include "src/detail/path_totals.hpp"

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

/// log10|w_e| of each entry of `w` (-inf at a zero): the terms every log form sums.
std::vector<double> log10_abs(std::span<const double> w) {
  std::vector<double> out(w.size());
  for (std::size_t e = 0; e < w.size(); ++e) {
    out[e] = std::log10(std::abs(w[e]));
  }
  return out;
}

/// Refuses, before the enumeration, the path set (and `objects`) beside a table of a sign and a
/// log10 per path (per entry of B when `per_entry`): P and nnz counted once.
void require_log_table(const Network& net, std::initializer_list<PathObject> objects,
                       bool per_entry, std::size_t max_memory, std::string_view what) {
  const detail::PathTotals t = detail::path_totals(net);
  double bytes = 0;
  for (const PathObject object : objects) {
    bytes += static_cast<double>(estimate_bytes(t.paths, t.nnz, net.num_params(), object));
  }
  bytes += (per_entry ? t.nnz : t.paths).approx() * (sizeof(std::int8_t) + sizeof(double));
  const auto most = std::numeric_limits<std::size_t>::max();
  require_memory(t.paths, t.nnz, net.num_params(),
                 bytes < static_cast<double>(most) ? static_cast<std::size_t>(bytes) : most,
                 max_memory, std::string(what));
}

std::string type_name(int digits) {
  return digits == std::numeric_limits<float>::digits ? "float32" : "float64";
}

}  // namespace

LiftingRange lifting_range(const Network& net, std::span<const double> theta) {
  check_theta(net, theta);
  const detail::EdgeTheta<double> w(net.parameter_map().get(), theta);
  const std::vector<double> log_w = log10_abs(w.span());
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

SignedLog10 log_path_lifting(const Network& net, std::span<const double> theta,
                             const EngineOptions& options) {
  check_theta(net, theta);
  require_log_table(net, {PathObject::path_set}, false, options.max_memory,
                    "the sign and log10 form of Phi (and the path set)");
  const PathSet paths = enumerate_paths(net, options);
  const detail::EdgeTheta<double> w(net.parameter_map().get(), theta);
  const std::vector<double> log_w = log10_abs(w.span());
  const Index np = paths.size();
  const auto off = std::span<const Index>(*paths.offsets);
  const auto edges = std::span<const EdgeId>(*paths.edges);
  SignedLog10 out;
  out.sign.assign(static_cast<std::size_t>(np), 0);
  out.log10.assign(static_cast<std::size_t>(np), -k_inf);
#pragma omp parallel for schedule(static) num_threads(resolve_threads(options.threads))
  for (Index p = 0; p < np; ++p) {
    double sum = 0;
    int sign = 1;
    for (Index k = off[static_cast<std::size_t>(p)]; k < off[static_cast<std::size_t>(p) + 1];
         ++k) {
      const auto e = static_cast<std::size_t>(edges[static_cast<std::size_t>(k)]);
      const double x = w.span()[e];
      sign = x == 0 ? 0 : (x < 0 ? -sign : sign);
      sum += log_w[e];
    }
    out.sign[static_cast<std::size_t>(p)] = static_cast<std::int8_t>(sign);
    out.log10[static_cast<std::size_t>(p)] = sign == 0 ? -k_inf : sum;
  }
  return out;
}

LogJacobian log_jacobian(const Network& net, std::span<const double> theta,
                         const EngineOptions& options) {
  detail::require_one_parameter_per_edge(net, "the sign and log10 form of dPhi");
  check_theta(net, theta);
  require_log_table(net, {PathObject::path_set, PathObject::skeleton}, true, options.max_memory,
                    "the sign and log10 form of dPhi (and the path set and skeleton)");
  const PathSet paths = enumerate_paths(net, options);
  const std::vector<double> log_theta = log10_abs(theta);
  LogJacobian out;
  out.pattern = skeleton(paths, options);
  const auto off = out.pattern.offsets();
  const auto cols = out.pattern.indices();
  const auto nnz = static_cast<std::size_t>(out.pattern.nnz());
  out.values.sign.assign(nnz, 0);
  out.values.log10.assign(nnz, -k_inf);
  const Index np = out.pattern.rows;
#pragma omp parallel for schedule(static) num_threads(resolve_threads(options.threads))
  for (Index p = 0; p < np; ++p) {
    const auto first = static_cast<std::size_t>(off[static_cast<std::size_t>(p)]);
    const auto last = static_cast<std::size_t>(off[static_cast<std::size_t>(p) + 1]);
    double sum = 0;  // over the non-zero weights
    int sign = 1;    // of the non-zero weights
    std::size_t zeros = 0;
    std::size_t zero_at = last;
    for (std::size_t k = first; k < last; ++k) {
      const auto c = static_cast<std::size_t>(cols[k]);
      if (theta[c] == 0) {
        ++zeros;
        zero_at = k;
      } else {
        sign = theta[c] < 0 ? -sign : sign;
        sum += log_theta[c];
      }
    }
    if (zeros > 1) {
      continue;  // every entry has a zero factor
    }
    for (std::size_t k = first; k < last; ++k) {
      if (zeros == 1 && k != zero_at) {
        continue;
      }
      const auto c = static_cast<std::size_t>(cols[k]);
      out.values.sign[k] = static_cast<std::int8_t>(theta[c] < 0 ? -sign : sign);
      out.values.log10[k] = theta[c] == 0 ? sum : sum - log_theta[c];
    }
  }
  return out;
}

#define PATHLIFT_MAGNITUDE(T)                                               \
  template std::string range_problem<T>(const LogRange&, std::string_view); \
  template std::string describe_problems<T>(const LiftingRange&);           \
  template void require_fits<T>(const LiftingRange&, bool, std::string_view);
PATHLIFT_MAGNITUDE(double)
PATHLIFT_MAGNITUDE(float)
#undef PATHLIFT_MAGNITUDE

}  // namespace pathlift
