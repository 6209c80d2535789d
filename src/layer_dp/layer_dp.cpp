#include "pathlift/layer_dp.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "pathlift/error.hpp"
#include "pathlift/limits.hpp"
#include "pathlift/magnitude.hpp"
#include "pathlift/path_metric.hpp"
#include "src/dp/dp_scaled.hpp"
#include "src/dp/norm_gradient.hpp"
#include "src/dp/path_metric_rules.hpp"
#include "src/layer_dp/detail/diagonal_range.hpp"
#include "src/layer_dp/detail/layer_classes.hpp"
#include "src/layer_dp/detail/layer_dp_checks.hpp"
#include "src/layer_dp/detail/layer_dp_engine.hpp"
#include "src/layer_dp/detail/layer_kernels.hpp"
#include "src/layers/layers_unroll.hpp"

namespace pathlift {

namespace detail {

std::string layer_param_label(const LayerGraph& g, Index k) {
  // The block that starts last at or before k holds it (blocks do not overlap).
  const Layer* best = nullptr;
  const char* part = "weight";
  Index best_start = -1;
  for (const Layer& ly : g.layers) {
    for (const auto& [start, name] :
         {std::pair{ly.weight_offset, "weight"}, std::pair{ly.bias_offset, "bias"}}) {
      if (start >= 0 && start <= k && start > best_start) {
        best = &ly;
        best_start = start;
        part = name;
      }
    }
  }
  if (best == nullptr) {
    return fmt::format("parameter {}", k);
  }
  return fmt::format("parameter {} ({} {} of layer '{}')", k, part, k - best_start, best->name);
}

void check_layer_vector(const LayerGraph& g, std::span<const double> x, const char* what) {
  if (static_cast<Index>(x.size()) != g.num_params) {
    throw std::invalid_argument(fmt::format("{} has {} entries but the layer graph has d = {}",
                                            what, x.size(), g.num_params));
  }
  for (std::size_t k = 0; k < x.size(); ++k) {
    if (!std::isfinite(x[k])) {
      throw std::invalid_argument(fmt::format("{}[{}] ({}) is not finite: {}", what, k,
                                              layer_param_label(g, static_cast<Index>(k)), x[k]));
    }
  }
}

/// The sum over every output entry, and each entry as a ScaledReal.
ScaledReal outputs_total(const LayerPlan& plan, const std::vector<TensorPtr>& sums,
                         std::vector<ScaledReal>* each) {
  double m = 0;
  std::int64_t k = detail::dp_no_exponent;
  if (each != nullptr) {
    std::size_t outputs = each->size();
    for (const Index o : plan.graph().outputs) {
      outputs += sums[static_cast<std::size_t>(o)]->value.size();
    }
    each->reserve(outputs);  // one allocation (an output layer may hold 10^8 entries)
  }
  for (const Index o : plan.graph().outputs) {
    const Tensor& t = *sums[static_cast<std::size_t>(o)];
    double acc = 0;
    for (const double v : t.value) {
      acc += v;
      if (each != nullptr) {
        ScaledReal x = ScaledReal::from_double(v);
        if (!x.is_zero()) {
          x.exponent += t.exp;
        }
        each->push_back(x);
      }
    }
    if (acc != 0) {
      detail::dp_merge(m, k, acc, t.exp);
    }
  }
  ScaledReal r;
  if (m != 0) {
    detail::dp_normalize(m, k, r.mantissa, r.exponent);
  }
  return r;
}

}  // namespace detail

namespace {

using detail::check_layer_vector;
using detail::layer_param_label;
using detail::outputs_total;
using detail::ParamSums;

using detail::forward_pass;
using detail::LayerPlan;
using detail::Mode;
using detail::Span;
using detail::Tensor;
using detail::TensorPtr;
using detail::WeightSpec;

/// A count computed in floating point: exact below 2^53 (every partial sum is then an integer
/// held exactly), known by its log10 beyond.
Count scaled_count(const ScaledReal& x) {
  if (x.is_zero()) {
    return Count(0);
  }
  // (mantissa, exponent) is not normalised to [0.5, 1): compare the value itself.
  if (x.fits_double() && x.value() < 0x1p53) {
    return Count(static_cast<std::uint64_t>(std::llround(x.value())));
  }
  return Count::from_log10(x.log10());
}

/// The two layers that share a parameter block and lie on one path (then the kernel diagonal
/// is not a sum over edges), or nullopt.
std::optional<std::pair<std::size_t, std::size_t>> repeated_blocks(const LayerGraph& g) {
  const std::size_t n = g.layers.size();
  for (std::size_t a = 1; a < n; ++a) {
    const Layer& la = g.layers[a];
    if (!detail::has_parameters(la)) {
      continue;
    }
    // Layers reachable from a.
    std::vector<char> reach(n, 0);
    reach[a] = 1;
    for (std::size_t l = a + 1; l < n; ++l) {
      for (const Index i : g.layers[l].inputs) {
        if (reach[static_cast<std::size_t>(i)] != 0) {
          reach[l] = 1;
        }
      }
      const Layer& lb = g.layers[l];
      if (reach[l] != 0 && detail::has_parameters(lb) &&
          ((la.weight_offset >= 0 && la.weight_offset == lb.weight_offset) ||
           (la.bias_offset >= 0 && la.bias_offset == lb.bias_offset))) {
        return std::pair{a, l};
      }
    }
  }
  return std::nullopt;
}

/// The diagonal sums [A . B]_k = sum over the edges of k of A(src) B(dst) (weights theta^2),
/// into (out_m, out_k) scaled, or into out_m as doubles without out_k.
void diagonal_sums(const LayerGraph& graph, std::span<const double> theta,
                   const EngineOptions& options, double* out_m, std::int64_t* out_k) {
  const detail::EigenSerial serial;
  const LayerPlan plan(graph, options);
  // A on position classes (layer_classes.hpp), B as its sums over them.
  const detail::LayerClasses classes = detail::forward_classes(plan);
  plan.require_memory(1, out_k != nullptr ? 1 : 0, "the kernel diagonal", &classes);
  const WeightSpec w{Mode::square, 2, theta, {}};
  const std::vector<TensorPtr> a =
      forward_pass(plan, w, true, 1.0, nullptr, nullptr, {0, 0.5}, &classes);
  detail::backward_pass(
      plan, w, true, false, nullptr, nullptr,
      [&](std::size_t l, const Tensor& y) {
        detail::edge_products(plan, l, *a[plan.input(l)], y, 1.0, nullptr, out_m, out_k, &classes);
      },
      {0.5, 1}, &classes);
}

}  // namespace

namespace {

/// The most multiply-adds the path-length histogram of a layer graph may take (about 10 to 30
/// s on two cores); resnet18's at 224 takes about 20 times one counting pass, 4e10.
constexpr double k_histogram_work = 2e11;

}  // namespace

Count count_paths_total(const LayerGraph& graph, const EngineOptions& options) {
  const detail::EigenSerial serial;
  const LayerPlan plan(graph, options);
  plan.require_memory(0, 0, "counting paths", nullptr, true);
  const WeightSpec w{Mode::ones, 0, {}, {}};
  const ScaledReal p =
      outputs_total(plan, forward_pass(plan, w, false, 1.0, nullptr, nullptr, {0, 1}), nullptr);
  return scaled_count(p);
}

Count skeleton_nnz(const LayerGraph& graph, const EngineOptions& options) {
  const detail::EigenSerial serial;
  const LayerPlan plan(graph, options);
  plan.require_memory(0, 0, "counting path lengths", nullptr, true);
  return scaled_count(
      detail::total_path_length(plan, detail::Unroller(graph, options).node_entries(), {0, 1}));
}

PathCounts count_paths(const LayerGraph& graph, const EngineOptions& options) {
  const detail::EigenSerial serial;
  const LayerPlan plan(graph, options);
  plan.require_memory(0, 0, "counting paths", nullptr, true, sizeof(ScaledReal) + sizeof(Count));
  // The unroller's plan says which pending sums become nodes (and refuses dead inputs).
  const std::vector<std::vector<std::uint8_t>> nodes =
      detail::Unroller(graph, options).node_entries();
  const WeightSpec w{Mode::ones, 0, {}, {}};
  std::vector<ScaledReal> each;
  const ScaledReal p =
      outputs_total(plan, forward_pass(plan, w, false, 1.0, nullptr, nullptr, {0, 0.3}), &each);
  PathCounts c;
  c.paths = scaled_count(p);
  for (const ScaledReal& x : each) {
    c.per_output.push_back(scaled_count(x));
  }
  // The histogram, unless it would not fit or would take far more than the counts: its work
  // grows as the square of the depth where biases start paths at every layer (a 400-layer
  // chain of 16-channel 64x64 convolutions: 400 lengths at its last layer, 80,000 passes' work
  // in all). Then nnz(B) comes from one pass in dual numbers, and the longest path is not known.
  const detail::HistogramCost cost = detail::length_histogram_cost(plan);
  try {
    require_bytes(cost.bytes, options.max_memory,
                  fmt::format("the path-length histogram on the layer graph ({} layers, its sums "
                              "split by path length)",
                              plan.size()));
    if (cost.work > k_histogram_work) {
      throw TooLarge(fmt::format("the path-length histogram on the layer graph would take {:.3g} "
                                 "multiply-adds, {:.0f} "
                                 "times one counting pass (up to {} path lengths at a layer), more "
                                 "than the {:.0g} it is "
                                 "given",
                                 cost.work, cost.work / std::max(cost.forward_work, 1.0),
                                 cost.lengths, k_histogram_work),
                     TooLarge::Reason::too_many_paths);
    }
  } catch (const TooLarge& e) {
    c.length_histogram_refused = e.what();
    c.length_histogram_memory_bound = e.reason() == TooLarge::Reason::memory_limit;
    c.nnz = scaled_count(detail::total_path_length(plan, nodes, {0.3, 1}));
    c.max_path_length = -1;
    return c;
  }
  const auto hist = detail::length_histogram(plan, nodes, {0.3, 1});
  c.length_histogram.assign(std::max<std::size_t>(hist.size(), 1), Count(0));
  for (std::size_t len = 0; len < hist.size(); ++len) {
    ScaledReal x;
    if (hist[len].first != 0) {
      detail::dp_normalize(hist[len].first, hist[len].second, x.mantissa, x.exponent);
    }
    c.length_histogram[len] = scaled_count(x);
    if (!x.is_zero()) {
      c.max_path_length = static_cast<int>(len);
      c.nnz += Count(len) * c.length_histogram[len];
    }
  }
  // A length whose sums cancelled to zero entries (a partly shifted slice) is no length.
  c.length_histogram.resize(static_cast<std::size_t>(c.max_path_length) + 1, Count(0));
  return c;
}

PathNorm path_norm(const LayerGraph& graph, std::span<const double> theta, double s,
                   const EngineOptions& options) {
  detail::check_norm_exponent(s);
  if (std::isinf(s)) {
    throw std::invalid_argument(
        "path-norm exponent s = inf on a layer graph: the max-plus DP runs on the unrolled "
        "network (path_free.hpp's path_norm(Model) unrolls it within the memory limit)");
  }
  check_layer_vector(graph, theta, "theta");
  const detail::EigenSerial serial;
  const LayerPlan plan(graph, options);
  // Every input entry counts 1: positions with equal sums are computed once (layer_classes.hpp).
  const detail::LayerClasses classes = detail::forward_classes(plan);
  plan.require_memory(0, 0, "the path-norm", &classes, false, sizeof(ScaledReal));
  const WeightSpec w{Mode::power, s, theta, {}};
  PathNorm out;
  out.s = s;
  out.sum = outputs_total(
      plan, forward_pass(plan, w, false, 1.0, nullptr, nullptr, {0, 1}, &classes), &out.per_output);
  if (s != 0) {
    for (ScaledReal& x : out.per_output) {
      x = scaled_root(x, s);
    }
  }
  out.norm = s == 0 ? out.sum : scaled_root(out.sum, s);
  return out;
}

std::vector<double> path_norm_gradient(const LayerGraph& graph, std::span<const double> theta,
                                       double s, const EngineOptions& options) {
  detail::check_gradient_exponent(s);
  check_layer_vector(graph, theta, "theta");
  detail::check_differentiable(theta, s, [&](Index k) { return layer_param_label(graph, k); });
  const detail::EigenSerial serial;
  const LayerPlan plan(graph, options);
  const detail::LayerClasses classes = detail::forward_classes(plan);
  plan.require_memory(1, 1, "the path-norm gradient", &classes);
  const WeightSpec w{Mode::power, s, theta, {}};
  const std::vector<TensorPtr> a =
      forward_pass(plan, w, true, 1.0, nullptr, nullptr, {0, 0.5}, &classes);
  const ScaledReal factor = detail::norm_gradient_factor(
      outputs_total(plan, detail::expand_outputs(plan, a, classes), nullptr), s);
  ParamSums sums(graph.num_params);
  detail::backward_pass(
      plan, w, true, false, nullptr, nullptr,
      [&](std::size_t l, const Tensor& y) {
        detail::edge_products(plan, l, *a[plan.input(l)], y, 1.0, nullptr, sums.m.data(),
                              sums.k.data(), &classes);
      },
      {0.5, 1}, &classes);
  const detail::DpPowS slope{s - 1};
  std::vector<double> out(theta.size(), 0.0);
  std::size_t underflows = 0;
  for (std::size_t k = 0; k < out.size(); ++k) {
    const double t = theta[k];
    double sm = 1;  // |t|^(s - 1) = sm 2^sk: 1 for s = 1 (no pow per parameter)
    std::int64_t sk = 0;
    if (sums.m[k] == 0 || t == 0 || (s != 1 && !slope.exact(t, sm, sk))) {
      continue;
    }
    const double x = (t < 0 ? -1.0 : 1.0) * sm * sums.m[k] * factor.mantissa;
    out[k] = detail::gradient_entry(x, sk + sums.k[k] + factor.exponent, underflows);
  }
  detail::require_no_underflow(underflows, out.size());
  return out;
}

Buffer<double> kernel_diagonal(const LayerGraph& graph, std::span<const double> theta,
                               const EngineOptions& options) {
  check_layer_vector(graph, theta, "theta");
  if (repeated_blocks(graph)) {
    return kernel_diagonal(unroll(graph, options), theta);
  }
  // Straight into the result (no scaled accumulators: the diagonal is as large as theta),
  // checked before it is allocated (counted as accumulators: 16 bytes a parameter for 8).
  {
    const LayerPlan plan(graph, options);
    const detail::LayerClasses classes = detail::forward_classes(plan);
    plan.require_memory(1, 1, "the kernel diagonal", &classes);
  }
  Buffer<double> out(static_cast<std::size_t>(graph.num_params));
  detail::fill_zero(out.data(), graph.num_params, resolve_threads(options.threads));
  diagonal_sums(graph, theta, options, out.data(), nullptr);
  return out;
}

namespace {

/// [A . B]_k scaled, per parameter (a graph without repeated blocks, theta checked).
ParamSums scaled_diagonal(const LayerGraph& graph, std::span<const double> theta,
                          const EngineOptions& options) {
  // Checked before the accumulators (16 bytes a parameter) are allocated.
  {
    const LayerPlan plan(graph, options);
    const detail::LayerClasses classes = detail::forward_classes(plan);
    plan.require_memory(1, 1, "the kernel diagonal", &classes);
  }
  ParamSums sums(graph.num_params);
  diagonal_sums(graph, theta, options, sums.m.data(), sums.k.data());
  return sums;
}

}  // namespace

LogRange detail::kernel_diagonal_range(const LayerGraph& graph, std::span<const double> theta,
                                       const EngineOptions& options) {
  check_layer_vector(graph, theta, "theta");
  if (repeated_blocks(graph)) {
    // Not a sum over edges: bounded by the squares of dPhi's entries on the unrolled network
    // (K[k, k] >= dPhi[p, k]^2 for each path p through k).
    const LogRange j = lifting_range(unroll(graph, options), theta).jacobian;
    return j.empty() ? j : LogRange{2 * j.min_log10, 2 * j.max_log10};
  }
  const ParamSums sums = scaled_diagonal(graph, theta, options);
  LogRange r;
  for (std::size_t i = 0; i < sums.m.size(); ++i) {
    if (sums.m[i] != 0) {
      const double l = ScaledReal{sums.m[i], sums.k[i]}.log10();
      r.min_log10 = std::min(r.min_log10, l);
      r.max_log10 = std::max(r.max_log10, l);
    }
  }
  return r;
}

ScaledReal kernel_trace(const LayerGraph& graph, std::span<const double> theta,
                        const EngineOptions& options) {
  check_layer_vector(graph, theta, "theta");
  if (repeated_blocks(graph)) {
    return kernel_trace(unroll(graph, options), theta);
  }
  const ParamSums sums = scaled_diagonal(graph, theta, options);
  double m = 0;
  std::int64_t k = detail::dp_no_exponent;
  for (std::size_t i = 0; i < sums.m.size(); ++i) {
    if (sums.m[i] != 0) {
      detail::dp_merge(m, k, sums.m[i], sums.k[i]);
    }
  }
  ScaledReal r;
  if (m != 0) {
    detail::dp_normalize(m, k, r.mantissa, r.exponent);
  }
  return r;
}

std::vector<double> path_magnitude(const LayerGraph& graph, std::span<const double> theta,
                                   const EngineOptions& options) {
  return detail::magnitude_from_gradient(
      theta, [&] { return path_norm_gradient(graph, theta, 1.0, options); });
}

namespace {

/// sum over edges e of |a_e - b_e| F_b(src e) G_a(dst e) (path_metric.hpp): a forward pass at
/// |b|, a backward pass at |a|, the edge products of each parameter layer weighted by
/// |a_k - b_k| (fixed edges are equal in both: no term).
ScaledReal telescoping_bound(const LayerGraph& graph, std::span<const double> a,
                             std::span<const double> b, const EngineOptions& options) {
  const detail::EigenSerial serial;
  const LayerPlan plan(graph, options);
  // Every input entry counts 1: both passes on position classes (layer_classes.hpp).
  const detail::LayerClasses classes = detail::forward_classes(plan);
  plan.require_memory(1, 1, "the path-metric", &classes);
  const detail::AbsDifferences diff = detail::abs_differences(a, b);
  const std::vector<TensorPtr> f = forward_pass(plan, WeightSpec{Mode::power, 1.0, b, {}}, true,
                                                1.0, nullptr, nullptr, {0, 0.5}, &classes);
  ParamSums sums(graph.num_params);
  detail::backward_pass(
      plan, WeightSpec{Mode::power, 1.0, a, {}}, true, false, nullptr, nullptr,
      [&](std::size_t l, const Tensor& y) {
        detail::edge_products(plan, l, *f[plan.input(l)], y, 1.0, diff.values.data(), sums.m.data(),
                              sums.k.data(), &classes);
      },
      {0.5, 1}, &classes);
  double tm = 0;
  std::int64_t tk = detail::dp_no_exponent;
  for (std::size_t k = 0; k < diff.values.size(); ++k) {
    if (sums.m[k] != 0) {
      detail::dp_merge(tm, tk, sums.m[k], sums.k[k] + diff.exponent);
    }
  }
  return tm == 0 ? ScaledReal{} : ScaledReal{tm, tk};
}

}  // namespace

PathMetric path_metric(const LayerGraph& graph, std::span<const double> theta,
                       std::span<const double> theta2, const EngineOptions& options) {
  check_layer_vector(graph, theta, "theta");
  check_layer_vector(graph, theta2, "theta2");
  return detail::path_metric_by(theta, theta2,
                                [&](std::span<const double> a, std::span<const double> b) {
                                  return telescoping_bound(graph, a, b, options);
                                });
}

LipschitzBound lipschitz_bound(const LayerGraph& graph, std::span<const double> theta,
                               std::span<const double> theta2, const EngineOptions& options) {
  check_layer_vector(graph, theta, "theta");
  check_layer_vector(graph, theta2, "theta2");
  return detail::lipschitz_bound_by(theta, theta2,
                                    [&](std::span<const double> a, std::span<const double> b) {
                                      return path_metric(graph, a, b, options);
                                    });
}

}  // namespace pathlift
