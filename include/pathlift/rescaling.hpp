#pragma once
/// Rescaling symmetries and path magnitudes (docs/conventions.md#rescaling).
///
/// A ReLU is positively homogeneous, so multiplying the weights into a hidden node v by
/// lambda_v > 0 and the weights out of it by 1 / lambda_v changes no path product and no
/// output. With one parameter per edge, these rescalings form the h-dimensional symmetry group
/// behind Theorem 1: in log coordinates, the columns z_v of the d x h rescaling matrix span
/// the kernel directions B z_v = 0.

#include <span>
#include <vector>

#include "pathlift/network.hpp"
#include "pathlift/options.hpp"
#include "pathlift/sparse.hpp"
#include "pathlift/types.hpp"

namespace pathlift {

/// The rescaling vector z_v of a hidden node v: +1 on every edge into v, -1 on every edge out
/// of v, 0 elsewhere (d entries). B z_v = 0 because a path through v uses exactly one edge
/// into v and one edge out of it. Only for one parameter per edge (NetworkError otherwise:
/// shared parameters have the symmetries of rescaling_symmetry_dimension). Throws
/// std::invalid_argument when v is not a hidden node. Complexity: O(d).
std::vector<int> rescaling_vector(const Network& net, NodeId v);

/// The d x h rescaling matrix Z, whose column j is rescaling_vector(net, net.hidden()[j]):
/// row k (edge u -> v) has +1 in v's column when v is hidden and -1 in u's column when u is
/// hidden (entries stored as doubles, columns increasing). B Z = 0, and with h hidden nodes
/// rank Z = h. d log(theta) = Z d log(lambda) is the tangent of the rescaling orbit. Only for
/// one parameter per edge (NetworkError otherwise). Complexity: O(d) time and memory.
CsrMatrix<double> rescaling_matrix(const Network& net);

/// theta rescaled by lambdas (one per hidden node, in net.hidden() order, each finite and
/// > 0): the parameter of edge u -> v is multiplied by lambda_v / lambda_u, where lambda is 1
/// on inputs and outputs. Phi(rescale(theta)) = Phi(theta) and the network computes the same
/// function. With shared parameters, every edge of a parameter must get the same factor and
/// every fixed edge (pooling, skip) the factor 1 (to a relative 1e-12), else
/// std::invalid_argument names the parameter or the edge and the two factors: such lambdas
/// are not a symmetry of the network. Also std::invalid_argument for a bad theta or a
/// lambdas of the wrong length or with an entry that is not finite and > 0 (named).
/// Complexity: O(edges).
std::vector<double> rescale(const Network& net, std::span<const double> theta,
                            std::span<const double> lambdas);

}  // namespace pathlift
