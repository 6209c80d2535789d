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

/// A node of a path on a layer graph: entry `entry` (row-major) of layer `layer`'s output, or,
/// with `bias`, the bias of channel `entry` of layer `layer` (a path's start). Views (flatten,
/// concat, picks by index, identity activations) have no entries of their own: a path crosses their
/// operands' entries.
struct PathEntry {
  Index layer = 0;
  Index entry = 0;
  bool bias = false;
  friend bool operator==(const PathEntry&, const PathEntry&) = default;
};

/// One input-to-output path of a network and its coordinate Phi_p.
struct WeightedPath {
  std::vector<NodeId> nodes;  ///< on a DAG: its nodes, the input (or bias) first, the output last
  std::vector<EdgeId> edges;  ///< on a DAG: its edges in walk order (nodes.size() - 1 of them)
  /// On a layer graph: the entries it crosses, the input entry (or a bias) first, the output
  /// entry last (nodes and edges are then empty).
  std::vector<PathEntry> entries;
  std::vector<Index> params;    ///< per step: the parameter it carries, or -1 (a fixed weight)
  std::vector<double> weights;  ///< per step: its weight (theta[param], or the fixed weight)
  ScaledReal magnitude;         ///< |Phi_p|, beyond double's range
  int sign = 1;                 ///< the sign of Phi_p: +1, -1, or 0 when Phi_p = 0
  [[nodiscard]] double value() const;      ///< Phi_p as a double (+-inf beyond its range)
  [[nodiscard]] double log10_abs() const;  ///< log10 |Phi_p| (-inf for 0)
};

/// The k paths of largest |Phi_p| (the same for every s > 0; s = 0: every path weighs 1) in
/// decreasing order, ties in the canonical path order (values within 2^-40 relative of each
/// other count as tied), fewer when the network has fewer paths. Paths of weight 0 come last,
/// only when fewer than k paths weigh more.
/// - A DAG: a search from the inputs with the exact largest suffix of each node (one max-plus
///   backward pass, O(m + d)); ties by start node, then edges
///   (docs/conventions.md#canonical-order).
/// - A layer graph, never unrolled: a search from the output entries backwards with the exact
///   largest prefix into each entry (one max-plus pass over the layers' entries, O(edges) time
///   but O(entries) memory); ties by output entry, then backwards by each entry's terms
///   (docs/paths.md#layer-graphs). Prefixes more than 2^1000 below the heaviest into their
///   layer count as 0 there (their paths then come after the others).
/// Then about k x length x fan-in x log(frontier). Throws std::invalid_argument for k < 0 or
/// s < 0 or NaN; TooLarge when the search's frontier (about 72 bytes per prefix on a DAG, 104 on
/// a layer graph) or the per-entry prefixes (8 bytes an entry) would exceed options.max_memory.
std::vector<WeightedPath> top_paths(const Model& model, std::span<const double> theta, Index k,
                                    double s = 1, const EngineOptions& options = {});

/// n paths drawn independently with probability |Phi_p|^s / ||Phi||_s^s (s >= 0 finite; s = 0:
/// uniform over the paths); never a path of weight 0 when s > 0. On a DAG each walk chooses its
/// start and then, at each node, to stop (at an output) or an out-edge in proportion to
/// |w_e|^s G(target) (G: the backward sums); on a layer graph (never unrolled) it chooses an
/// output entry in proportion to its forward sum F_s (the layer DP's, kept) and then, backwards,
/// a term of each entry in proportion to |w|^s F_s(source). Sample i uses its own generator
/// seeded from (seed, i): the same paths for a seed whatever the thread count. Throws
/// std::invalid_argument for n < 0 or a bad s, RangeError when every path weighs 0, TooLarge
/// when the n paths or the per-entry sums would exceed options.max_memory (their length bounded
/// by the longest path).
std::vector<WeightedPath> sample_paths(const Model& model, std::span<const double> theta, Index n,
                                       double s = 1, std::uint64_t seed = 0,
                                       const EngineOptions& options = {});

/// The paths of `model` as JSON: per path its value, sign, log10 |value|, nodes (names: a DAG's
/// node names; a layer graph's "<layer>[i,j,k]", "x[...]" for the input, "<layer>.bias[c]"),
/// edges (null on a layer graph), entries (a layer graph's: [layer name, [i, j, k]]) and
/// parameters; `param_names` (d entries, or empty: the index) names the parameters.
std::string to_json(std::span<const WeightedPath> paths, const Model& model,
                    std::span<const std::string> param_names = {}, int indent = -1);

/// The names of a model's path nodes (made once for many paths): a DAG's node names; a layer
/// graph's entries "x[0,3,4]" (the input), "conv1[12,3,4]", "conv1.bias[12]".
class PathNames {
 public:
  explicit PathNames(const Model& model);
  /// The number of nodes of path p.
  [[nodiscard]] std::size_t size(const WeightedPath& p) const;
  /// The name of node i of path p.
  [[nodiscard]] std::string node(const WeightedPath& p, std::size_t i) const;
  /// A layer graph's entry: the name of its layer ("x" for the input, "<layer>.bias" for a bias)
  /// and its index tuple in the layer's output (a bias: {channel}).
  [[nodiscard]] std::string layer(const PathEntry& e) const;
  [[nodiscard]] std::vector<Index> index(const PathEntry& e) const;
  /// The entry's name "layer[i,j,k]" from its index (index(e)).
  [[nodiscard]] std::string name(const PathEntry& e, std::span<const Index> index) const;

 private:
  const Model* m_model;
  std::vector<std::vector<Index>> m_shapes;  // a layer graph's layer_shapes
};

}  // namespace pathlift
