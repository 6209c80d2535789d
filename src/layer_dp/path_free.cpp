// The path-free functions of a Model (path_free.hpp): the one place where a model's kind picks
// the layer DP or the DAG's DP.

#include "pathlift/path_free.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "pathlift/error.hpp"
#include "pathlift/layer_dp.hpp"
#include "pathlift/limits.hpp"
#include "pathlift/magnitude.hpp"
#include "src/layer_dp/detail/diagonal_range.hpp"

namespace pathlift {

namespace {

/// on_layers(graph) for a layer graph, on_dag(net) for a DAG.
template <class OnLayers, class OnDag>
decltype(auto) on_model(const Model& model, OnLayers&& on_layers, OnDag&& on_dag) {
  if (const LayerGraph* graph = model.layer_graph()) {
    return std::forward<OnLayers>(on_layers)(*graph);
  }
  return std::forward<OnDag>(on_dag)(*model.dag());
}

/// The same for a DAG pass that reports no progress of its own (one pass over the edges): the
/// phase is reported running with its extent unknown (-1), then done (1), so that a caller's
/// display shows the seconds elapsed on either kind of model.
template <class OnLayers, class OnDag>
auto on_model(const Model& model, const EngineOptions& options, std::string_view phase,
              OnLayers&& on_layers, OnDag&& on_dag) {
  if (const LayerGraph* graph = model.layer_graph()) {
    return std::forward<OnLayers>(on_layers)(*graph);
  }
  if (options.progress) {
    options.progress(phase, -1.0);
  }
  auto result = std::forward<OnDag>(on_dag)(*model.dag());
  if (options.progress) {
    options.progress(phase, 1.0);
  }
  return result;
}

}  // namespace

PathCounts count_paths(const Model& model, const EngineOptions& options) {
  return on_model(
      model, [&](const LayerGraph& g) { return count_paths(g, options); },
      [&](const Network& net) { return count_paths(net, options); });
}

Count count_paths_total(const Model& model, const EngineOptions& options) {
  return on_model(
      model, options, "counting paths",
      [&](const LayerGraph& g) { return count_paths_total(g, options); },
      [&](const Network& net) { return count_paths_total(net); });
}

PathNorm path_norm(const Model& model, std::span<const double> theta, double s,
                   PathNormDetail detail, const EngineOptions& options) {
  return on_model(
      model, options, "path-norm",
      [&](const LayerGraph& g) {
        if (std::isinf(s)) {
          // The max-plus DP runs on the DAG: unrolled within options.max_memory (TooLarge with
          // its node and edge counts otherwise).
          return path_norm(*model.unrolled(options), theta, s, detail);
        }
        PathNorm norm = path_norm(g, theta, s, options);
        if (detail == PathNormDetail::inputs_and_outputs) {
          // Per input node: a sum over the unrolled DAG's nodes, which the layer DP never makes.
          const auto net = model.unrolled(options);
          norm.per_input = path_norm(*net, theta, s, detail).per_input;
        }
        return norm;
      },
      [&](const Network& net) { return path_norm(net, theta, s, detail); });
}

std::vector<double> path_norm_gradient(const Model& model, std::span<const double> theta, double s,
                                       const EngineOptions& options) {
  std::vector<double> gradient = on_model(
      model, options, "path-norm gradient",
      [&](const LayerGraph& g) { return path_norm_gradient(g, theta, s, options); },
      [&](const Network& net) { return path_norm_gradient(net, theta, s); });
  require_representable(gradient, "the path-norm gradient");
  return gradient;
}

std::vector<double> path_magnitude(const Model& model, std::span<const double> theta,
                                   const EngineOptions& options) {
  std::vector<double> magnitudes = on_model(
      model, options, "path magnitudes",
      [&](const LayerGraph& g) { return path_magnitude(g, theta, options); },
      [&](const Network& net) { return path_magnitude(net, theta); });
  require_representable(magnitudes, "the path magnitudes");
  return magnitudes;
}

PathMetric path_metric(const Model& model, std::span<const double> theta,
                       std::span<const double> theta2, const EngineOptions& options) {
  return on_model(
      model, [&](const LayerGraph& g) { return path_metric(g, theta, theta2, options); },
      [&](const Network& net) { return path_metric(net, theta, theta2, options); });
}

LipschitzBound lipschitz_bound(const Model& model, std::span<const double> theta,
                               std::span<const double> theta2, const EngineOptions& options) {
  return on_model(
      model, [&](const LayerGraph& g) { return lipschitz_bound(g, theta, theta2, options); },
      [&](const Network& net) { return lipschitz_bound(net, theta, theta2, options); });
}

namespace {

/// RangeError when diag(K) has a 0 that may be an underflow. On a DAG: K[k,k] >= dPhi[p, k]^2
/// for every path p through k, so no 0 is one when the smallest such square is a normal double.
/// On a layer graph: the range of the entries, computed with a scale.
void require_exact_zeros(const Model& model, std::span<const double> theta,
                         std::span<const double> diag, const EngineOptions& options) {
  if (std::find(diag.begin(), diag.end(), 0.0) == diag.end()) {
    return;
  }
  std::string problem;
  if (const Network* net = model.dag()) {
    const LogRange jacobian = lifting_range(*net, theta).jacobian;
    if (jacobian.empty()) {
      return;  // dPhi = 0: every K[k, k] is 0 exactly
    }
    const double smallest = 2 * jacobian.min_log10;
    problem = range_problem<double>(LogRange{smallest, smallest}, "dPhi[p, k]^2");
  } else {
    // The smallest entry only: one beyond float64 at the other end is not a 0.
    const LogRange range = detail::kernel_diagonal_range(*model.layer_graph(), theta, options);
    if (range.empty()) {
      return;
    }
    problem = range_problem<double>(LogRange{range.min_log10, range.min_log10}, "K[k, k]");
  }
  if (!problem.empty()) {
    throw RangeError(fmt::format("diag(K) has entries 0 that may be underflows: {}", problem));
  }
}

/// diag(K) as the strategies give it (inf beyond float64, 0 below).
Buffer<double> unchecked_diagonal(const Model& model, std::span<const double> theta,
                                  const EngineOptions& options) {
  return on_model(
      model, options, "diag(K)",
      [&](const LayerGraph& g) { return kernel_diagonal(g, theta, options); },
      [&](const Network& net) { return kernel_diagonal(net, theta); });
}

/// RangeError when diag(K) is not representable, or has a 0 that may be an underflow.
void require_representable_diagonal(const Model& model, std::span<const double> theta,
                                    std::span<const double> diag, const EngineOptions& options) {
  require_representable(diag, "diag(K)");
  require_exact_zeros(model, theta, diag, options);
}

/// RangeError when `values` (K v, eigenvalues of K) are all 0 while diag(K) has a 0 that may be
/// an underflow: K itself may then have underflowed. Only all 0s are tested: the diagonal's
/// test is conservative on a DAG (the smallest dPhi[p, k]^2 of any k), and a genuine 0 of K v
/// beside an entry that fits is common (parameters on no live path). The diagonal's passes run
/// only then.
/// Returns whether the diagonal was tested (the values were all 0).
bool require_no_kernel_underflow(const Model& model, std::span<const double> theta,
                                 std::span<const double> values, const EngineOptions& options,
                                 std::string_view what) {
  if (values.empty() ||
      std::any_of(values.begin(), values.end(), [](double x) { return x != 0.0; })) {
    return false;
  }
  const Buffer<double> diag = unchecked_diagonal(model, theta, options);
  try {
    require_exact_zeros(model, theta, std::span<const double>(diag.data(), diag.size()), options);
  } catch (const RangeError& e) {
    throw RangeError(fmt::format("{}: all 0, and {}", what, e.what()));
  }
  return true;
}

}  // namespace

Buffer<double> kernel_diagonal(const Model& model, std::span<const double> theta,
                               const EngineOptions& options) {
  Buffer<double> diag = unchecked_diagonal(model, theta, options);
  require_representable_diagonal(model, theta, std::span<const double>(diag.data(), diag.size()),
                                 options);
  return diag;
}

DenseMatrix kernel(const Model& model, std::span<const double> theta,
                   const EngineOptions& options) {
  require_kernel_fits(model.num_params(), options.max_memory);  // before unrolling a layer graph
  DenseMatrix k = kernel(*model.unrolled(options), theta, options);
  require_representable(std::span<const double>(k.data(), static_cast<std::size_t>(k.size())), "K");
  const Eigen::VectorXd diag = k.diagonal();
  require_representable_diagonal(
      model, theta, std::span<const double>(diag.data(), static_cast<std::size_t>(diag.size())),
      options);
  return k;
}

ScaledReal kernel_trace(const Model& model, std::span<const double> theta,
                        const EngineOptions& options) {
  return on_model(
      model, options, "trace(K)",
      [&](const LayerGraph& g) { return kernel_trace(g, theta, options); },
      [&](const Network& net) { return kernel_trace(net, theta); });
}

Eigen::VectorXd kernel_matvec(const Model& model, std::span<const double> theta,
                              std::span<const double> v, const EngineOptions& options) {
  Eigen::VectorXd kv = on_model(
      model, options, "K v",
      [&](const LayerGraph& g) { return kernel_matvec(g, theta, v, options); },
      [&](const Network& net) { return kernel_matvec(net, theta, v); });
  const std::span<const double> values(kv.data(), static_cast<std::size_t>(kv.size()));
  require_representable(values, "K v");
  (void)require_no_kernel_underflow(model, theta, values, options, "K v");
  return kv;
}

struct ModelKernelOperator::State {
  std::optional<KernelOperator> dag;
  std::optional<LayerKernelOperator> layers;
  const Model* model = nullptr;
  std::span<const double> theta;
  EngineOptions options;
  bool diagonal_checked = false;  // the first product of all 0s checks the diagonal, once
};

ModelKernelOperator::ModelKernelOperator(const Model& model, std::span<const double> theta,
                                         const EngineOptions& options)
    : m_state(std::make_unique<State>()) {
  m_state->model = &model;
  m_state->theta = theta;
  m_state->options = options;
  if (const LayerGraph* graph = model.layer_graph()) {
    m_state->layers.emplace(*graph, theta, options);
  } else {
    m_state->dag.emplace(*model.dag(), theta);
  }
}

ModelKernelOperator::ModelKernelOperator(ModelKernelOperator&&) noexcept = default;
ModelKernelOperator::~ModelKernelOperator() = default;

Index ModelKernelOperator::size() const {
  return m_state->dag ? m_state->dag->size() : m_state->layers->size();
}

void ModelKernelOperator::apply(const double* v, double* out, Index k) const {
  if (m_state->dag) {
    m_state->dag->apply(v, out, k);
  } else {
    m_state->layers->apply(v, out, k);
  }
  const std::span<const double> values(out, static_cast<std::size_t>(size() * k));
  require_representable(values, "K v");
  if (!m_state->diagonal_checked) {
    m_state->diagonal_checked = require_no_kernel_underflow(*m_state->model, m_state->theta, values,
                                                            m_state->options, "K v");
  }
}

Eigen::MatrixXd kernel_matmat(const Model& model, std::span<const double> theta,
                              const Eigen::MatrixXd& v, const EngineOptions& options) {
  const ModelKernelOperator op(model, theta, options);
  if (v.rows() != op.size()) {
    throw std::invalid_argument(
        fmt::format("V has {} rows; the model has d = {} parameters", v.rows(), op.size()));
  }
  for (Index j = 0; j < v.cols(); ++j) {
    for (Index i = 0; i < v.rows(); ++i) {
      if (!std::isfinite(v(i, j))) {
        throw std::invalid_argument(
            fmt::format("V[{}, {}] = {} is not finite (column {} of V)", i, j, v(i, j), j));
      }
    }
  }
  Eigen::MatrixXd out(v.rows(), v.cols());
  op.apply(v.data(), out.data(), v.cols());
  return out;
}

KernelEigenvalues kernel_top_eigenvalues(const Model& model, std::span<const double> theta,
                                         Index count, const EigenOptions& options) {
  KernelEigenvalues eig = on_model(
      model, [&](const LayerGraph& g) { return kernel_top_eigenvalues(g, theta, count, options); },
      [&](const Network& net) { return kernel_top_eigenvalues(net, theta, count, options); });
  (void)require_no_kernel_underflow(
      model, theta,
      std::span<const double>(eig.values.data(), static_cast<std::size_t>(eig.values.size())),
      options.engine, "the top eigenvalues of K");
  return eig;
}

}  // namespace pathlift
