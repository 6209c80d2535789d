#pragma once
/// \file norms.hpp
/// Path-norms ||Phi(theta)||_s by dynamic programming over the DAG (docs/conventions.md#path-free):
/// no path is enumerated, so networks with 10^100 paths are fine. Values are accumulated with a
/// binary exponent per node (a scaled representation), so a norm of 10^1000 comes out right, as a
/// ScaledReal whose log10() is exact to rounding.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "pathlift/network.hpp"
#include "pathlift/scaled_real.hpp"

namespace pathlift {

/// The path-norm (docs/conventions.md#path-free) and its parts.
struct PathNorm {
  double s = 1;
  /// sum_p |Phi_p|^s over all paths. For s = 0 every path counts 1 (0^0 = 1): the sum is P.
  ScaledReal sum;
  /// ||Phi(theta)||_s = sum^(1/s) for s > 0; for s = 0, P (the same as `sum`).
  ScaledReal norm;
  /// The norm of Phi restricted to the paths ending at each output node, in output order
  /// (net.outputs()). For s = 0: paths per output.
  std::vector<ScaledReal> per_output;
  /// The norm of Phi restricted to the paths starting at each input node (bias included), in
  /// input order (net.inputs()). Filled only with PathNormDetail::inputs_and_outputs.
  std::vector<ScaledReal> per_input;
};

/// What path_norm computes besides the total.
enum class PathNormDetail : std::uint8_t {
  outputs,            ///< total and per output: one forward pass
  inputs_and_outputs  ///< also per input: one forward and one backward pass
};

/// The L^s path-norm ||Phi(theta)||_s = (sum_p |Phi_p|^s)^(1/s) (paper: path-lifting, Definition 1;
/// docs/conventions.md#path-free: ||Phi||_s^s = sum_{o in O} F(o) = sum_{i in I} G(i) with forward
/// sums F(v) = sum over partial paths input -> v of prod |theta_e|^s, inputs (bias included) having
/// value 1). s = 0 gives the path count P (every path counts 1, zero weights included).
/// Valid for any s >= 0 and finite theta; s = 1 and s = 2 avoid pow(). s = +inf gives
/// ||Phi||_inf = max_p |Phi_p| by the max-plus DP (M(v) = max over in-edges of |theta_e| M(src),
/// 1 at the inputs; each value a product of |weights|, exact to the rounding of each product);
/// `sum` and `norm` are then both that maximum, per_output / per_input the maxima over the
/// paths ending / starting there. Overflow-safe: each node
/// keeps its own binary exponent, so sums far beyond 1e308 (or below 1e-308) are exact to
/// rounding (relative error ~1e-15 times the depth).
/// Throws std::invalid_argument for theta of the wrong size (naming both sizes), a non-finite
/// theta_k (naming the edge), or s < 0 / NaN.
/// Complexity: O(m + d) time, O(m) extra memory; one pass over the edges (two with
/// PathNormDetail::inputs_and_outputs). Single-threaded.
///
/// Example:
/// \code
///   const auto net = pathlift::builtin_network("ff:784,2048,2048,2048,10");
///   const auto theta = pathlift::normal_weights(net.num_edges(), 0);
///   const pathlift::PathNorm n = pathlift::path_norm(net, theta, 1.0);
///   double log10_l1 = n.norm.log10();  // ~ 10^25 here; right even beyond 1e308
/// \endcode
PathNorm path_norm(const Network& net, std::span<const double> theta, double s,
                   PathNormDetail parts = PathNormDetail::outputs);

/// The JSON key of an exponent s: its shortest round-trip form ("1", "2", "0.5", "inf").
std::string s_key(double s);

/// Norms as JSON, keyed by s_key: "norms" (each norm's value, null beyond double's range) and
/// "log10_norms" (null for 0); then, when the norms hold them, "log10_per_output" and
/// "log10_per_input": {s: {name: log10 of the norm restricted to that node's paths}}, with the
/// nodes named by `output_names` / `input_names` (their indices when those are empty). Throws
/// std::invalid_argument when a non-empty list of names does not match a norm's entries.
std::string to_json(std::span<const PathNorm> norms, std::span<const std::string> output_names = {},
                    std::span<const std::string> input_names = {}, int indent = 2);

/// The gradient of the L^s path-norm ||Phi(theta)||_s with respect to theta (d entries), for
/// s > 0 (a path-norm regularizer's gradient):
///   d||Phi||_s / d theta_k = ||Phi||_s^(1-s) sum_{edges e of k} |theta_k|^(s-1)
///                            sign(theta_k) F_s(src e) G_s(dst e),
/// with the forward and backward sums F_s, G_s of path_norm (docs/conventions.md#path-free).
/// For s = 1 it is the gradient of sum_p |Phi_p|. At theta_k = 0 the entry is 0 for s >= 1
/// (for s = 1 the subgradient of |.| at 0); for s < 1 the norm is not differentiable there and
/// std::invalid_argument names the parameter. Entries above double's range are +-inf; the
/// sums themselves are scaled, so a network whose norm overflows still gets finite entries
/// where they fit. Throws std::invalid_argument for a bad theta or s <= 0, RangeError when
/// non-zero entries fall below the smallest normal double (underflow: never returned as 0).
/// Complexity: O(m + d), one forward and one backward pass.
std::vector<double> path_norm_gradient(const Network& net, std::span<const double> theta, double s);

/// The path magnitude of each parameter (d entries): sum over the paths p through k of
/// |Phi_p| (a path using k on n edges counts n times), the pruning score "how much of
/// ||Phi||_1 goes through k". It is theta_k times the gradient of ||Phi||_1, computed by the
/// same forward and backward pass as path_norm_gradient (norms.hpp), without enumerating a
/// path; entries above double's range are inf. Rescaling-invariant. Throws
/// std::invalid_argument for a bad theta, RangeError as path_norm_gradient (saying it was
/// the path magnitudes'). Complexity: O(m + d).
std::vector<double> path_magnitude(const Network& net, std::span<const double> theta);

}  // namespace pathlift
