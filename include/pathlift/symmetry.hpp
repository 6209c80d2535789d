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

/// h_sym exactly: the equalities alpha(u) = alpha(v) that the fixed edges and the shared
/// parameters force are merged first (union-find, to a fixed point); the constraints left,
/// alpha(D_i) - alpha(S_i) = alpha(D_1) - alpha(S_1) between the edges of one parameter, are
/// ranked exactly over Q (FLINT, integers). h_sym = classes - rank + unused parameters.
/// Throws TooLarge (with the sizes) when the reduced system needs more than
/// options.max_memory or has more than 20,000 classes left.
/// Complexity: O(edges x passes) for the merging (a few passes in practice), then
/// O(classes^2 constraints) at most for the rank.
SymmetryDimension rescaling_symmetry_dimension(const Network& net,
                                               const EngineOptions& options = {});

}  // namespace pathlift
