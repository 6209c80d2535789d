// Each parameter's, node's, channel's and layer's share of the path-norm (path_shares.hpp).

#include "pathlift/path_shares.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "pathlift/error.hpp"
#include "pathlift/layers.hpp"
#include "pathlift/path_free.hpp"
#include "src/core/enum_names.hpp"
#include "src/core/json.hpp"
#include "src/dp/dp_scaled.hpp"
#include "src/layer_dp/detail/layer_classes.hpp"
#include "src/layer_dp/detail/layer_dp_engine.hpp"
#include "src/layers/layer_kinds.hpp"
#include "src/network/dag.hpp"
#include "src/network/parameters.hpp"

namespace pathlift {

namespace {

constexpr std::array k_by_names{detail::EnumName<SharesBy>{SharesBy::parameter, "parameter"},
                                detail::EnumName<SharesBy>{SharesBy::node, "node"},
                                detail::EnumName<SharesBy>{SharesBy::channel, "channel"},
                                detail::EnumName<SharesBy>{SharesBy::layer, "layer"}};

constexpr const char* k_no_share =
    "path_norm_shares: ||Phi||_s = 0: every path has weight 0, no share exists";

/// x / total for x = m 2^k (m >= 0), total > 0.
double ratio(double m, std::int64_t k, const ScaledReal& total) {
  if (m == 0) {
    return 0;
  }
  const double e = static_cast<double>(k - total.exponent);
  return e < -1100 ? 0.0 : std::ldexp(m / total.mantissa, static_cast<int>(std::min(e, 1100.0)));
}

/// F(v) G(v) / S for every node of the DAG.
template <class W>
std::vector<double> node_shares(const Network& net, std::span<const double> theta, const W& w,
                                const ScaledReal& total) {
  const detail::DagView g(net);
  const detail::EdgeTheta<double> t(net.parameter_map().get(), theta);
  const auto n = static_cast<std::size_t>(g.n);
  std::vector<double> fm(n, 0.0);
  std::vector<std::int64_t> fk(n, 0);
  std::vector<double> gm(n, 0.0);
  std::vector<std::int64_t> gk(n, 0);
  detail::dp_forward_from_inputs(g, t.data(), w, fm.data(), fk.data());
  detail::dp_backward(g, t.data(), w, gm.data(), gk.data(),
                      [](NodeId, double, std::int64_t, Index, Index) {});
  std::vector<double> out(n);
  for (std::size_t v = 0; v < n; ++v) {
    out[v] = ratio(fm[v] * gm[v], fk[v] + gk[v], total);
  }
  return out;
}

std::vector<double> node_shares(const Network& net, std::span<const double> theta, double s,
                                const ScaledReal& total) {
  if (s == 1) {
    return node_shares(net, theta, detail::DpPow1{}, total);
  }
  if (s == 2) {
    return node_shares(net, theta, detail::DpPow2{}, total);
  }
  return node_shares(net, theta, detail::DpPowS{s}, total);
}

/// The channel or layer shares of a layer graph without per-parameter sums: the paths through
/// the edges into output channel c of parameter layer l (its weights' and bias's) are those
/// through the entries of c, sum over them of F(v) G(v), with F the kept forward sums and G the
/// backward sums, both on the position classes (G as sums over each class: the products summed
/// over a class are the entries' own); out.total from the same forward pass.
void layer_shares(const LayerGraph& graph, std::span<const double> theta, double s, SharesBy by,
                  const EngineOptions& options, PathNormShares& out) {
  const detail::EigenSerial serial;
  const detail::LayerPlan plan(graph, options);
  const detail::LayerClasses classes = detail::forward_classes(plan);
  plan.require_memory(1, 0, "the path-norm shares", &classes);
  const detail::WeightSpec w{detail::Mode::power, s, theta, {}};
  const std::vector<detail::TensorPtr> f =
      detail::forward_pass(plan, w, true, 1.0, nullptr, nullptr, {0, 0.5}, &classes);
  out.total = detail::outputs_total(plan, detail::expand_outputs(plan, f, classes), nullptr);
  if (out.total.is_zero()) {
    throw RangeError(k_no_share);
  }
  // Per parameter layer: its channels' sums (m 2^k, one exponent a layer).
  std::vector<std::vector<double>> sums(plan.size());
  std::vector<std::int64_t> exps(plan.size(), 0);
  detail::backward_pass(
      plan, w, true, false, nullptr, nullptr,
      [&](std::size_t l, const detail::Tensor& g) {
        const detail::Tensor& a = *f[l];
        const auto channels = static_cast<std::size_t>(plan.shape(l).front());
        const std::size_t positions = a.value.size() / channels;
        if (g.value.size() != a.value.size()) {
          throw std::logic_error(
              "path_norm_shares: forward and backward sums of a layer differ in size");
        }
        std::vector<double>& c = sums[l];
        c.assign(channels, 0.0);
        for (std::size_t ch = 0; ch < channels; ++ch) {
          const double* x = a.value.data() + ch * positions;
          const double* y = g.value.data() + ch * positions;
          c[ch] = std::inner_product(x, x + positions, y, 0.0);
        }
        exps[l] = a.exp + g.exp;
      },
      {0.5, 1}, &classes);
  for (std::size_t l = 1; l < plan.size(); ++l) {
    const Layer& ly = graph.layers[l];
    if (!detail::has_parameters(ly)) {
      continue;
    }
    const auto channels = static_cast<std::size_t>(plan.shape(l).front());
    std::vector<double> c = sums[l].empty() ? std::vector<double>(channels, 0.0) : sums[l];
    if (by == SharesBy::layer) {
      out.names.push_back(ly.name);
      out.shares.push_back(ratio(std::accumulate(c.begin(), c.end(), 0.0), exps[l], out.total));
      continue;
    }
    for (std::size_t ch = 0; ch < channels; ++ch) {
      out.names.push_back(fmt::format("{}[{}]", ly.name, ch));
      out.shares.push_back(ratio(c[ch], exps[l], out.total));
    }
  }
}

}  // namespace

std::string PathNormShares::name(std::size_t i) const {
  return names.empty() ? fmt::format("theta[{}]", i) : names[i];
}

std::string to_string(SharesBy by) {
  return std::string(detail::enum_name(k_by_names, by));
}

SharesBy parse_shares_by(std::string_view name) {
  for (const auto& e : k_by_names) {
    if (e.name == name) {
      return e.value;
    }
  }
  throw std::invalid_argument(fmt::format(
      "shares by '{}': expected parameter, node, channel or layer", printable(std::string(name))));
}

PathNormShares path_norm_shares(const Model& model, std::span<const double> theta, double s,
                                SharesBy by, const EngineOptions& options) {
  if (!(s > 0) || std::isinf(s)) {
    throw std::invalid_argument(fmt::format("path_norm_shares: s = {} must be finite and > 0", s));
  }
  check_theta(model, theta);
  const LayerGraph* graph = model.layer_graph();
  if (graph == nullptr && (by == SharesBy::channel || by == SharesBy::layer)) {
    throw std::invalid_argument(
        fmt::format("path_norm_shares by {}: a DAG has no layers (shares by parameter or node)",
                    to_string(by)));
  }
  PathNormShares out;
  out.s = s;
  out.by = by;
  if (by == SharesBy::channel || by == SharesBy::layer) {
    layer_shares(*graph, theta, s, by, options, out);  // the norm from its own forward pass
    return out;
  }
  const PathNorm norm = path_norm(model, theta, s, PathNormDetail::outputs, options);
  out.total = norm.sum;
  if (norm.sum.is_zero()) {
    throw RangeError(k_no_share);
  }
  if (by == SharesBy::node) {
    const auto net = model.unrolled(options);
    out.shares = node_shares(*net, theta, s, norm.sum);
    for (NodeId v = 0; v < net->num_nodes(); ++v) {
      out.names.push_back(net->node_name(v));
    }
    return out;
  }
  // theta_k d||Phi||_s / d theta_k = S^(1/s - 1) sum_p |Phi_p|^s (with multiplicity): divided
  // by ||Phi||_s = S^(1/s), the share of ||Phi||_s^s.
  if (const auto zero = std::find(theta.begin(), theta.end(), 0.0); s < 1 && zero != theta.end()) {
    throw std::invalid_argument(fmt::format(
        "path_norm_shares by parameter with s = {} < 1: theta[{}] = 0, where a parameter's "
        "share, read from the gradient of the norm, is not defined (|t|^s has an infinite "
        "slope at 0); the shares by node, channel and layer are",
        s, zero - theta.begin()));
  }
  const std::vector<double> gradient = path_norm_gradient(model, theta, s, options);
  const double scale = norm.norm.value();
  std::vector<double> param(theta.size());
  for (std::size_t k = 0; k < theta.size(); ++k) {
    param[k] = theta[k] == 0 ? 0.0 : theta[k] * gradient[k] / scale;
    if (!std::isfinite(param[k])) {
      throw RangeError(fmt::format(
          "path_norm_shares: the share of parameter {} is beyond double's range (its gradient "
          "{} for a path-norm of 10^{:.1f})",
          k, gradient[k], norm.norm.log10()));
    }
  }
  out.shares = std::move(param);
  return out;
}

std::string to_json(const PathNormShares& shares, int indent) {
  using detail::Json;
  Json j;
  j["s"] = shares.s;
  j["by"] = to_string(shares.by);
  j["total"] = detail::scaled_value_json(shares.total);
  j["log10_total"] = detail::scaled_log10_json(shares.total);
  Json map = Json::object();
  for (std::size_t i = 0; i < shares.shares.size(); ++i) {
    map[shares.name(i)] = shares.shares[i];
  }
  j["shares"] = std::move(map);
  return j.dump(indent);
}

}  // namespace pathlift
