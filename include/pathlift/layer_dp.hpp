#pragma once
/// \file layer_dp.hpp
/// Path-free quantities of a network given by its layer graph (layers.hpp), computed layer by
/// layer with the layers' own kernels (a convolution is im2col + a float64 GEMM), without
/// unrolling: what a torchvision ResNet-50 at 3x224x224 (4e9 edges once unrolled)
/// needs is O(activations + parameters) memory. docs/layers.md#path-free has the recursions.
///
/// Every quantity is the one of the unrolled DAG (unroll(graph)) at the same theta:
/// path_norm(graph, theta, s) equals path_norm(unroll(graph), theta, s) to rounding, and so on.
/// Each tensor of the dynamic programme carries one binary exponent (a per-layer power-of-two
/// scaling), so sums far beyond double's range (a path-norm of 10^5000) come out right, as a
/// ScaledReal that knows its log10. Results are bit-identical for any thread count. Each
/// function refuses with TooLarge (the sizes and the limit) when its tensors would exceed
/// options.max_memory (0: half of physical RAM), before allocating them.
///
/// Example:
/// \code
///   const pathlift::LayerGraph g = pathlift::read_onnx("resnet18.onnx", {3, 224, 224});
///   const std::vector<double>& theta = *g.weights;
///   const pathlift::PathNorm l1 = pathlift::path_norm(g, theta, 1.0);
///   const pathlift::Buffer<double> diag = pathlift::kernel_diagonal(g, theta);
/// \endcode

#include <Eigen/Core>
#include <memory>
#include <span>
#include <vector>

#include "pathlift/counting.hpp"
#include "pathlift/kernel.hpp"
#include "pathlift/layers.hpp"
#include "pathlift/norms.hpp"
#include "pathlift/options.hpp"
#include "pathlift/path_metric.hpp"
#include "pathlift/types.hpp"

namespace pathlift {

/// The path counts of unroll(graph), without unrolling: paths (P), nnz, per_output,
/// length_histogram and max_path_length; per_input and per_edge are left empty (they are
/// per node and per edge). A count is exact while it is below 2^53 and known by its log10
/// beyond (Count::exact() says which). The histogram follows the unroller's nodes
/// (docs/layers.md: a pending sum adds no edge). The histogram's work is a counting pass per
/// path length a layer spans (a chain of L layers with biases: L^2 / 2 passes); when it would
/// exceed 2e11 multiply-adds or options.max_memory, it is skipped, length_histogram_refused
/// says why, nnz comes from one pass in dual numbers and max_path_length is -1 (never a throw).
/// Throws what layer_shapes throws.
/// Complexity: O(entries x max_path_length + layer windows), bounded as said.
PathCounts count_paths(const LayerGraph& graph, const EngineOptions& options = {});

/// P alone (one pass; exact below 2^53, log10 beyond). Complexity: O(entries x window).
Count count_paths_total(const LayerGraph& graph, const EngineOptions& options = {});

/// nnz(B) of unroll(graph), the sum of the path lengths (count_paths' nnz), by one pass in dual
/// numbers without the histogram. Complexity: O(entries x window), two tensors a layer.
Count skeleton_nnz(const LayerGraph& graph, const EngineOptions& options = {});

/// The L^s path-norm of unroll(graph) at theta (norms.hpp): total and per_output (in the
/// order of the unrolled outputs y0, y1, ...); per_input is left empty. One forward pass with
/// the weights |theta|^s (fixed weights |w|^s: average pooling's 1/k, sub's -1), an input of
/// ones. 0 <= s < inf; s = 0 gives P (as a ScaledReal); s = inf (max-plus) needs the DAG:
/// path_free.hpp's path_norm(Model) unrolls for it. Throws std::invalid_argument for theta of
/// the wrong size or with a non-finite entry (naming the parameter), or a bad s.
/// Complexity: one forward pass, O(GEMM flops of the network).
PathNorm path_norm(const LayerGraph& graph, std::span<const double> theta, double s,
                   const EngineOptions& options = {});

/// The gradient of the L^s path-norm (norms.hpp's path_norm_gradient) of unroll(graph): one
/// forward and one backward pass and one weight-gradient product per layer. Same rules.
std::vector<double> path_norm_gradient(const LayerGraph& graph, std::span<const double> theta,
                                       double s, const EngineOptions& options = {});

/// The kernel diagonal K[k,k] (kernel.hpp) of unroll(graph): the sum over the edges of k of
/// A(src e) B(dst e) (forward and backward sums with the weights theta^2): a forward pass, a
/// backward pass and one weight-gradient product per layer. Entries beyond 1.8e308 are +inf.
/// When one parameter block is used by two layers on one path (a module applied twice in
/// sequence), the diagonal is not a sum over edges: the graph is then unrolled (TooLarge with
/// the sizes when it would not fit) and the DAG function answers. Throws
/// std::invalid_argument for a bad theta.
Buffer<double> kernel_diagonal(const LayerGraph& graph, std::span<const double> theta,
                               const EngineOptions& options = {});

/// trace(K) as a ScaledReal (right beyond double's range). Same passes and errors as
/// kernel_diagonal.
ScaledReal kernel_trace(const LayerGraph& graph, std::span<const double> theta,
                        const EngineOptions& options = {});

/// K v (d entries) without forming K: forward sums A, C and backward sums B, E in the
/// (value, derivative) semiring, layer by layer (kernel.hpp's kernel_matvec). Throws
/// std::invalid_argument for theta or v of the wrong size or with a non-finite entry.
/// Complexity: the passes of LayerKernelOperator's construction and one of its products.
Eigen::VectorXd kernel_matvec(const LayerGraph& graph, std::span<const double> theta,
                              std::span<const double> v, const EngineOptions& options = {});

/// K as a reusable operator on a layer graph. What a product needs that does not depend on v
/// is computed once, at construction: the forward sums A and backward sums B at theta^2 (kept:
/// 2 x the entries of the layer outputs, in doubles) and sum over the edges of each parameter
/// of A(src) B(dst). A product K v then costs the derivative sums only: C forward
/// (C = T_sq C + T_prod A) and E backward (E = T_sq^T E + T_prod^T B), and the edge products
///   (K v)_k = theta_k sum_{e of k} [C(src) B(dst) + A(src) E(dst)] + v_k sum_{e of k} A B,
/// about six GEMMs per convolution. Holds references to `graph` and `theta`, which must outlive
/// it. Throws like kernel_matvec, and TooLarge (with the sizes) when the kept sums would exceed
/// options.max_memory. apply() is not thread-safe (the engine's threads run inside it).
class LayerKernelOperator {
 public:
  LayerKernelOperator(const LayerGraph& graph, std::span<const double> theta,
                      const EngineOptions& options = {});
  LayerKernelOperator(const LayerKernelOperator&) = delete;
  LayerKernelOperator& operator=(const LayerKernelOperator&) = delete;
  LayerKernelOperator(LayerKernelOperator&&) noexcept;
  LayerKernelOperator& operator=(LayerKernelOperator&&) = delete;
  ~LayerKernelOperator();

