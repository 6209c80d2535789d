// generalization_bound(): the path-norm toolkit's Theorem 3.1 with its constants read from the
// model (generalization.hpp, docs/generalization.md).

#include "pathlift/generalization.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include "pathlift/layers.hpp"
#include "pathlift/path_free.hpp"
#include "src/core/checked.hpp"
#include "src/core/json.hpp"
#include "src/layer_dp/detail/layer_depth.hpp"
#include "src/layers/layer_kinds.hpp"
#include "src/layers/layers_geometry.hpp"
#include "src/layers/layers_unroll.hpp"

namespace pathlift {

namespace {

[[noreturn]] void not_covered(const std::string& where, const Activation& a) {
  throw std::invalid_argument(fmt::format(
      "generalization_bound: {} has activation {}; Theorem 3.1 covers ReLU, identity and "
      "*-max-pooling neurons only",
      where, a.name()));
}

/// On a DAG: one pass in topological order for the longest path and the most max nodes on one.
void dag_constants(const Network& net, GeneralizationBound& g) {
  std::vector<Index> depth(static_cast<std::size_t>(net.num_nodes()), 0);
  std::vector<Index> maxes(depth.size(), 0);
  std::set<Index> orders;  // the k of the k-max-pooling neurons: P counts them
  for (const NodeId v : net.topological_order()) {
    const Activation& a = net.activation(v);
    if (a.kind == ActivationKind::leaky_relu) {
      not_covered(fmt::format("node '{}'", printable(net.node_name(v))), a);
    }
    const auto u = static_cast<std::size_t>(v);
    const bool is_max = a.kind == ActivationKind::max && !net.is_input(v);
    for (const EdgeId e : net.in_edges(v)) {
      const auto s = static_cast<std::size_t>(net.source(e));
      depth[u] = std::max(depth[u], depth[s] + 1);
      maxes[u] = std::max(maxes[u], maxes[s]);
    }
    if (is_max) {
      maxes[u] += 1;
      orders.insert(a.order);
      g.max_pool_kernel = std::max(g.max_pool_kernel, static_cast<Index>(net.in_edges(v).size()));
    }
  }
  g.max_pool_types = static_cast<Index>(orders.size());
  for (const NodeId o : net.outputs()) {
    g.depth = std::max(g.depth, depth[static_cast<std::size_t>(o)]);
    g.max_pools_on_a_path = std::max(g.max_pools_on_a_path, maxes[static_cast<std::size_t>(o)]);
  }
  g.inputs = static_cast<Index>(net.data_inputs().size());
  g.outputs = static_cast<Index>(net.outputs().size());
}

/// On a layer graph: the layer-level depths (detail::layer_depths), made exact by the counted
/// path lengths when they fit.
void layer_constants(const Model& model, const LayerGraph& graph, const EngineOptions& options,
                     GeneralizationBound& g) {
  const std::vector<std::vector<Index>> shapes = layer_shapes(graph);
  const std::vector<std::vector<std::uint8_t>> nodes =
      detail::Unroller(graph, options).node_entries();
  std::set<Index> orders;  // the k of the k-max-pooling neurons that reach an output
  for (std::size_t l = 1; l < graph.layers.size(); ++l) {
    const Layer& ly = graph.layers[l];
    if (detail::form_of(ly.kind) == detail::Form::entrywise &&
        ly.activation.kind == ActivationKind::leaky_relu) {
      not_covered(fmt::format("layer '{}'", printable(ly.name)), ly.activation);
    }
    const std::vector<std::uint8_t>& flags = nodes[l];
    if (!detail::makes_max_nodes(ly.kind) ||
        std::find(flags.begin(), flags.end(), std::uint8_t{1}) == flags.end()) {
      continue;
    }
    const std::vector<Index>& in = shapes[static_cast<std::size_t>(ly.inputs.front())];
    if (detail::form_of(ly.kind) == detail::Form::group) {
      const detail::Groups groups = detail::groups_of(ly, in);
      for (std::size_t e = 0; e < flags.size(); ++e) {
        if (flags[e] == 1) {
          orders.insert(groups.order(static_cast<Index>(e) / groups.positions, ly.descending));
        }
      }
      g.max_pool_kernel = std::max(g.max_pool_kernel, ly.group_size);
      continue;
    }
    orders.insert(detail::window_order(ly));
    g.max_pool_kernel =
        std::max({g.max_pool_kernel, detail::tap_range(detail::window_of(ly, in)).most, Index{1}});
  }
  g.max_pool_types = static_cast<Index>(orders.size());
  const detail::LayerDepths depths = detail::layer_depths(graph, nodes);
  for (const Index o : graph.outputs) {
    const auto u = static_cast<std::size_t>(o);
    g.depth = std::max(g.depth, depths.depth[u] + 1);  // the edges into the output nodes
    g.max_pools_on_a_path = std::max(g.max_pools_on_a_path, depths.max_pools[u]);
    g.outputs += detail::entries_of(shapes[u]);
  }
  g.inputs = detail::entries_of(graph.input_shape);
  const PathCounts counts = count_paths(model, options);
  g.depth_exact = counts.max_path_length >= 0;
  if (g.depth_exact) {
    g.depth = counts.max_path_length;
  }
}

/// x times c (c >= 0 finite), beyond double's range.
ScaledReal times(const ScaledReal& x, double c) {
  if (x.is_zero() || c == 0) {
    return {};
  }
  int e = 0;
  const double m = std::frexp(x.mantissa * c, &e);
  return {m, x.exponent + e};
}

}  // namespace

namespace detail {

LayerDepths layer_depths(const LayerGraph& graph,
                         const std::vector<std::vector<std::uint8_t>>& nodes) {
  const std::size_t n = graph.layers.size();
  LayerDepths d{std::vector<Index>(n, 0), std::vector<Index>(n, 0)};
  for (std::size_t l = 1; l < n; ++l) {
    const Layer& ly = graph.layers[l];
    for (const Index i : ly.inputs) {
      d.depth[l] = std::max(d.depth[l], d.depth[static_cast<std::size_t>(i)]);
      d.max_pools[l] = std::max(d.max_pools[l], d.max_pools[static_cast<std::size_t>(i)]);
    }
    const std::vector<std::uint8_t>& flags = nodes[l];
    if (std::find(flags.begin(), flags.end(), std::uint8_t{1}) != flags.end()) {
      d.depth[l] += 1;
    }
    if (detail::makes_max_nodes(ly.kind)) {
      d.max_pools[l] += 1;
    }
  }
  return d;
}

}  // namespace detail

std::vector<std::string> generalization_assumptions() {
  return {
      "the n training samples are drawn i.i.d. and every input has ||x||_inf <= B",
      "the loss is the cross-entropy of the outputs (the constant 4 is its contraction)",
      "the bound is on the expected generalization gap of an estimator over the parameters with "
      "||Phi(theta)||_1 <= r, here r = this theta's L1 path-norm (the paper's Section 4 "
      "evaluation; a bound uniform over the data-dependent r needs a union bound over its "
      "values)",
      "every neuron is a ReLU, identity or *-max-pooling one (max pooling, k-max pooling, "
      "GroupSort; no leaky ReLU)",
      "B enters as max(B, 1): the bias paths see the constant input 1"};
}

GeneralizationBound generalization_bound(const Model& model, std::span<const double> theta,
                                         const GeneralizationBoundOptions& options) {
  if (!(options.samples > 0) || !std::isfinite(options.samples)) {
    throw std::invalid_argument(
        fmt::format("generalization_bound: the number of samples n must be finite and > 0 (got {})",
                    options.samples));
  }
  if (std::floor(options.samples) != options.samples) {
    throw std::invalid_argument(
        fmt::format("generalization_bound: the number of samples n must be a whole number (got {})",
                    options.samples));
  }
  if (!(options.input_bound >= 0) || !std::isfinite(options.input_bound)) {
    throw std::invalid_argument(
        fmt::format("generalization_bound: the input bound B must be finite and >= 0 (got {})",
                    options.input_bound));
  }
  check_theta(model, theta);
  GeneralizationBound r;
  if (const Network* net = model.dag()) {
    dag_constants(*net, r);
  } else {
    layer_constants(model, *model.layer_graph(), options.engine, r);
  }
  r.samples = options.samples;
  r.input_bound = options.input_bound;
  const auto D = static_cast<double>(r.depth);
  const auto P = static_cast<double>(r.max_pool_types);
  const auto K = static_cast<double>(r.max_pool_kernel);
  const auto M = static_cast<double>(r.max_pools_on_a_path);
  const double io = (static_cast<double>(r.inputs) + 1) * static_cast<double>(r.outputs);
  r.constant = std::sqrt(D * std::log((3 + 2 * P) * K) + std::log((3 + 2 * P) / (1 + P) * io));
  r.sharp_constant = std::sqrt(D * std::log(3.0) + M * std::log(K) + std::log(io));
  const double scale = 4 * std::max(options.input_bound, 1.0) / std::sqrt(options.samples);
  r.coefficient = scale * r.constant;
  r.sharp_coefficient = scale * r.sharp_constant;
  r.path_norm = path_norm(model, theta, 1.0, PathNormDetail::outputs, options.engine).norm;
  r.bound = times(r.path_norm, r.coefficient);
  r.sharp_bound = times(r.path_norm, r.sharp_coefficient);
  return r;
}

std::string to_json(const GeneralizationBound& r, int indent) {
  using detail::Json;
  using detail::scaled_log10_json;
  using detail::scaled_value_json;
  Json j;
  j["D"] = r.depth;
  j["D_exact"] = r.depth_exact;
  j["P"] = r.max_pool_types;
  j["K"] = r.max_pool_kernel;
  j["M"] = r.max_pools_on_a_path;
  j["d_in"] = r.inputs;
  j["d_out"] = r.outputs;
  j["n"] = r.samples;
  j["B"] = r.input_bound;
  j["C"] = r.constant;
  j["coefficient"] = r.coefficient;
  j["l1_path_norm"] = scaled_value_json(r.path_norm);
  j["log10_l1_path_norm"] = scaled_log10_json(r.path_norm);
  j["bound"] = scaled_value_json(r.bound);
  j["log10_bound"] = scaled_log10_json(r.bound);
  j["C_sharp"] = r.sharp_constant;
  j["coefficient_sharp"] = r.sharp_coefficient;
  j["bound_sharp"] = scaled_value_json(r.sharp_bound);
  j["log10_bound_sharp"] = scaled_log10_json(r.sharp_bound);
  j["assumptions"] = generalization_assumptions();
  return j.dump(indent);
}

}  // namespace pathlift
