#pragma once
/// \file kernel.hpp
/// The path kernel K = dPhi^T dPhi (d x d) and the Gram matrix of the skeleton B^T B, by dynamic
/// programming over the DAG, without enumerating a single path (docs/conventions.md#path-free): the
/// diagonal, K v (matrix-free), the full matrix while d x d fits in memory, its trace and top
/// eigenvalues, and B^T B exactly (64-bit integers or modulo a prime, for the rank certificate).
///
/// Notation: A(x) = sum over partial paths a (input -> x) of Phi_a^2 (forward sum, s = 2, inputs
/// count 1), B(y) = [y output] + sum_{e = (y -> z)} theta_e^2 B(z) (backward sum, s = 2), and
/// M(x, y) = sum over partial paths x -> y of Phi^2 (M(x, x) = 1).

#include <Eigen/Core>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "pathlift/gram.hpp"
#include "pathlift/mod_p.hpp"
#include "pathlift/network.hpp"
#include "pathlift/norms.hpp"
#include "pathlift/options.hpp"
#include "pathlift/types.hpp"

namespace pathlift {

/// Dense row-major float64 matrix (the full kernel).
using DenseMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// The diagonal of the path kernel: K[k,k] = sum_{p through k} (prod_{e in p, e != k} theta_e)^2 =
/// A(src k) B(dst k) (docs/conventions.md#path-free). Products of the other weights only, never a
/// division: exact at theta_k = 0. Node sums are scaled (one binary exponent per node), so entries
/// are right whenever they themselves fit in a double; entries beyond 1.8e308 are +inf. Throws
/// std::invalid_argument for theta of the wrong size or a non-finite entry (naming the edge).
/// Complexity: O(m + d), one forward and one backward pass over the edges.
Buffer<double> kernel_diagonal(const Network& net, std::span<const double> theta);

/// trace(K) = sum_k K[k,k] = sum_p sum_{k in p} prod_{e in p, e != k} theta_e^2, as a
/// ScaledReal (right beyond double's range). Same passes, errors and complexity as
/// kernel_diagonal.
ScaledReal kernel_trace(const Network& net, std::span<const double> theta);

/// K v = dPhi^T (dPhi v) without forming dPhi (R^P): one forward and one backward pass in the
/// (value, derivative) semiring. With the forward sums C(x) = sum_a Phi_a D_a and backward sums
/// E(y) = sum_b Phi_b D_b (D = derivative of Phi along v):
///   (K v)_k = theta_k C(src k) B(dst k) + v_k A(src k) B(dst k) + theta_k A(src k) E(dst k).
/// Throws std::invalid_argument for theta or v of the wrong size or with a non-finite entry.
/// Complexity: O(m + d) per product.
Eigen::VectorXd kernel_matvec(const Network& net, std::span<const double> theta,
                              std::span<const double> v);

/// K V for a d x k block V (column-major; each column finite): K v column by column on one
/// KernelOperator. Throws like kernel_matvec (naming the column of a bad entry).
Eigen::MatrixXd kernel_matmat(const Network& net, std::span<const double> theta,
                              const Eigen::MatrixXd& v);

/// A reusable v -> K v operator (validates theta once, keeps its buffers): what
/// kernel_top_eigenvalues iterates. Holds references to `net` and `theta`, which must outlive it.
/// apply() is not thread-safe (it reuses the buffers).
class KernelOperator {
 public:
  /// Throws like kernel_matvec.
  KernelOperator(const Network& net, std::span<const double> theta);
  KernelOperator(const KernelOperator&) = delete;
  KernelOperator& operator=(const KernelOperator&) = delete;
  KernelOperator(KernelOperator&&) noexcept;
  KernelOperator& operator=(KernelOperator&&) = delete;
  ~KernelOperator();

  /// d, the size of K (the number of parameters).
  [[nodiscard]] Index size() const;
  /// out = K v; both have d entries (v finite, not checked here). Complexity: O(m + edges).
  /// With parameters distinct from edges, K = M^T K_edge M (M: edge -> parameter incidence).
  void apply(const double* v, double* out) const;
  /// out[:, j] = K v[:, j] for the k columns of the column-major d x k blocks v and out.
  void apply(const double* v, double* out, Index k) const;

