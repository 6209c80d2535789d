#pragma once
/// \file gram.hpp
/// B^T B, the Gram matrix of the skeleton: entry (i, j) = number of paths through both edges i
/// and j (diagonal: the paths through i), i.e. the path kernel K at theta = 1.
/// rank(B^T B) = rank(B) over Q; its rank modulo a prime p is a certified lower bound of
/// rank(B) (certificate.hpp). Three ways to build it, named by what they return:
/// skeleton_gram_exact (64-bit counts by DP, refused beyond), skeleton_gram_mod from the network
/// (residues by DP, any size) or from an enumerated skeleton.

#include <Eigen/Core>
#include <cstdint>

#include "pathlift/mod_p.hpp"
#include "pathlift/network.hpp"
#include "pathlift/options.hpp"
#include "pathlift/sparse.hpp"
#include "pathlift/types.hpp"

namespace pathlift {

/// Dense row-major matrix of exact path counts (B^T B).
using CountMatrix = Eigen::Matrix<std::uint64_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// B^T B (d x d) as exact 64-bit counts, by a DP over the DAG without enumerating a path.
/// Throws CountOverflow naming the first entry that does not fit (counts up to 2^64 - 2 are
/// exact; nothing wraps), TooLarge when d x d entries exceed options.max_memory.
/// Complexity: O(m (m + d) + d^2) time, O(d^2) memory.
CountMatrix skeleton_gram_exact(const Network& net, const EngineOptions& options = {});

/// B^T B modulo `prime` (residues in [0, prime)) by the same DP, every count reduced mod p as
/// it is built: the skeleton of a network with 10^30 paths is fine.
/// Throws std::invalid_argument unless `prime` is a prime below 2^63, TooLarge when d x d
/// residues exceed options.max_memory.
/// Complexity: O(m (m + d) + d^2) time, O(d^2) memory.
ModMatrix skeleton_gram_mod(const Network& net, std::uint64_t prime = default_prime,
                            const EngineOptions& options = {});

/// B^T B modulo `prime` from an enumerated skeleton (one row per path).
/// Throws std::invalid_argument unless `prime` is a prime below 2^63, TooLarge when d x d
/// residues exceed options.max_memory.
/// Complexity: O(sum over paths of len^2 + d^2).
ModMatrix skeleton_gram_mod(const CsrPattern& b, std::uint64_t prime = default_prime,
                            const EngineOptions& options = {});

}  // namespace pathlift
