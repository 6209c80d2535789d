#pragma once
/// \file linearize.hpp
/// The paper's Proposition 1: on a finite batch x_1..x_n, near almost every theta, the
/// network's outputs are a linear function of the path-lifting,
///   {f_theta(x_i)} = L Phi(theta),   hence   d f / d theta = L dPhi,
/// with L the sparse (n q) x P matrix whose row (i, j) (row index i q + j, sample-major) holds in
/// column p the number c_p^i x_i[start(p)] when end(p) is output j, where c_p^i is the product of
/// the slopes (ActivationPattern) of the nodes path p enters (docs/conventions.md#linearization).
/// This header computes L and verifies both identities against the forward pass and its central
/// finite differences.

#include <Eigen/Core>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>

#include "pathlift/forward.hpp"
#include "pathlift/network.hpp"
#include "pathlift/paths.hpp"
#include "pathlift/sparse.hpp"

namespace pathlift {

/// The map L of Proposition 1 as a CSR matrix of shape (n q) x P: row i q + j, column p (the
/// canonical path order of paths.hpp) holds c_p^i x_i[start(p)] (x = 1 on a bias input) when
/// end(p) is the j-th output, where c_p^i = prod_{e in p} slopes(i, dst(e)). Entries equal to
/// 0 (a path through an inactive ReLU on sample i, or from a zero input) are not stored;
/// columns increase within each row. The pattern's slopes must come from a forward pass on
/// the same X.
///
/// Built without any dense (n q) x P array, in parallel over samples (bit-identical for any
/// thread count): a DP over the nodes counts each row's entries, then per sample a
/// depth-first walk in canonical path order fills them, skipping with the DP path counts
/// every subtree behind a zero slope (or a zero input). Throws FormatError /
/// std::invalid_argument for data that does not fit the network (check_data), or slopes of
/// the wrong shape; TooLarge when P exceeds 2^31 - 1 (32-bit column indices) or when L needs
/// more than `options.max_memory` bytes (the message gives n, q, P, nnz and the bytes).
/// Complexity: O(n (m + d) + W) time where W (<= n * nnz(B)) is the number of path prefixes
/// the walks visit with a non-zero product; O(nnz(L) + n q) memory.
CsrMatrix<double> linear_map(const Network& net, const Eigen::Ref<const Eigen::MatrixXd>& X,
                             const ActivationPattern& pattern, const EngineOptions& options = {});

/// A forward pass, its activation pattern and the map L built from them.
struct Linearization {
  ForwardResult forward;
  ActivationPattern pattern;
  CsrMatrix<double> map;  ///< L, (n q) x P
};

/// forward(), activation_pattern() and linear_map() in one call, with the same errors.
/// Complexity: that of linear_map.
///
/// Example:
/// \code
///   const pathlift::Network net = pathlift::feed_forward(3, {8, 8}, 2);
///   const auto theta = pathlift::normal_weights(net.num_edges(), 1);
///   const Eigen::MatrixXd X = pathlift::random_data(net, 100, 2);
///   const auto lin = pathlift::linearize(net, theta, X);
///   // lin.map * path_lifting(net, theta) == lin.forward.outputs, row i q + j = (i, j)
/// \endcode
Linearization linearize(const Network& net, std::span<const double> theta,
                        const Eigen::Ref<const Eigen::MatrixXd>& X,
                        const EngineOptions& options = {});

/// Outcome of a verification, worst first: a check failed, theta is on a kink, the finite
/// differences could not be checked for some entries, or everything agreed.
enum class LinearizationStatus : std::uint8_t {
  ok,            ///< margin > 0, both identities within their tolerances
  inconclusive,  ///< some gradient entries could not be checked (margin too small for any
                 ///< finite-difference step that keeps the activation pattern)
  on_kink,       ///< margin == 0: L is not unique there; checked entries agreed
  mismatch       ///< an error above its tolerance (a bug, or overflow)
};

/// "ok", "inconclusive", "on_kink", "mismatch" (the `status` of to_json).
std::string to_string(LinearizationStatus status);

/// The status named `name` (a to_string name). Throws std::invalid_argument naming `name` and
/// listing the valid names otherwise.
LinearizationStatus parse_linearization_status(std::string_view name);

/// How the verification samples and judges.
struct LinearizationCheckOptions {
  /// Largest relative error accepted for f = L Phi (rounding is about depth * 1e-16).
  double tolerance_f = 1e-10;
  /// Largest relative error accepted for df/dtheta = L dPhi against finite differences.
  double tolerance_grad = 1e-6;
  /// Samples (rows of X) whose gradient rows are checked, chosen at random when n is larger.
  Index grad_samples = 8;
  /// Parameters (columns of dPhi) checked, chosen at random when d is larger.
  Index grad_params = 16;
  /// Seed of those choices (reproducible).
  std::uint64_t seed = 0;
  /// Threads and memory limit of the computations (Phi, dPhi, L).
  EngineOptions engine;
};

/// What verify_linearization found. Relative errors are |a - b| / max(s, |a|, |b|) where s is
/// the same sum taken over the absolute values of its terms (|L| |Phi| for f, |L| |dPhi| for
/// the gradient), the scale rounding errors are proportional to (0 when a = b = s = 0).
struct LinearizationCheck {
  Index n = 0;                                              ///< samples
  Index q = 0;                                              ///< outputs
  Index P = 0;                                              ///< paths (columns of L)
  Index nnz_L = 0;                                          ///< stored entries of L
  double margin = std::numeric_limits<double>::infinity();  ///< ActivationPattern::margin
  /// max over all n q entries of the relative error between f_theta(X) and L Phi(theta).
  double max_err_f = 0;
  /// max over the checked (i, j, k) of the relative error between (L dPhi)[(i, j), k] and the
  /// central finite difference (f_{theta + h e_k}(x_i)_j - f_{theta - h e_k}(x_i)_j) / 2h.
  /// h starts at max(|theta_k|, 1) / 64 and is halved until the activation pattern of x_i is
  /// the same at theta - h e_k, theta and theta + h e_k; f is then affine in theta_k over
  /// the whole step, so the difference is exact up to rounding. NaN when nothing was checked.
  double max_err_grad = std::numeric_limits<double>::quiet_NaN();
  Index grad_entries = 0;  ///< (i, j, k) compared
  Index grad_skipped = 0;  ///< (i, j, k) skipped: no pattern-preserving step found
  LinearizationStatus status = LinearizationStatus::ok;
  std::string message;  ///< one line explaining a status other than ok (empty when ok)
};

/// Verifies Proposition 1 for a computed linearization: f_theta(X) = L Phi(theta) on every
/// entry, and df/dtheta = L dPhi against central finite differences of forward() on a random
/// sample of entries (options.grad_samples samples x all outputs x options.grad_params
/// parameters). `phi` and `dphi` are path_lifting() and jacobian() at the same theta; `lin`
/// comes from linearize(net, theta, X). Throws std::invalid_argument when the sizes disagree.
/// Complexity: O(nnz(L) + nnz(dPhi) + s q (nnz of s rows of L) + s K d t) with s, K the
/// sampled samples and parameters and t <= 60 step halvings.
LinearizationCheck verify_linearization(const Network& net, std::span<const double> theta,
                                        const Eigen::Ref<const Eigen::MatrixXd>& X,
                                        const Linearization& lin, std::span<const double> phi,
                                        const CsrMatrix<double>& dphi,
                                        const LinearizationCheckOptions& options = {});

/// The check as one JSON object (its schema in docs/cli.md; Python's
/// LinearizationCheck.to_dict() returns it): keys n, q, P, nnz_L, margin, max_err_f, max_err_grad,
/// status, in that order (a number that is not finite, such as the margin of a network without
/// ReLU or max_err_grad when nothing was checked, is null). Indented by `indent` spaces; -1
/// gives one line. Complexity: O(1).
std::string to_json(const LinearizationCheck& check, int indent = 2);

/// linearize(), path_lifting(), jacobian() and verify_linearization() in one call: the check
/// `pathlift report` runs on a small random batch (random_data()). Throws what those throw
/// (TooLarge when Phi, dPhi or L do not fit in options.engine.max_memory).
/// Complexity: O(nnz(L) + nnz(B)) time and memory, plus the finite differences above.
LinearizationCheck check_linearization(const Network& net, std::span<const double> theta,
                                       const Eigen::Ref<const Eigen::MatrixXd>& X,
                                       const LinearizationCheckOptions& options = {});

}  // namespace pathlift