 private:
  void apply_edges(const double* v, double* out) const;
  struct State;
  const Network* m_net;
  std::span<const double> m_theta;
  std::unique_ptr<State> m_state;
};

/// TooLarge, with d and the bytes, when the full kernel's d x d doubles exceed max_memory (0:
/// half of physical RAM): what kernel() checks first.
void require_kernel_fits(Index d, std::size_t max_memory);

/// The full path kernel K = dPhi^T dPhi (d x d, symmetric, float64) by the off-diagonal
/// factorisation of docs/conventions.md#path-free: for edges i, j with j after i on some path,
///   K[i,j] = theta_i theta_j A(src i) M(dst i, src j) B(dst j),
/// 0 when no path contains both, and K[i,i] = A(src i) B(dst i). Exact at zero weights (no
/// division). One forward DP from each node gives M(x, .) (OpenMP over x; the result is
/// identical for any thread count). Throws TooLarge, with d and the bytes, when d x d doubles
/// exceed options.max_memory (0: half of physical RAM); std::invalid_argument for a bad theta.
/// Entries beyond float64 are inf (path_free.hpp's kernel(Model) refuses them).
/// Complexity: O(m (m + d) + d^2) time, O(d^2) memory.
DenseMatrix kernel(const Network& net, std::span<const double> theta,
                   const EngineOptions& options = {});

/// How kernel_top_eigenvalues got its result.
enum class EigenStatus : std::uint8_t {
  converged,       ///< all requested eigenvalues converged to the tolerance
  not_converged,   ///< stopped at max_iterations; `values` holds the converged ones
  numerical_issue  ///< the solver failed (e.g. K has non-finite entries)
};

/// "converged", "not_converged", "numerical_issue".
std::string_view to_string(EigenStatus status);

/// The status named `name` (a to_string name). Throws std::invalid_argument naming `name` and
/// listing the valid names otherwise.
EigenStatus parse_eigen_status(std::string_view name);

/// How the top eigenvalues are computed.
enum class EigenMethod : std::uint8_t {
  automatic,  ///< dense for small d (d <= 256 or count > d / 2), block Lanczos otherwise,
              ///< and dense again when the iteration is inconclusive and d x d fits
  lanczos,    ///< thick-restart block Lanczos on kernel products (needs count < d): a block
              ///< of 1 vector and a check for the copies of repeated eigenvalues, of count
              ///< when the network has twin units
  dense,      ///< the full kernel and Eigen's symmetric eigensolver (d x d must fit)
  lobpcg      ///< LOBPCG on block products K V (needs 3 x block <= d)
};

/// "automatic", "lanczos", "dense", "lobpcg".
std::string_view to_string(EigenMethod method);

/// The method named `name`: a to_string name, or "auto" for automatic. Throws
/// std::invalid_argument naming `name` and listing the valid names otherwise.
EigenMethod parse_eigen_method(std::string_view name);

struct EigenOptions {
  EigenMethod method = EigenMethod::automatic;
  /// The iteration cap, one name for every method: Lanczos restarts or LOBPCG iterations.
  Index max_iterations = 1000;
  /// Relative tolerance of both iterations: ||K v - lambda v|| <= tolerance * lambda for each
  /// pair (plus a roundoff floor of 64 eps sqrt(d) lambda_max), confirmed by fresh products.
  double tolerance = 1e-10;
  /// Lanczos: the basis size (0: max(2 count + 1, count + 20), narrowed to the memory limit);
  /// LOBPCG: the block size (0: count + max(2, count / 2)).
  Index subspace = 0;
  bool vectors = false;  ///< also return the eigenvectors (d x count)
  EngineOptions engine;  ///< memory limit, threads and progress
};

/// The largest eigenvalues of K (and eigenvectors when asked), and how they were obtained.
struct KernelEigenvalues {
  Eigen::VectorXd values;  ///< converged eigenvalues, largest first
  /// d x values.size() unit eigenvectors, column j for values[j], each with its entry of
  /// largest magnitude positive; empty unless EigenOptions::vectors.
  Eigen::MatrixXd vectors;
  /// ||K v_j - lambda_j v_j|| / lambda_j from a fresh product K V: always for Lanczos and
  /// LOBPCG, for the dense method when the vectors are asked for; empty otherwise.
  Eigen::VectorXd residuals;
  EigenStatus status = EigenStatus::converged;
  Index iterations = 0;  ///< Lanczos restarts or LOBPCG iterations (0 for the dense method)
  Index products = 0;    ///< kernel products K v computed, one per vector (0 for dense)
  EigenMethod method = EigenMethod::dense;  ///< the method that produced the values
  bool dense = false;                       ///< true when the dense method was used
};

/// The result as one JSON object (its schema in docs/cli.md, the CLI's kernel output; Python's
/// KernelEigenvalues.to_dict() returns it): keys eigenvalues (largest
/// first; null for a value that is not finite), status (to_string), method ("dense",
/// "lanczos" or "lobpcg": the one that produced the values), products, iterations, residuals
/// (null when not computed; null entries for non-finite ones), in that order; the vectors are
/// not part of it. Indented
/// by `indent` spaces; -1 gives one line. Complexity: O(number of values).
std::string to_json(const KernelEigenvalues& result, int indent = 2);

/// The `count` largest eigenvalues of the path kernel K (symmetric positive semi-definite), and
/// the eigenvectors when options.vectors: thick-restart block Lanczos or LOBPCG on the
/// matrix-free block product of kernel_matmat, so K is never formed, or the dense eigensolver
/// on kernel() for small d. Every copy of a repeated eigenvalue among the top count is found.
/// Block Lanczos takes a block of count vectors, which finds up to count copies, when the
/// network has twin units, non-input nodes with the same activation and equal weights from the
/// same sources (the first layer a permutation symmetry of the network moves has them; such
/// symmetries are how eigenvalues repeat exactly in practice); otherwise a block of one vector
/// (the fewest products), which sees each eigenvalue once, followed by a multiplicity check:
/// Lanczos on K deflated by the eigenvectors found, from a new random start, whose largest
/// eigenvalue, when above the count-th value, is a missed copy that joins the result (again
/// until none is). LOBPCG's block exceeds count and finds the copies itself.
/// 1 <= count <= d; throws std::invalid_argument otherwise or for a bad theta, TooLarge when
/// a method needs more than the memory limit. Status, not a throw, when the iteration does
/// not converge or fails (not_converged / numerical_issue).
/// Complexity: O((m + d) * products) for the iterations (m: the basis); O(m (m + d) + d^3)
/// dense.
KernelEigenvalues kernel_top_eigenvalues(const Network& net, std::span<const double> theta,
                                         Index count, const EigenOptions& options = {});

}  // namespace pathlift
