#include "pathlift/path_metric.hpp"

#include <cmath>
#include <vector>

#include "src/core/json.hpp"
#include "src/dp/dp_scaled.hpp"
#include "src/dp/path_metric_rules.hpp"
#include "src/network/dag.hpp"
#include "src/network/parameters.hpp"

namespace pathlift {

namespace {

/// sum over edges e of |a_e - b_e| F_b(src e) G_a(dst e): a forward pass at |b| from the inputs
/// (value 1), a backward pass at |a| from the outputs, the edge terms merged as they come.
ScaledReal telescoping_bound(const Network& net, std::span<const double> theta_a,
                             std::span<const double> theta_b) {
  const detail::EdgeTheta<double> a(net.parameter_map().get(), theta_a);
  const detail::EdgeTheta<double> b(net.parameter_map().get(), theta_b);
  const auto m = static_cast<std::size_t>(net.num_edges());
  const detail::AbsDifferences diff = detail::abs_differences(std::span<const double>(a.data(), m),
                                                              std::span<const double>(b.data(), m));
  const detail::DagView g(net);
  const auto n = static_cast<std::size_t>(net.num_nodes());
  Buffer<double> fm(n);
  Buffer<std::int64_t> fk(n);
  const detail::DpPow1 w;
  detail::dp_forward_from_inputs(g, b.data(), w, fm.data(), fk.data());
  Buffer<double> gm(n);
  Buffer<std::int64_t> gk(n);
  std::fill(gm.begin(), gm.end(), 0.0);
  std::fill(gk.begin(), gk.end(), 0);
  double tm = 0;
  std::int64_t tk = detail::dp_no_exponent;
  detail::dp_backward(g, a.data(), w, gm.data(), gk.data(),
                      [&](NodeId /*v*/, double bm, std::int64_t bk, Index i0, Index i1) {
                        if (bm == 0) {
                          return;
                        }
                        for (Index i = i0; i < i1; ++i) {
                          const EdgeId e = g.in_list[i];
                          const double de = diff.values[static_cast<std::size_t>(e)];
                          const auto u = static_cast<std::size_t>(g.src[e]);
                          if (de == 0 || fm[u] == 0) {
                            continue;
                          }
                          int ee = 0;
                          const double dm = std::frexp(de, &ee);  // de may be huge
                          double tm_e = 0;
                          std::int64_t tk_e = 0;
                          detail::dp_normalize(dm * fm[u] * bm, fk[u] + bk + ee + diff.exponent,
                                               tm_e, tk_e);
                          detail::dp_merge(tm, tk, tm_e, tk_e);
                        }
                      });
  return tm == 0 ? ScaledReal{} : ScaledReal{tm, tk};
}

}  // namespace

PathMetric path_metric(const Network& net, std::span<const double> theta,
                       std::span<const double> theta2, const EngineOptions& /*options*/) {
  check_theta(net, theta);
  check_theta(net, theta2);
  return detail::path_metric_by(theta, theta2,
                                [&](std::span<const double> a, std::span<const double> b) {
                                  return telescoping_bound(net, a, b);
                                });
}

LipschitzBound lipschitz_bound(const Network& net, std::span<const double> theta,
                               std::span<const double> theta2, const EngineOptions& options) {
  check_theta(net, theta);
  check_theta(net, theta2);
  return detail::lipschitz_bound_by(theta, theta2,
                                    [&](std::span<const double> a, std::span<const double> b) {
                                      return path_metric(net, a, b, options);
                                    });
}

std::string to_json(const PathMetric& metric, int indent) {
  detail::Json j;
  j["metric"] = detail::scaled_value_json(metric.value);
  j["log10_metric"] = detail::scaled_log10_json(metric.value);
  j["exact"] = metric.exact;
  return j.dump(indent);
}

std::string to_json(const LipschitzBound& bound, int indent) {
  detail::Json j;
  j["lipschitz_constant"] = detail::scaled_value_json(bound.constant);
  j["log10_lipschitz_constant"] = detail::scaled_log10_json(bound.constant);
  j["lipschitz_exact"] = bound.exact;
  j["sign_changes"] = bound.sign_changes;
  return j.dump(indent);
}

}  // namespace pathlift
