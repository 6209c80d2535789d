// The path-free functions of a Model (path_free.hpp): the one place where a model's kind picks
// the layer DP or the DAG's DP.

#include "pathlift/path_free.hpp"

#include <utility>

#include "pathlift/layer_dp.hpp"

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

}  // namespace

PathCounts count_paths(const Model& model, const EngineOptions& options) {
  return on_model(
      model, [&](const LayerGraph& g) { return count_paths(g, options); },
      [&](const Network& net) { return count_paths(net, options); });
}

Count count_paths_total(const Model& model, const EngineOptions& options) {
  return on_model(
      model, [&](const LayerGraph& g) { return count_paths_total(g, options); },
      [&](const Network& net) { return count_paths_total(net); });
}

PathNorm path_norm(const Model& model, std::span<const double> theta, double s,
                   PathNormDetail detail, const EngineOptions& options) {
  return on_model(
      model,
      [&](const LayerGraph& g) {
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
  return on_model(
      model, [&](const LayerGraph& g) { return path_norm_gradient(g, theta, s, options); },
      [&](const Network& net) { return path_norm_gradient(net, theta, s); });
}

std::vector<double> path_magnitude(const Model& model, std::span<const double> theta,
                                   const EngineOptions& options) {
  return on_model(
      model, [&](const LayerGraph& g) { return path_magnitude(g, theta, options); },
      [&](const Network& net) { return path_magnitude(net, theta); });
}

Buffer<double> kernel_diagonal(const Model& model, std::span<const double> theta,
                               const EngineOptions& options) {
  return on_model(
      model, [&](const LayerGraph& g) { return kernel_diagonal(g, theta, options); },
      [&](const Network& net) { return kernel_diagonal(net, theta); });
}

ScaledReal kernel_trace(const Model& model, std::span<const double> theta,
                        const EngineOptions& options) {
  return on_model(
      model, [&](const LayerGraph& g) { return kernel_trace(g, theta, options); },
      [&](const Network& net) { return kernel_trace(net, theta); });
}

Eigen::VectorXd kernel_matvec(const Model& model, std::span<const double> theta,
                              std::span<const double> v, const EngineOptions& options) {
  return on_model(
      model, [&](const LayerGraph& g) { return kernel_matvec(g, theta, v, options); },
      [&](const Network& net) { return kernel_matvec(net, theta, v); });
}

KernelEigenvalues kernel_top_eigenvalues(const Model& model, std::span<const double> theta,
                                         Index count, const EigenOptions& options) {
  return on_model(
      model, [&](const LayerGraph& g) { return kernel_top_eigenvalues(g, theta, count, options); },
      [&](const Network& net) { return kernel_top_eigenvalues(net, theta, count, options); });
}

}  // namespace pathlift
