#pragma once
/// \file path_shares.hpp
/// Each parameter's, node's, channel's and layer's share of the path-norm: the fraction of
/// ||Phi||_s^s carried by the paths through it, by dynamic programming (no path enumerated; a
/// layer graph's parameter, channel and layer shares without unrolling). docs/paths.md#shares.
///
/// Example:
/// \code
///   const auto by_layer = pathlift::path_norm_shares(model, theta, 1, pathlift::SharesBy::layer);
///   for (std::size_t i = 0; i < by_layer.names.size(); ++i)
///     fmt::print("{} {:.3f}\n", by_layer.names[i], by_layer.shares[i]);
/// \endcode

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pathlift/model.hpp"
#include "pathlift/options.hpp"
#include "pathlift/scaled_real.hpp"

namespace pathlift {

/// What a share is taken over.
enum class SharesBy : unsigned char {
  parameter,  ///< theta_k: sum over the paths through k of |Phi_p|^s (once per edge carrying k)
  node,       ///< a node v of the DAG: F(v) G(v), the paths through v
  channel,    ///< an output channel of a parameter layer (a linear layer's output feature): the
              ///< paths through its weights and bias, sum of F(v) G(v) over its entries
  layer       ///< a parameter layer: the paths through its weights and biases
};

/// "parameter", "node", "channel", "layer"; parse_shares_by throws std::invalid_argument
/// listing them.
std::string to_string(SharesBy by);
SharesBy parse_shares_by(std::string_view name);

/// The shares: names[i] carries shares[i] of total = ||Phi||_s^s.
struct PathNormShares {
  double s = 1;
  SharesBy by = SharesBy::parameter;
  /// Node names, "<layer>[c]", layer names; empty by parameter (share k is theta_k's: d names
  /// would cost more than the shares themselves).
  std::vector<std::string> names;
  std::vector<double> shares;  ///< fractions of total, each in [0, 1]
  ScaledReal total;            ///< ||Phi||_s^s

  /// The name of share i: names[i], or "theta[i]" by parameter.
  [[nodiscard]] std::string name(std::size_t i) const;
};

/// The shares of ||Phi(theta)||_s^s (s finite and > 0). A parameter's is
/// theta_k d||Phi||_s / d theta_k / ||Phi||_s (the s-th power of its paths, with their
/// multiplicity), 0 for theta_k = 0; a channel's is the fraction through the entries of an output
/// channel of a parameter layer (sum of F(v) G(v): its weights' and bias's parameter shares when
/// no parameter is shared between layers), a layer's the sum of its channels' (each path crosses
/// a layer at most once, so the layers of a cut every path crosses sum to 1), both from one
/// forward and one backward pass of the layer DP (no per-parameter sums); a node's is
/// F(v) G(v) / ||Phi||_s^s on the DAG (a layer graph's nodes: on its unrolled DAG, within
/// options.max_memory). Channels and layers are those of a layer graph (a DAG has none:
/// std::invalid_argument). Throws what path_norm_gradient throws (by parameter: s < 1 with a
/// zero parameter), RangeError when ||Phi||_s^s is 0 or a share is beyond double's range.
PathNormShares path_norm_shares(const Model& model, std::span<const double> theta, double s,
                                SharesBy by, const EngineOptions& options = {});

/// {"s", "by", "total", "log10_total", "shares": {name: share, ...}} in the order above.
std::string to_json(const PathNormShares& shares, int indent = -1);

}  // namespace pathlift
