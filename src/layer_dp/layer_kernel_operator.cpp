// The kernel's products K v on a layer graph (layer_dp.hpp's LayerKernelOperator), and its
// top eigenpairs by block Lanczos or LOBPCG on them.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

#include "pathlift/layer_dp.hpp"
#include "src/dp/dp_scaled.hpp"
#include "src/dp/lanczos.hpp"
#include "src/layer_dp/detail/layer_classes.hpp"
#include "src/layer_dp/detail/layer_dp_checks.hpp"
#include "src/layer_dp/detail/layer_dp_engine.hpp"
#include "src/layer_dp/detail/layer_kernels.hpp"

namespace pathlift {

namespace {

using detail::check_layer_vector;
using detail::forward_pass;
using detail::LayerPlan;
using detail::Mode;
using detail::ParamSums;
using detail::Span;
using detail::Tensor;
using detail::TensorPtr;
using detail::WeightSpec;

}  // namespace

struct LayerKernelOperator::State {
  EngineOptions options;  // the plan points at it
  LayerPlan plan;
  std::span<const double> theta;
  detail::LayerClasses classes;  // of the forward sums A and C (layer_classes.hpp)
  std::vector<TensorPtr> a;      // forward sums at theta^2, kept (on classes)
  std::vector<TensorPtr> b;      // backward sums at theta^2, kept (summed over the classes)
  Buffer<double> ab;             // sum over the edges of each parameter of A(src) B(dst)
  /// The entries of ab beyond double's normal range (0 in ab), as mantissa * 2^exponent:
  /// v_k ab_k may still fit.
  struct Scaled {
    std::size_t k;
    double m;
    std::int64_t e;
  };
  std::vector<Scaled> ab_scaled;
  /// The blocks of theta^2 (convolutions and batch norms), gathered by the constructor's
  /// passes and read by every product's.
  mutable detail::BlockCache sq_blocks;
  mutable detail::BlockCache prod_blocks;  ///< theta v's, refilled by each product
  mutable std::mutex product_mutex;
  std::vector<char> merged_once;  ///< per layer: a convolution whose merge starts its sums
  std::vector<std::pair<Index, Index>> own_terms_first;  ///< the other parameters' ranges

  State(const LayerGraph& graph, std::span<const double> t, const EngineOptions& o)
      : options(o), plan(graph, options), theta(t) {}

  /// out = K v: C forward and E backward, each layer adding C . B + A . E (one GEMM and one
  /// merge per convolution) as its E is final, to each parameter's own term v_k [A . B]_k:
  /// written first, or, for a convolution whose weights no other layer shares, by that merge
  /// (`merged_once`); progress over `span`. The terms are added in doubles (a parameter's terms
  /// are of its own magnitude; beyond double's range they are +-inf, which the Model's face
  /// refuses).
  void product(const double* v, double* out, Span span) const {
    const auto d = static_cast<std::size_t>(plan.graph().num_params);
    // theta^2's blocks from the constructor; theta v's gathered once for both passes, into the
    // memory of the last product's (one product at a time).
    const std::lock_guard<std::mutex> lock(product_mutex);
    const WeightSpec sq{Mode::square, 2, theta, {}, &sq_blocks};
    ++prod_blocks.generation;
    const WeightSpec prod{Mode::product, 1, theta, {v, d}, &prod_blocks};
    const double mid = span.from + (span.to - span.from) / 2;
    const double* diag = ab.data();
    for (const auto& range : own_terms_first) {
      // (clang 14 does not let a lambda capture a structured binding.)
      const Index k0 = range.first;
      const Index k1 = range.second;
      detail::for_chunks(k1 - k0, plan.threads(), [&](Index i0, Index i1) {
        for (Index k = k0 + i0; k < k0 + i1; ++k) {
          out[k] = v[k] * diag[k];
        }
      });
    }
    const std::vector<TensorPtr> c =
        forward_pass(plan, sq, true, 0.0, &a, &prod, {span.from, mid}, &classes);
    const detail::MergeStart start{v, diag};
    const auto start_of = [&](std::size_t l) { return merged_once[l] != 0 ? &start : nullptr; };
    std::vector<char> added(plan.size(), 0);  // C . B added
    detail::backward_pass(
        plan, sq, false, false, &b, &prod,
        [&](std::size_t l, const Tensor& e) {
          const std::size_t in = plan.input(l);
          if (b[l]) {
            const std::array<detail::EdgeTerm, 2> terms{
                {{c[in].get(), b[l].get(), 0.0}, {a[in].get(), &e, 1.0}}};
            detail::edge_products(plan, l, terms, theta.data(), out, nullptr, &classes,
                                  start_of(l));
            added[l] = 1;
          } else {
            detail::edge_products(plan, l, *a[in], e, 1.0, theta.data(), out, nullptr, &classes);
          }
        },
        {mid, span.to}, &classes);
    // The layers whose E is 0 (an output layer): C . B alone.
    for (std::size_t l = 1; l < plan.size(); ++l) {
      if (detail::has_parameters(plan.layer(l)) && b[l] && added[l] == 0) {
        const detail::EdgeTerm term{c[plan.input(l)].get(), b[l].get(), 0.0};
        detail::edge_products(plan, l, std::span<const detail::EdgeTerm>(&term, 1), theta.data(),
                              out, nullptr, &classes, start_of(l));
      }
    }
    for (const Scaled& x : ab_scaled) {
      if (v[x.k] != 0) {
        int ve = 0;
        const double vm = std::frexp(v[x.k], &ve);
        out[x.k] += detail::dp_ldexp(vm * x.m, x.e + ve);
      }
    }
  }

