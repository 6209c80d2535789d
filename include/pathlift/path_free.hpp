#pragma once
/// \file path_free.hpp
/// The path-free functions of a Model (model.hpp): path counts, path-norms and their gradient,
/// the path-metric and its Lipschitz bound, path magnitudes, the kernel's diagonal, trace,
/// products K v and top eigenvalues. Here, and
/// only here, a model's kind picks the computation: a layer graph runs the layer DP
/// (layer_dp.hpp) without unrolling, a DAG its own DP (counting.hpp, norms.hpp, kernel.hpp).
/// Results are those of the DAG either way (to rounding), and the rules, errors and complexity
/// those of the functions named. Progress (options.progress): the layer DP reports its passes;
/// a DAG pass that has no progress of its own reports its phase running with its extent unknown
/// (fraction -1), then done (1).
///
/// Example:
/// \code
///   const pathlift::Model m = pathlift::load_model("net.onnx");
///   const pathlift::PathNorm l1 = pathlift::path_norm(m, m.weights(), 1.0);
/// \endcode

#include <Eigen/Core>
#include <memory>
#include <span>
#include <vector>

#include "pathlift/counting.hpp"
#include "pathlift/kernel.hpp"
#include "pathlift/model.hpp"
#include "pathlift/norms.hpp"
#include "pathlift/options.hpp"
#include "pathlift/path_metric.hpp"
#include "pathlift/scaled_real.hpp"

namespace pathlift {

/// count_paths. On a layer graph the per-node parts (per_input, per_edge) are left empty.
PathCounts count_paths(const Model& model, const EngineOptions& options = {});

/// count_paths_total: P.
Count count_paths_total(const Model& model, const EngineOptions& options = {});

/// path_norm. PathNormDetail::inputs_and_outputs on a layer graph needs the norm per input
/// node, a sum over the unrolled DAG's nodes: the graph is then unrolled (Model::unrolled,
/// TooLarge with the sizes when it would not fit); the total and per_output come from the
/// layer DP either way. s = inf (max_p |Phi_p|, a max-plus DP) runs on the DAG: a layer graph
/// is unrolled for it, within options.max_memory.
PathNorm path_norm(const Model& model, std::span<const double> theta, double s,
                   PathNormDetail detail = PathNormDetail::outputs,
                   const EngineOptions& options = {});

/// path_norm_gradient, refused beyond float64: RangeError when an entry overflows, is
/// subnormal or underflows to 0 (path_norm gives the norm itself at any magnitude).
std::vector<double> path_norm_gradient(const Model& model, std::span<const double> theta, double s,
                                       const EngineOptions& options = {});

/// path_magnitude, refused beyond float64 as path_norm_gradient is (RangeError).
std::vector<double> path_magnitude(const Model& model, std::span<const double> theta,
                                   const EngineOptions& options = {});

/// path_metric (path_metric.hpp): ||Phi(theta) - Phi(theta2)||_1, or an upper bound.
PathMetric path_metric(const Model& model, std::span<const double> theta,
                       std::span<const double> theta2, const EngineOptions& options = {});

/// lipschitz_bound (path_metric.hpp): C with ||f_theta(x) - f_theta2(x)||_1 <= max(||x||_inf, 1)
/// C for every input x.
LipschitzBound lipschitz_bound(const Model& model, std::span<const double> theta,
                               std::span<const double> theta2, const EngineOptions& options = {});

/// kernel_diagonal, refused beyond float64: RangeError when an entry overflows or is subnormal
/// (require_representable), or when an entry 0 may be an underflow (on a DAG, the smallest
/// |dPhi[p, k]|^2 is below the smallest normal double; on a layer graph, the entries do not
/// add up to kernel_trace, which is computed with a scale).
Buffer<double> kernel_diagonal(const Model& model, std::span<const double> theta,
                               const EngineOptions& options = {});

/// The full path kernel K (kernel.hpp), on the DAG (a layer graph unrolled within
/// options.max_memory once d x d doubles are known to fit: TooLarge otherwise), refused beyond
/// float64: RangeError when an entry overflows or is subnormal (require_representable), or when
/// the diagonal has a 0 that may be an underflow (as kernel_diagonal).
DenseMatrix kernel(const Model& model, std::span<const double> theta,
                   const EngineOptions& options = {});

/// kernel_trace.
ScaledReal kernel_trace(const Model& model, std::span<const double> theta,
                        const EngineOptions& options = {});

/// kernel_matvec, refused beyond float64 as path_norm_gradient is, and when it is all 0 while
/// diag(K) has a 0 that may be an underflow (kernel_diagonal's test, run only then).
Eigen::VectorXd kernel_matvec(const Model& model, std::span<const double> theta,
                              std::span<const double> v, const EngineOptions& options = {});

/// K V for a d x k block (column-major), refused beyond float64 as kernel_matvec is: the block
/// product of ModelKernelOperator. Throws std::invalid_argument for V of the wrong height or
/// with a non-finite entry (naming the column).
Eigen::MatrixXd kernel_matmat(const Model& model, std::span<const double> theta,
                              const Eigen::MatrixXd& v, const EngineOptions& options = {});

/// K as a reusable block operator on a Model: KernelOperator on a DAG, LayerKernelOperator on
/// a layer graph (what does not depend on v computed once). Holds references to `model` and
/// `theta`, which must outlive it. Throws like kernel_matvec. apply() is not thread-safe.
class ModelKernelOperator {
 public:
  ModelKernelOperator(const Model& model, std::span<const double> theta,
                      const EngineOptions& options = {});
  ModelKernelOperator(const ModelKernelOperator&) = delete;
  ModelKernelOperator& operator=(const ModelKernelOperator&) = delete;
  ModelKernelOperator(ModelKernelOperator&&) noexcept;
  ModelKernelOperator& operator=(ModelKernelOperator&&) = delete;
  ~ModelKernelOperator();

  /// d, the size of K.
  [[nodiscard]] Index size() const;
  /// out[:, j] = K v[:, j] for the k columns of the column-major d x k blocks (v finite, not
  /// checked here); RangeError when an entry of the result overflows or is subnormal, or (the
  /// first product of all 0s) is all 0 while diag(K) has a 0 that may be an underflow.
  void apply(const double* v, double* out, Index k) const;

 private:
  struct State;
  std::unique_ptr<State> m_state;
};

/// kernel_top_eigenvalues; RangeError when the eigenvalues are all 0 while diag(K) has a 0 that
/// may be an underflow.
KernelEigenvalues kernel_top_eigenvalues(const Model& model, std::span<const double> theta,
                                         Index count, const EigenOptions& options = {});

}  // namespace pathlift
