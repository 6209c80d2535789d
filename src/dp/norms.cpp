#include "pathlift/norms.hpp"

#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <limits>
#include <numbers>
#include <stdexcept>

#include "pathlift/error.hpp"
#include "src/core/json.hpp"
#include "src/dp/dp_scaled.hpp"
#include "src/dp/max_value.hpp"
#include "src/dp/norm_gradient.hpp"
#include "src/network/parameters.hpp"

namespace pathlift {

// ---------------------------------------------------------------------------------------------
// Path-norms

namespace {

ScaledReal scaled_sum(const std::vector<ScaledReal>& xs) {
  double m = 0;
  std::int64_t k = detail::dp_no_exponent;
  for (const auto& x : xs) {
    if (x.mantissa != 0) {
      detail::dp_merge(m, k, x.mantissa, x.exponent);
    }
  }
  ScaledReal r;
  if (m != 0) {
    detail::dp_normalize(m, k, r.mantissa, r.exponent);
  }
  return r;
}

template <class W>
void norm_passes(const detail::DagView& g, const double* theta, const W& w, PathNormDetail parts,
                 Buffer<double>& m, Buffer<std::int64_t>& k, PathNorm& out) {
  const Network& net = *g.net;
  detail::dp_forward_from_inputs(g, theta, w, m.data(), k.data());
  std::vector<ScaledReal> sums;
  sums.reserve(net.outputs().size());
  for (NodeId o : net.outputs()) {
    sums.push_back({m[static_cast<std::size_t>(o)], k[static_cast<std::size_t>(o)]});
  }
  out.sum = scaled_sum(sums);
  for (const auto& x : sums) {
    out.per_output.push_back(out.s == 0 ? x : scaled_root(x, out.s));
  }
  if (parts == PathNormDetail::inputs_and_outputs) {
    std::fill(m.begin(), m.end(), 0.0);
    std::fill(k.begin(), k.end(), 0);
    detail::dp_backward(g, theta, w, m.data(), k.data(),
                        [](NodeId, double, std::int64_t, Index, Index) {});
    for (NodeId i : net.inputs()) {
      const ScaledReal x{m[static_cast<std::size_t>(i)], k[static_cast<std::size_t>(i)]};
      out.per_input.push_back(out.s == 0 ? x : scaled_root(x, out.s));
    }
  }
}

using detail::MaxValue;

/// max_p |Phi_p| by the max-plus DP: forward M(v) = max over in-edges of |w_e| M(src), 1 at the
/// inputs; with per inputs, the backward maxima too. Every value is a product of |weights|:
/// exact to the rounding of each multiplication.
void max_passes(const detail::DagView& g, const double* theta, PathNormDetail parts,
                PathNorm& out) {
  const Network& net = *g.net;
  std::vector<MaxValue> f(static_cast<std::size_t>(g.n));
  for (Index pos = 0; pos < g.n; ++pos) {
    const NodeId v = g.topo[pos];
    MaxValue best = pos < g.num_inputs ? MaxValue::one() : MaxValue{};
    for (Index t = g.in_off[v]; t < g.in_off[v + 1]; ++t) {
      const EdgeId e = g.in_list[t];
      const MaxValue x = f[static_cast<std::size_t>(g.src[e])].times(theta[e]);
      best = best.less(x) ? x : best;
    }
    f[static_cast<std::size_t>(v)] = best;
  }
  MaxValue top;
  for (const NodeId o : net.outputs()) {
    const MaxValue x = f[static_cast<std::size_t>(o)];
    out.per_output.push_back(x.m == 0 ? ScaledReal{} : ScaledReal{x.m, x.k});
    top = top.less(x) ? x : top;
  }
  out.sum = top.m == 0 ? ScaledReal{} : ScaledReal{top.m, top.k};
  if (parts == PathNormDetail::inputs_and_outputs) {
    std::vector<MaxValue> b(static_cast<std::size_t>(g.n));
    for (Index pos = g.n - 1; pos >= 0; --pos) {
      const NodeId v = g.topo[pos];
      MaxValue best = net.is_output(v) ? MaxValue::one() : MaxValue{};
      for (const EdgeId e : net.out_edges(v)) {
        const MaxValue x = b[static_cast<std::size_t>(net.target(e))].times(theta[e]);
        best = best.less(x) ? x : best;
      }
      b[static_cast<std::size_t>(v)] = best;
    }
    for (const NodeId i : net.inputs()) {
      const MaxValue x = b[static_cast<std::size_t>(i)];
      out.per_input.push_back(x.m == 0 ? ScaledReal{} : ScaledReal{x.m, x.k});
    }
  }
}

}  // namespace

PathNorm path_norm(const Network& net, std::span<const double> theta_in, double s,
                   PathNormDetail parts) {
  check_theta_size(net, theta_in.size());
  if (net.parameter_map()) {
    check_theta(net, theta_in);  // named by parameter before the edge weights are formed
  }
  const detail::EdgeTheta<double> theta(net.parameter_map().get(), theta_in);
  detail::check_norm_exponent(s);
  const detail::DagView g(net);
  if (std::isinf(s)) {
    check_theta(net, theta_in);
    PathNorm out;
    out.s = s;
    max_passes(g, theta.data(), parts, out);
    out.norm = out.sum;
    return out;
  }
  const auto n = static_cast<std::size_t>(net.num_nodes());
  Buffer<double> m(n);
  Buffer<std::int64_t> k(n);
  PathNorm out;
  out.s = s;
  if (s == 0) {
    // Weights are not used at s = 0, so the passes would not meet a NaN: check them here.
    check_theta(net, theta_in);
    norm_passes(g, theta.data(), detail::DpPow0{}, parts, m, k, out);
  } else if (s == 1) {
    norm_passes(g, theta.data(), detail::DpPow1{}, parts, m, k, out);
  } else if (s == 2) {
    norm_passes(g, theta.data(), detail::DpPow2{}, parts, m, k, out);
  } else {
    norm_passes(g, theta.data(), detail::DpPowS{s}, parts, m, k, out);
  }
  out.norm = s == 0 ? out.sum : scaled_root(out.sum, s);
  return out;
}

// ---------------------------------------------------------------------------------------------
// The gradient of the path-norm

namespace detail {

// (declared in src/dp/norm_gradient.hpp)
double gradient_entry(double x, std::int64_t k, std::size_t& underflows) {
  const double y = dp_ldexp(x, k);
  if (x != 0 && std::abs(y) < std::numeric_limits<double>::min()) {
    ++underflows;
  }
  return y;
}

void require_no_underflow(std::size_t underflows, std::size_t d) {
  if (underflows > 0) {
    throw RangeError(fmt::format(
        "{} of {} entries of the path-norm gradient are non-zero but below the smallest normal "
        "float64 {:.1e} (underflow); scale theta up",
        underflows, d, std::numeric_limits<double>::min()));
  }
}

void check_norm_exponent(double s) {
  if (!(s >= 0)) {
    throw std::invalid_argument(fmt::format(
        "path-norm exponent s = {}: s must be >= 0 (0 counts paths, inf gives max_p |Phi_p|)", s));
  }
}

void check_gradient_exponent(double s) {
  if (!(s > 0) || !std::isfinite(s)) {
    throw std::invalid_argument(fmt::format(
        "path-norm gradient: the exponent s = {} must be finite and > 0 ({})", s,
        s == 0 ? "at s = 0 the norm is the path count, which does not depend on theta"
        : std::isinf(s)
            ? "max_p |Phi_p| is not differentiable where the largest paths tie; its gradient is "
              "not computed"
            : "a path-norm's exponent is >= 0"));
  }
}

void check_differentiable(std::span<const double> theta, double s,
                          const std::function<std::string(Index)>& label) {
  if (s >= 1) {
    return;
  }
  for (std::size_t k = 0; k < theta.size(); ++k) {
    if (theta[k] == 0) {
      throw std::invalid_argument(
          fmt::format("path-norm gradient: the L^{} path-norm is not differentiable at "
                      "theta[{}] = 0 ({}): for s < 1, |t|^s has an infinite slope at 0",
                      s, k, label(static_cast<Index>(k))));
    }
  }
}

ScaledReal norm_gradient_factor(const ScaledReal& sum, double s) {
  // d||Phi||_s / d theta = (1/s) S^(1/s - 1) dS/d theta, and dS/d theta carries the factor s:
  // what multiplies |theta|^(s-1) sign(theta) F G is S^((1 - s) / s) = norm^(1 - s).
  if (s == 1 || sum.is_zero()) {
    return ScaledReal{0.5, 1};  // 1
  }
  return scaled_root(sum, s / (1 - s));
}

}  // namespace detail

std::vector<double> path_norm_gradient(const Network& net, std::span<const double> theta_in,
                                       double s) {
  detail::check_gradient_exponent(s);
  check_theta(net, theta_in);
  detail::check_differentiable(theta_in, s, [&](Index k) { return net.param_label(k); });
  const detail::EdgeTheta<double> theta(net.parameter_map().get(), theta_in);
  const detail::DagView g(net);
  const auto n = static_cast<std::size_t>(net.num_nodes());
  Buffer<double> fm(n);
  Buffer<std::int64_t> fk(n);
  const detail::DpPowS w{s};
  detail::dp_forward_from_inputs(g, theta.data(), w, fm.data(), fk.data());
  std::vector<ScaledReal> outs;
  for (NodeId o : net.outputs()) {
    outs.push_back({fm[static_cast<std::size_t>(o)], fk[static_cast<std::size_t>(o)]});
  }
  const ScaledReal factor = detail::norm_gradient_factor(scaled_sum(outs), s);
  // Per edge: |w|^(s-1) sign(w) F(src) G(dst) factor, as (mantissa, exponent).
  const auto m = static_cast<std::size_t>(net.num_edges());
  std::vector<double> em(m, 0.0);
  std::vector<std::int64_t> ek(m, 0);
  Buffer<double> gm(n);
  Buffer<std::int64_t> gk(n);
  std::fill(gm.begin(), gm.end(), 0.0);
  std::fill(gk.begin(), gk.end(), 0);
  const detail::DpPowS slope{s - 1};
  detail::dp_backward(
      g, theta.data(), w, gm.data(), gk.data(),
      [&](NodeId /*v*/, double bm, std::int64_t bk, Index i0, Index i1) {
        for (Index i = i0; i < i1; ++i) {
          const EdgeId e = g.in_list[i];
          const double t = theta.data()[e];
          double sm = 0;
          std::int64_t sk = 0;
          if (t == 0 || !slope.exact(t, sm, sk)) {
            continue;  // 0 for s >= 1 (s < 1 was refused above)
          }
          const NodeId u = g.src[e];
          const double x =
              (t < 0 ? -1.0 : 1.0) * sm * fm[static_cast<std::size_t>(u)] * bm * factor.mantissa;
          detail::dp_normalize(x, sk + fk[static_cast<std::size_t>(u)] + bk + factor.exponent,
                               em[static_cast<std::size_t>(e)], ek[static_cast<std::size_t>(e)]);
        }
      });
  std::vector<double> out(static_cast<std::size_t>(net.num_params()), 0.0);
  std::size_t underflows = 0;
  if (!net.parameter_map()) {
    for (std::size_t e = 0; e < m; ++e) {
      out[e] = detail::gradient_entry(em[e], ek[e], underflows);
    }
    detail::require_no_underflow(underflows, out.size());
    return out;
  }
  std::vector<double> pm(out.size(), 0.0);
  std::vector<std::int64_t> pk(out.size(), detail::dp_no_exponent);
  for (std::size_t e = 0; e < m; ++e) {
    const Index k = net.edge_param(static_cast<EdgeId>(e));
    if (k >= 0 && em[e] != 0) {
      detail::dp_merge(pm[static_cast<std::size_t>(k)], pk[static_cast<std::size_t>(k)], em[e],
                       ek[e]);
    }
  }
  for (std::size_t k = 0; k < out.size(); ++k) {
    out[k] = pm[k] == 0 ? 0.0 : detail::gradient_entry(pm[k], pk[k], underflows);
  }
  detail::require_no_underflow(underflows, out.size());
  return out;
}

std::vector<double> detail::magnitude_from_gradient(
    std::span<const double> theta, const std::function<std::vector<double>()>& of_gradient) {
  std::vector<double> gradient;
  try {
    gradient = of_gradient();
  } catch (const RangeError& e) {
    throw RangeError(
        fmt::format("path magnitudes, theta_k times the gradient of ||Phi||_1: {}", e.what()));
  }
  for (std::size_t k = 0; k < gradient.size(); ++k) {
    // |theta_k| |g_k|: the signs agree; 0 at theta_k = 0 even when g_k overflowed.
    gradient[k] = theta[k] == 0 ? 0.0 : std::abs(theta[k]) * std::abs(gradient[k]);
  }
  return gradient;
}

std::vector<double> path_magnitude(const Network& net, std::span<const double> theta) {
  return detail::magnitude_from_gradient(theta,
                                         [&] { return path_norm_gradient(net, theta, 1.0); });
}

std::string s_key(double s) {
  return fmt::format("{}", s);
}

namespace {

/// {name: log10 of each part}, the names those of `names` or the indices.
detail::Json per_node_json(const std::vector<ScaledReal>& parts, std::span<const std::string> names,
                           std::string_view what) {
  if (!names.empty() && names.size() != parts.size()) {
    throw std::invalid_argument(fmt::format("to_json: {} names for the {} norms per {} node",
                                            names.size(), parts.size(), what));
  }
  detail::Json j = detail::Json::object();
  for (std::size_t i = 0; i < parts.size(); ++i) {
    j[names.empty() ? std::to_string(i) : names[i]] = detail::scaled_log10_json(parts[i]);
  }
  return j;
}

}  // namespace

std::string to_json(std::span<const PathNorm> norms, std::span<const std::string> output_names,
                    std::span<const std::string> input_names, int indent) {
  using detail::Json;
  Json values = Json::object();
  Json logs = Json::object();
  Json per_output = Json::object();
  Json per_input = Json::object();
  for (const PathNorm& n : norms) {
    values[s_key(n.s)] = detail::scaled_value_json(n.norm);
    logs[s_key(n.s)] = detail::scaled_log10_json(n.norm);
    if (!n.per_output.empty()) {
      per_output[s_key(n.s)] = per_node_json(n.per_output, output_names, "output");
    }
    if (!n.per_input.empty()) {
      per_input[s_key(n.s)] = per_node_json(n.per_input, input_names, "input");
    }
  }
  Json j;
  j["norms"] = values;
  j["log10_norms"] = logs;
  if (!per_output.empty()) {
    j["log10_per_output"] = per_output;
  }
  if (!per_input.empty()) {
    j["log10_per_input"] = per_input;
  }
  return j.dump(indent);
}

}  // namespace pathlift