  /// Marks the convolutions whose weight sums their one merge starts (a kept B, weights no
  /// other layer shares) and lists the parameter ranges left to write first.
  void plan_merges() {
    const Index d = plan.graph().num_params;
    std::map<Index, int> uses;  // layers per weight offset
    for (std::size_t l = 1; l < plan.size(); ++l) {
      if (detail::has_parameters(plan.layer(l)) && plan.layer(l).weight_offset >= 0) {
        ++uses[plan.layer(l).weight_offset];
      }
    }
    merged_once.assign(plan.size(), 0);
    std::vector<std::pair<Index, Index>> once;
    for (std::size_t l = 1; l < plan.size(); ++l) {
      const Layer& ly = plan.layer(l);
      if (detail::form_of(ly.kind) == detail::Form::window && b[l] && ly.weight_offset >= 0 &&
          uses[ly.weight_offset] == 1) {
        const detail::ConvShape cs = detail::conv_shape(plan.window(l));
        merged_once[l] = 1;
        once.emplace_back(ly.weight_offset, ly.weight_offset + cs.w->channels_out * cs.rows);
      }
    }
    std::sort(once.begin(), once.end());
    Index at = 0;
    for (const auto& [k0, k1] : once) {
      if (k0 > at) {
        own_terms_first.emplace_back(at, k0);
      }
      at = std::max(at, k1);
    }
    if (at < d) {
      own_terms_first.emplace_back(at, d);
    }
  }
};

LayerKernelOperator::LayerKernelOperator(const LayerGraph& graph, std::span<const double> theta,
                                         const EngineOptions& options) {
  check_layer_vector(graph, theta, "theta");
  const detail::EigenSerial serial;
  m_state = std::make_unique<State>(graph, theta, options);
  State& s = *m_state;
  // Kept: A, B and a product's C; per parameter: the scaled sums of A . B (16 bytes), then ab
  // and the blocks of theta^2 and of a product's theta v (8 bytes each).
  s.classes = detail::forward_classes(s.plan);
  s.plan.require_memory(3, 3, "the kernel products K v", &s.classes);
  const WeightSpec sq{Mode::square, 2, theta, {}, &s.sq_blocks};
  s.a = forward_pass(s.plan, sq, true, 1.0, nullptr, nullptr, {0, 0}, &s.classes);
  ParamSums ab(graph.num_params);
  s.b = detail::backward_pass(
      s.plan, sq, true, true, nullptr, nullptr,
      [&](std::size_t l, const Tensor& y) {
        detail::edge_products(s.plan, l, *s.a[s.plan.input(l)], y, 1.0, nullptr, ab.m.data(),
                              ab.k.data(), &s.classes);
      },
      {0, 0}, &s.classes);
  s.ab.resize(static_cast<std::size_t>(graph.num_params));
  for (std::size_t k = 0; k < s.ab.size(); ++k) {
    const double x = ab.value(k);
    if (ab.m[k] != 0 && !(std::isfinite(x) && std::fabs(x) >= std::numeric_limits<double>::min())) {
      s.ab[k] = 0;
      s.ab_scaled.push_back({k, ab.m[k], ab.k[k]});
    } else {
      s.ab[k] = x;
    }
  }
  s.plan_merges();
}

LayerKernelOperator::LayerKernelOperator(LayerKernelOperator&&) noexcept = default;
LayerKernelOperator::~LayerKernelOperator() = default;

Index LayerKernelOperator::size() const {
  return m_state->plan.graph().num_params;
}

void LayerKernelOperator::apply(const double* v, double* out, Index k) const {
  const detail::EigenSerial serial;
  const Index d = size();
  for (Index j = 0; j < k; ++j) {
    const auto f = static_cast<double>(k);
    m_state->product(v + j * d, out + j * d,
                     {static_cast<double>(j) / f, static_cast<double>(j + 1) / f});
  }
}

Eigen::VectorXd kernel_matvec(const LayerGraph& graph, std::span<const double> theta,
                              std::span<const double> v, const EngineOptions& options) {
  check_layer_vector(graph, theta, "theta");
  check_layer_vector(graph, v, "v");
  const LayerKernelOperator op(graph, theta, options);
  Eigen::VectorXd out(graph.num_params);
  op.apply(v.data(), out.data(), 1);
  return out;
}

namespace {

/// Whether two output channels of a linear or convolution layer, transposed or not (in one group),
/// have equal weights and bias: twin units of the unrolled network (kernel_spectrum.cpp's
/// has_twin_units), found per layer. Other units read distinct sources (a batch norm's channel
/// its own, a position its own window).
bool has_twin_channels(const LayerGraph& graph, std::span<const double> theta,
                       const EngineOptions& options) {
  const LayerPlan plan(graph, options);
  for (std::size_t l = 1; l < plan.size(); ++l) {
    const Layer& ly = plan.layer(l);
    const double* w = theta.data() + ly.weight_offset;
    const auto bias = [&](Index o) {
      return ly.bias_offset >= 0 ? theta[static_cast<std::size_t>(ly.bias_offset + o)] : 0.0;
    };
    // units per group, and unit j of group g into row (its weights, then its bias)
    Index groups = 1;
    Index units = 0;
    std::function<void(Index, Index, std::vector<double>&)> fill;
    if (detail::form_of(ly.kind) == detail::Form::dense) {
      const Index f = plan.entries(plan.input(l));
      units = plan.entries(l);
      fill = [&, f](Index, Index j, std::vector<double>& row) {
        row.assign(w + j * f, w + (j + 1) * f);
        row.push_back(bias(j));
      };
    } else if (detail::is_convolution(ly.kind)) {
      const detail::ConvShape c = detail::conv_shape(plan.window(l));
      groups = c.w->groups;
      if (detail::form_of(ly.kind) == detail::Form::window) {
        units = c.cg_out;
        fill = [&, c](Index g, Index j, std::vector<double>& row) {
          const Index o = g * c.cg_out + j;
          row.assign(w + o * c.rows, w + (o + 1) * c.rows);
          row.push_back(bias(o));
        };
      } else {
        // The adjoint convolution's input channel j: column block j of each of its rows.
        units = c.cg_in;
        fill = [&, c](Index g, Index j, std::vector<double>& row) {
          row.clear();
          for (Index i = 0; i < c.cg_out; ++i) {
            const double* r = w + (g * c.cg_out + i) * c.rows + j * c.kk;
            row.insert(row.end(), r, r + c.kk);
          }
          row.push_back(bias(g * c.cg_in + j));
        };
      }
    }
    for (Index g = 0; g < groups && units > 1; ++g) {
      if (detail::any_equal_rows(units, [&](Index j, std::vector<double>& row) {
            fill(g, j, row);
            return std::span<const double>(row);
          })) {
        return true;
      }
    }
  }
  return false;
}

}  // namespace

KernelEigenvalues kernel_top_eigenvalues(const LayerGraph& graph, std::span<const double> theta,
                                         Index count, const EigenOptions& options) {
  check_layer_vector(graph, theta, "theta");
  const Index d = graph.num_params;
  if (count < 1 || count > d) {
    throw std::invalid_argument(fmt::format(
        "asked for {} eigenvalues of K, which is {} x {}: ask for 1 to {}", count, d, d, d));
  }
  const bool small = d <= 256 || count > d / 2;
  if (options.method == EigenMethod::dense || (options.method == EigenMethod::automatic && small)) {
    return kernel_top_eigenvalues(unroll(graph, options.engine), theta, count, options);
  }
  // The products report nothing: the iteration reports its own progress.
  EngineOptions quiet = options.engine;
  quiet.progress = {};
  const LayerKernelOperator op(graph, theta, quiet);
  return detail::matrix_free_top_eigenpairs(
      d, [&op](const double* x, double* y, Index k) { op.apply(x, y, k); }, count,
      options.method != EigenMethod::lobpcg && has_twin_channels(graph, theta, options.engine),
      options);
}

}  // namespace pathlift
