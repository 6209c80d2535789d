#pragma once
/// \file heavy_paths.hpp
/// The paths themselves without enumerating them: the k heaviest paths (largest |Phi_p|) by a
/// best-first search whose priority is exact (the prefix product times the largest suffix
/// product from the current node, one max-plus backward pass), and paths drawn with probability
/// |Phi_p|^s / ||Phi||_s^s (one backward pass of the sums, then O(length x fan-out) a sample).
/// docs/paths.md#heavy-paths.
///
/// Example:
/// \code
///   const auto top = pathlift::top_paths(model, theta, 10);
///   for (const auto& p : top) fmt::print("{} {}\n", p.value, p.nodes.size());
/// \endcode

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "pathlift/model.hpp"
#include "pathlift/options.hpp"
#include "pathlift/scaled_real.hpp"
#include "pathlift/types.hpp"

namespace pathlift {

/// One input-to-output path of a network and its coordinate Phi_p.
struct WeightedPath {
  std::vector<NodeId> nodes;           ///< its nodes, the input (or bias) first, the output last
  std::vector<EdgeId> edges;           ///< its edges in walk order (nodes.size() - 1 of them)
  std::vector<Index> params;           ///< per edge: the parameter it carries, or -1 (a fixed edge)
  ScaledReal magnitude;                ///< |Phi_p|, beyond double's range
  int sign = 1;                        ///< the sign of Phi_p: +1, -1, or 0 when Phi_p = 0
  [[nodiscard]] double value() const;  ///< Phi_p as a double (+-inf beyond its range)
  [[nodiscard]] double log10_abs() const;  ///< log10 |Phi_p| (-inf for 0)
};

/// The k paths of largest |Phi_p| (the same for every s > 0; s = 0: every path weighs 1) in
/// decreasing order, ties in the canonical path order (docs/conventions.md#canonical-order;
/// values within 2^-40 relative of each other count as tied),
/// fewer when the network has fewer paths. Paths of weight 0 come last, only when fewer than k
/// paths weigh more. A layer graph runs on its unrolled DAG (Model::unrolled: TooLarge with its
/// sizes beyond options.max_memory). Throws std::invalid_argument for k < 0 or s < 0 or NaN;
/// TooLarge when the search's frontier (about 40 bytes per prefix) would exceed
/// options.max_memory. Complexity: O(m + d) for the backward pass, then about k x length x
/// fan-out x log(frontier).
std::vector<WeightedPath> top_paths(const Model& model, std::span<const double> theta, Index k,
                                    double s = 1, const EngineOptions& options = {});

/// n paths drawn independently with probability |Phi_p|^s / ||Phi||_s^s (s >= 0 finite; s = 0:
/// uniform over the paths), each walk choosing its start and then, at each node, to stop (at an
/// output) or an out-edge in proportion to |w_e|^s G(target) (G: the backward sums); never a
/// path of weight 0 when s > 0. Sample i uses its own generator seeded from (seed, i): the same
/// paths for a seed whatever the thread count. Throws std::invalid_argument for n < 0 or a bad
/// s, RangeError when every path weighs 0, TooLarge when the n paths would exceed
/// options.max_memory (their length bounded by the longest path). Layer graphs as top_paths.
std::vector<WeightedPath> sample_paths(const Model& model, std::span<const double> theta, Index n,
                                       double s = 1, std::uint64_t seed = 0,
                                       const EngineOptions& options = {});

/// The paths as JSON: per path its value, sign, log10 |value|, nodes (names), edges and
/// parameters; `param_names` (d entries, or empty: "theta[k]") names the parameters.
std::string to_json(std::span<const WeightedPath> paths, const Network& net,
                    std::span<const std::string> param_names = {}, int indent = -1);

}  // namespace pathlift