  /// d, the size of K.
  [[nodiscard]] Index size() const;
  /// out[:, j] = K v[:, j] for the k columns of the column-major d x k blocks v and out (v
  /// finite, not checked here). Progress, when the options have a callback, is over the k
  /// columns.
  void apply(const double* v, double* out, Index k) const;

 private:
  struct State;
  std::unique_ptr<State> m_state;
};

/// The `count` largest eigenvalues of K by restarted Lanczos on kernel_matvec (kernel.hpp);
/// EigenMethod::dense unrolls the graph (refused with the sizes when it would not fit).
/// 1 <= count < d. Statuses and errors as kernel_top_eigenvalues on a Network.
KernelEigenvalues kernel_top_eigenvalues(const LayerGraph& graph, std::span<const double> theta,
                                         Index count, const EigenOptions& options = {});

/// The path magnitude of each parameter (norms.hpp's path_magnitude) of unroll(graph):
/// theta_k times path_norm_gradient(graph, theta, 1). Same rules.
std::vector<double> path_magnitude(const LayerGraph& graph, std::span<const double> theta,
                                   const EngineOptions& options = {});

/// The path-metric of unroll(graph) (path_metric.hpp), layer by layer without unrolling: two
/// path-norm passes when one vector dominates the other, else a forward pass at |theta2|, a
/// backward pass at |theta| and the edge products weighted by |theta_k - theta2_k|. Throws
/// std::invalid_argument for a theta or theta2 of the wrong size or with a non-finite entry.
PathMetric path_metric(const LayerGraph& graph, std::span<const double> theta,
                       std::span<const double> theta2, const EngineOptions& options = {});

/// The Lipschitz constant of unroll(graph) (path_metric.hpp's lipschitz_bound).
LipschitzBound lipschitz_bound(const LayerGraph& graph, std::span<const double> theta,
                               std::span<const double> theta2, const EngineOptions& options = {});

}  // namespace pathlift
