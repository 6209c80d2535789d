#pragma once
/// \file forward.hpp
/// The forward pass of a DAG ReLU network on a batch of data (docs/conventions.md#forward),
/// vectorised over the batch, and the activation pattern it goes through: the slope each node
/// uses on each sample, and the margin (how far the batch is from a kink).
///
/// Data layout: X is n x r, one sample a row; column c holds the c-th data input
/// (Network::data_inputs(): input nodes in node order, bias nodes excluded, their value is 1).
/// Per-node results are n x m, one column per node (node order), so a column is one node over
/// the whole batch, contiguous in memory.

#include <Eigen/Core>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "pathlift/network.hpp"
#include "pathlift/options.hpp"
#include "pathlift/types.hpp"

namespace pathlift {

/// The forward pass on a batch: pre-activations, values and outputs.
struct ForwardResult {
  /// n x m: column v is the pre-activation sum_{e=(u->v)} theta_e v(u) of node v on every
  /// sample (summed over v's incoming edges by increasing edge index); for an input node,
  /// its value (x_i[c], or 1 for a bias).
  Eigen::MatrixXd pre_activations;
  /// n x m: column v is act_v(pre-activation), the node's value on every sample.
  Eigen::MatrixXd values;
  /// n x q: f_theta(x_i), the values of the output nodes in output order (Network::outputs()).
  Eigen::MatrixXd outputs;

  [[nodiscard]] Index num_samples() const { return outputs.rows(); }
};

/// f_theta on every row of X: v(input) = x_i (bias: 1), v(n) = act_n(sum_{e=(m->n)} theta_e
/// v(m)) node by node in topological order, each node over the whole batch at once (blocks of
/// samples run in parallel; each sample's arithmetic is the same whatever the thread count, so
/// results are bit-identical for any `options.threads`). Activations: identity, ReLU, leaky
/// ReLU (slope 1 for a positive pre-activation, Activation::negative_slope otherwise).
///
/// X: n x r with r = data_inputs().size() and finite entries; n may be 0. theta: d finite
/// entries. Throws FormatError when X has the wrong number of columns (both numbers named),
/// std::invalid_argument for a NaN/inf entry of X (row and column named) or of theta, or a
/// wrong theta size, TooLarge when the n x m results exceed `options.max_memory`.
/// Complexity: O(n (m + d)) time, O(n m) memory.
///
/// Example:
/// \code
///   const pathlift::Network net = pathlift::fig1();
///   const std::vector<double> theta = pathlift::normal_weights(net.num_edges(), 0);
///   Eigen::MatrixXd X(2, 2);
///   X << 1.0, -1.0, 0.5, 2.0;                     // two samples, inputs a and c
///   const auto fw = pathlift::forward(net, theta, X);  // fw.outputs is 2 x 1 (node h)
/// \endcode
ForwardResult forward(const Network& net, std::span<const double> theta,
                      const Eigen::Ref<const Eigen::MatrixXd>& X,
                      const EngineOptions& options = {});

/// Which linear piece of every activation each sample uses (paper, proof of Proposition 1).
struct ActivationPattern {
  /// n x m: slopes(i, v) = 1 when node v's pre-activation on sample i is > 0, else the node's
  /// Activation::negative_slope (ReLU 0, leaky ReLU a, identity 1); 1 for input nodes. So
  /// values = slopes .* pre_activations for every node that is not an input. At a
  /// pre-activation of exactly 0 the slope is the negative one (ReLU'(0) = 0, as in PyTorch).
  Eigen::MatrixXd slopes;
  /// n x m, only for a network with max nodes (0 x 0 otherwise): the incoming edge of max node
  /// v that attains the max on sample i, the one of smallest index among ties; -1 for the
  /// other nodes. Only that edge is active in the linearization (its slope is 1, the others'
  /// 0). A max node's margin is the gap between its largest and second-largest candidate.
  Eigen::Matrix<EdgeId, Eigen::Dynamic, Eigen::Dynamic> max_edges;
  /// min |pre-activation| over all samples and all kinked nodes (ReLU, and leaky ReLU with a
  /// slope other than 1); +inf when there is none (or n = 0).
  double margin = std::numeric_limits<double>::infinity();
  /// Where the margin is attained (-1 when margin is +inf).
  Index margin_sample = -1;
  NodeId margin_node = -1;
  /// The warning: margin == 0, some sample sits exactly on a kink. theta is then in the null
  /// set Proposition 1 excludes: f = L Phi still holds at theta, but L is not unique and f
  /// need not be differentiable there.
  bool on_kink = false;
};

/// The activation pattern of a forward pass. Throws std::invalid_argument when `fw` does not
/// have one column per node of `net`.
/// Complexity: O(n m).
ActivationPattern activation_pattern(const Network& net, const ForwardResult& fw);

/// Whether an activation pattern is certain: the pattern the floating-point forward pass chose
/// is that of the exact forward pass (exact arithmetic on the same theta and X, which are
/// dyadic rationals), so that exact computations at the pattern (functional_dimension.hpp) are
/// about the network itself.
struct PatternCertificate {
  /// Every kinked pre-activation is farther from 0 than its rounding error bound, or computed
  /// exactly (then its sign is known, 0 included); every max node's chosen edge is ahead of
  /// the others by more than twice their error bound, or computed exactly.
  bool certified = true;
  /// The (sample, node) pairs that are not certain.
  Index uncertain = 0;
  /// The first of them (sample order, then topological order); -1 when certified.
  Index sample = -1;
  NodeId node = -1;
  /// Its pre-activation (a max node: its gap) and the error bound it did not clear.
  double value = 0;
  double error_bound = 0;
};

/// Bounds the rounding error of every pre-activation of `fw` (forward() on theta and X) by
/// propagating, node by node, the a-priori bound gamma_k sum |w_e v(u)| of a k-term dot product
/// in any order (with or without fused multiply-adds) plus sum |w_e| err(u), where a dot product
/// whose terms are exact products on a common binary grid with sum |w_e v(u)| < 2^53 grid
/// steps is exact (error 0: integer and dyadic networks are certified at every pre-activation,
/// including exact zeros). Throws as activation_pattern() for mismatched shapes.
/// Complexity: O(n E) time, O(m) memory per thread.
PatternCertificate certify_activation_pattern(const Network& net, std::span<const double> theta,
                                              const Eigen::Ref<const Eigen::MatrixXd>& X,
                                              const ForwardResult& fw,
                                              const ActivationPattern& pattern,
                                              const EngineOptions& options = {});

/// A reproducible batch of n samples with standard normal entries (n x r, r =
/// data_inputs().size()), for checks on random data (the report, tests).
/// Complexity: O(n r).
Eigen::MatrixXd random_data(const Network& net, Index n, std::uint64_t seed);

/// The column of X each node reads: c for the c-th data input (Network::data_inputs()), -1 for
/// every other node, bias nodes included. Complexity: O(m).
std::vector<Index> data_columns(const Network& net);

/// Checks that X fits the network: r = data_inputs().size() columns (FormatError naming both
/// numbers otherwise) and finite entries (std::invalid_argument naming row and column).
void check_data(const Network& net, const Eigen::Ref<const Eigen::MatrixXd>& X);

}  // namespace pathlift
