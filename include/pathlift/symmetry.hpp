#pragma once
/// \file symmetry.hpp
/// The rescaling symmetries of a network whose parameters are distinct from its edges
/// (weight sharing, fixed edges): docs/rank.md#weight-sharing.
///
/// A rescaling assigns a log-scale alpha(v) to every node, 0 on inputs and outputs, such that
/// alpha(dst) - alpha(src) is the same number c_k over all the edges that carry parameter k
/// and 0 over every fixed edge. Multiplying theta_k by exp(c_k) then leaves Phi unchanged
/// (every path from an input to an output telescopes to alpha(out) - alpha(in) = 0), so B c = 0
/// and rank(dPhi) <= rank(B) <= d - h_sym, where h_sym is the dimension of the space of such
/// changes c. With one parameter per edge every alpha is allowed and h_sym = h (Theorem 1).
/// A parameter that no edge carries is a free direction too (its column of B is 0): h_sym
/// counts it.

#include <optional>
#include <span>
#include <vector>

#include "pathlift/layers.hpp"
#include "pathlift/model.hpp"
#include "pathlift/network.hpp"
#include "pathlift/options.hpp"
#include "pathlift/types.hpp"

namespace pathlift {

/// h_sym and how it was found.
struct SymmetryDimension {
  Index h_sym = 0;            ///< dim of the changes c of theta that rescalings produce
  Index classes = 0;          ///< node classes left free after the forced equalities
  Index constraints = 0;      ///< distinct linear constraints left among the classes
  Index constraint_rank = 0;  ///< their exact rank over Q
  Index unused_params = 0;    ///< parameters no edge carries (free directions)
};

/// Where each parameter sits in the rescaling symmetries: the classes of node log-scales at the
/// two ends of its edges (rescaling_symmetry_dimension's classes after the forced equalities).
/// A rescaling by log-scales alpha (one per free class, 0 on pinned ones) changes theta_k into
/// theta_k exp(alpha[target[k]] - alpha[source[k]]) and leaves Phi, and the function, unchanged
/// when `constraints` is 0 (every free class rescales on its own).
struct ParameterClasses {
  Index classes = 0;          ///< free classes, numbered 0 .. classes - 1
  std::vector<Index> target;  ///< per parameter: the class its edges enter; -1 pinned, -2 unused
  std::vector<Index> source;  ///< per parameter: the class its edges leave; -1 pinned, -2 unused
  Index constraints = 0;      ///< constraints left among the classes (0: independent classes)
};

/// The parameter classes of a DAG, a layer graph (never unrolled) or a model. Same errors and
/// complexity as rescaling_symmetry_dimension, plus O(d) memory.
ParameterClasses parameter_classes(const Network& net, const EngineOptions& options = {});
ParameterClasses parameter_classes(const LayerGraph& graph, const EngineOptions& options = {});
ParameterClasses parameter_classes(const Model& model, const EngineOptions& options = {});

/// rank(dPhi(theta)) exactly at any theta, zeros included, without enumerating a path
/// (docs/rank.md#zero-weights).
struct ZeroPatternRank {
  Index rank = 0;                ///< rank(dPhi(theta)) over Q
  Index h_sym_nonzero = 0;       ///< h_sym of the network without its zero edges
  Index zero_params = 0;         ///< parameters with theta_k = 0
  Index single_zero_params = 0;  ///< of them, those some path crosses as its only zero edge
};

/// h_sym exactly (a DAG): the equalities alpha(u) = alpha(v) that the fixed edges and the shared
/// parameters force are merged first (union-find, to a fixed point); the constraints left,
/// alpha(D_i) - alpha(S_i) = alpha(D_1) - alpha(S_1) between the edges of one parameter, are
/// ranked exactly over Q (FLINT, integers). h_sym = classes - rank + unused parameters.
/// Throws TooLarge (with the sizes) when the reduced system needs more than
/// options.max_memory or has more than 20,000 classes left.
/// Complexity: O(edges x passes) for the merging (a few passes in practice), then
/// O(classes^2 constraints) at most for the rank.
SymmetryDimension rescaling_symmetry_dimension(const Network& net,
                                               const EngineOptions& options = {});

/// h_sym of a layer graph, equal to that of its unrolled DAG, without unrolling: the forced
/// equalities are merged per tensor entry (O(entries) memory, the unroller's plan says which
/// entries reach an output), the weight-sharing ones per channel and tap (a bias, or one tap
/// of a weight read from a channel that is one class, makes the channel's entries one class);
/// a parameter block whose channels are one class at both ends leaves no constraint, so on a
/// CNN the constraints left are those of weights shared between layers
/// (docs/rank.md#layer-graphs). Throws what unrolled_size() throws (TooLarge with the sizes
/// when the plan exceeds options.max_memory) and TooLarge as above for the rank.
/// Complexity: O(entries x window) for the merges, O(output channels x taps x positions) per
/// convolution, O(d) for the parameters.
SymmetryDimension rescaling_symmetry_dimension(const LayerGraph& graph,
                                               const EngineOptions& options = {});

/// A model's: its DAG's, or its layer graph's (never unrolled).
SymmetryDimension rescaling_symmetry_dimension(const Model& model,
                                               const EngineOptions& options = {});

/// The hidden nodes of a layer graph's unrolled DAG (Network::num_hidden()), without unrolling.
Index unrolled_hidden_nodes(const LayerGraph& graph, const EngineOptions& options = {});

/// rank(dPhi(theta)) exactly, for any theta. With Z the zero edges (theta_k = 0, or a fixed
/// weight 0): a path through two zero edges has a zero row; a path through exactly one, an edge
/// of parameter k, has a row proportional to the unit vector e_k; the other paths have the rows
/// of diag(Phi) B' diag(1/theta), B' the skeleton of the network without Z (pruned to its
/// input-to-output paths), whose rank is d - h_sym(B') (every parameter outside it a zero
/// column). The blocks have disjoint columns, so rank(dPhi) = d - h_sym' + #{zero parameters
/// k crossed by a path whose only zero edge is an edge of k}. Throws std::invalid_argument
/// for a theta without d finite entries, TooLarge as rescaling_symmetry_dimension.
/// Complexity: O(nodes + edges) and the exact rank of the constraints left.
ZeroPatternRank jacobian_rank_by_zero_pattern(const Network& net, std::span<const double> theta,
                                              const EngineOptions& options = {});

/// The same on a layer graph without unrolling, when the zeros of theta leave every entry of
/// the unroller's plan on an input-to-output path of non-zero edges: every zero is a bias (of
/// any layer with parameters: an untrained model's batch norm has b = beta - a mean = 0), a linear
/// weight (each live output and each input feature keeping a non-zero weight) or a convolution
/// weight (each output channel and each input channel keeping a non-zero weight per tap within its
/// group, every output entry live); no block is shared between layers; no fixed weight is 0; every
/// live convolution entry reads a tap. h_sym' is then the layer graph's without the zero edges, and
/// a zero parameter is crossed alone by a path exactly when it has an edge. nullopt when the zeros
/// are not of that pattern (the unrolled DAG's function answers then). Throws std::invalid_argument
/// for a theta without d entries, and what the plan throws.
std::optional<ZeroPatternRank> jacobian_rank_by_zero_pattern(const LayerGraph& graph,
                                                             std::span<const double> theta,
                                                             const EngineOptions& options = {});

}  // namespace pathlift
