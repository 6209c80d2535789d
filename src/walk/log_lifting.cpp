// The sign and log10 forms of Phi and dPhi (lifting.hpp): exact at any magnitude, for the
// liftings that do not fit a double (magnitude.hpp's lifting_range tells which).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "pathlift/lifting.hpp"
#include "pathlift/limits.hpp"
#include "pathlift/path_memory.hpp"
#include "pathlift/paths.hpp"
#include "src/core/parallel.hpp"
#include "src/dp/log_weights.hpp"
#include "src/dp/path_totals.hpp"
#include "src/network/one_parameter_per_edge.hpp"
#include "src/network/parameters.hpp"

namespace pathlift {

namespace {

constexpr double k_inf = std::numeric_limits<double>::infinity();

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

}  // namespace

SignedLog10 log_path_lifting(const Network& net, std::span<const double> theta,
                             const EngineOptions& options) {
  check_theta(net, theta);
  require_log_table(net, {PathObject::path_set}, false, options.max_memory,
                    "the sign and log10 form of Phi (and the path set)");
  const PathSet paths = enumerate_paths(net, options);
  const detail::EdgeTheta<double> w(net.parameter_map().get(), theta);
  const std::vector<double> log_w = detail::log10_abs(w.span());
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
  const std::vector<double> log_theta = detail::log10_abs(theta);
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

}  // namespace pathlift
