#pragma once
/// \file certificate.hpp
/// Certified ranks (paper: Theorem 1, Corollary 2): rank(B) = d - h, and rank(dPhi(theta))
/// exactly at a given theta. A certificate is a lower and an upper bound that meet; no
/// probability and no floating point is involved.
///
/// - Upper bound of rank(B): an explicit kernel, the h rescaling vectors z_v (+1 on the edges
///   into hidden node v, -1 on the edges out of it), checked independent.
/// - Lower bound of rank(B): rows of B with distinct leading columns (a triangular path basis,
///   O(m + d), no path enumerated), or Gaussian elimination modulo a prime of B or of B^T B
///   (a rank mod p never exceeds the rank over Q).
/// - rank(dPhi(theta)): with no zero theta_k, dPhi = diag(Phi) B diag(1/theta) with both
///   diagonals invertible, so rank(dPhi) = rank(B); with zero weights, elimination modulo p of
///   the exact values of dPhi (products of doubles are dyadic rationals) gives the lower bound,
///   and rank(dPhi(theta)) <= max over theta = rank(B) the upper bound.

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "pathlift/gram.hpp"
#include "pathlift/model.hpp"
#include "pathlift/modular.hpp"
#include "pathlift/network.hpp"
#include "pathlift/paths.hpp"
#include "pathlift/rescaling.hpp"
#include "pathlift/sparse.hpp"
#include "pathlift/types.hpp"

namespace pathlift {

/// The anchor edge of each hidden node (its out-edge of smallest index), in net.hidden()
/// order. The anchors index an h x h triangular block of the z_v (so the z_v are independent)
/// and are the columns left out of the pivot order of rank_column_order().
std::vector<EdgeId> rank_anchor_edges(const Network& net);

/// A fill-free pivot order for the skeleton: the non-anchor edges by decreasing topological
/// position of their target (ties: increasing index), then the h anchor edges. For every
/// non-anchor edge e = (x -> y) the path (a path from an input to x) + e + (anchors from y to
/// an output) has e as its leading column, so d - h rows of B with distinct leading columns
/// exist and modular_rank() finds them in one pass. Complexity: O(m + d log d).
std::vector<EdgeId> rank_column_order(const Network& net);

/// Which matrix the lower bound of rank(B) comes from.
enum class RankMethod : std::uint8_t {
  automatic,   ///< B when paths are enumerated, else the path basis
  skeleton,    ///< B itself, sparse elimination with the pivot order of rank_column_order()
  gram,        ///< B^T B mod p, dense elimination (d x d, FLINT)
  path_basis,  ///< d - h paths whose rows of B have distinct leading columns (no enumeration)
  /// rank(B) = d - h_sym by the symmetry theorem (ker B is exactly the space of rescaling
  /// changes, docs/rank.md#weight-sharing) with h_sym computed exactly: no path, no prime
  symmetry
};

/// "automatic", "skeleton", "gram", "path_basis" or "symmetry".
std::string_view to_string(RankMethod method);
/// The method named `name`: a to_string name, or "auto", "path-basis". Throws
/// std::invalid_argument naming `name` and listing the valid names otherwise.
RankMethod parse_rank_method(std::string_view name);

/// A certified rank: lower <= rank over Q <= upper, proved when they meet.
struct RankCertificate {
  Index d = 0;         ///< columns (edges)
  Index h = 0;         ///< hidden nodes
  Index expected = 0;  ///< d - h (Theorem 1)
  /// A lower bound of rank(B) over Q: the rank mod `prime` of the eliminated matrix (B, a
  /// subset of its rows, or B^T B), or the number of path-basis rows with distinct leading
  /// columns.
  Index lower = 0;
  /// d minus the number of rescaling vectors verified in the kernel (B z_v = 0, or
  /// B^T B z_v = 0 mod p for a Gram certificate) and checked independent: an upper bound.
  Index upper = 0;
  std::uint64_t prime = default_prime;
  RankMethod method = RankMethod::skeleton;  ///< the matrix actually eliminated
  /// Rows of B eliminated (the lower bound needs only a subset of them), d for B^T B, or the
  /// path-basis rows.
  Index rows_eliminated = 0;
  /// Hidden nodes whose z_v failed the kernel check (empty for a true skeleton), and the first
  /// row (path index, or Gram row) that showed it.
  std::vector<NodeId> kernel_failures;
  Index kernel_failure_row = -1;

  /// True when the bounds meet: rank(B) is then exactly lower == upper.
  [[nodiscard]] bool certified() const { return lower == upper; }
  /// The rank when certified.
  [[nodiscard]] std::optional<Index> rank() const {
    return certified() ? std::optional<Index>(lower) : std::nullopt;
  }
};

/// Options of the rank certificates.
struct RankOptions {
  RankMethod method = RankMethod::automatic;
  std::uint64_t prime = default_prime;  ///< a prime < 2^63
  EngineOptions engine;                 ///< threads, memory limit, the phases' progress
};

/// Certifies rank(B) of an enumerated skeleton `b` of `net` (P x d): upper bound from the z_v
/// (B z_v = 0 checked on every row, independence from the anchor block), lower bound from
/// modular_rank() of B with the pivot order of rank_column_order() stopped at the upper bound,
/// or of B^T B (method gram). Throws std::invalid_argument when b has not d columns.
/// Complexity: O(nnz(B)) for the skeleton method on a true skeleton; O(sum len^2 + d^3) gram.
///
/// Example:
/// \code
///   auto net = pathlift::builtin_network("ff:5,16,16,2");
///   auto cert = pathlift::certify_rank(net, pathlift::skeleton(net));
///   // cert.certified() && *cert.rank() == 402 - 32
/// \endcode
RankCertificate certify_rank(const Network& net, const CsrPattern& b,
                             const RankOptions& options = {});

/// The same, enumerating the paths first (TooLarge when B does not fit in memory).
RankCertificate certify_rank(const Network& net, const RankOptions& options = {});

/// Certifies rank(B) from its Gram matrix B^T B modulo gram.prime (any prime < 2^63), built
/// by any means (e.g. by dynamic programming, without enumerating a path): lower bound
/// rank(B^T B mod p) (rank(B^T B) = rank(B) over Q), upper bound d - #{v : (B^T B) z_v = 0
/// mod p} (each z_v is in ker B by construction; the check on the Gram side guards against a
/// wrong Gram matrix). Throws std::invalid_argument for a Gram matrix that is not d x d or a
/// prime that is not a prime < 2^63. Complexity: O(d^2 h + d^3).
RankCertificate certify_rank_from_gram(const Network& net, const ModMatrix& gram);

/// One path of the triangular path basis: for the non-anchor edge `edge` = (x -> y), the path
/// made of the first-in-edge chain from an input to x, the edge, and the anchor chain from y
/// to an output.
std::vector<EdgeId> path_basis_path(const Network& net, EdgeId edge);

/// Certifies rank(B) without enumerating a path and without any elimination: for every
/// non-anchor edge e = (x -> y), the path P_e = (first in-edges back from x to an input) + e +
/// (anchors from y to an output) is a row of B. Its leading column in the order of
/// rank_column_order() is computed and the d - h leading columns are checked distinct, so
/// these rows form a unit-triangular (d - h) x (d - h) submatrix of B: rank(B) >= d - h over
/// every field. Each P_e is checked to be an input-to-output path of `net`, by one dynamic
/// programme over the nodes (the chains and their smallest pivot positions), so the whole check
/// is O(m + d) although the paths have length up to the depth. The upper bound d - h is the
/// z_v's, whose independence is checked (the z_v are in ker B because every row of B is an
/// input-to-output path). Method path_basis; `prime` is unused.
/// Complexity: O(m + d log d) time, O(m + d) memory.
///
/// Example:
/// \code
///   auto net = pathlift::builtin_network("ff:784,2048,2048,2048,10");   // d = 10.4 M
///   auto cert = pathlift::certify_rank_by_path_basis(net);              // about a second
/// \endcode
RankCertificate certify_rank_by_path_basis(const Network& net, const RankOptions& options = {});

/// Certifies rank(B) = d - h_sym without a path: h_sym computed exactly
/// (rescaling_symmetry_dimension: on a DAG by its edges, on a layer graph per entry and per
/// channel, never unrolled), and the theorem of docs/rank.md#weight-sharing: c is in ker B
/// exactly when c is a rescaling change, so rank(B) = d - h_sym over Q (lower = upper, prime
/// 0, method symmetry). h is reported as the unrolled network's hidden nodes
/// (unrolled_hidden_nodes() on a layer graph). Throws what rescaling_symmetry_dimension throws.
/// Complexity: that of rescaling_symmetry_dimension.
RankCertificate certify_rank_by_symmetry(const Model& model, const RankOptions& options = {});
RankCertificate certify_rank_by_symmetry(const Network& net, const RankOptions& options = {});

/// How the exact rank of dPhi(theta) was bounded.
enum class JacobianRankMethod : std::uint8_t {
  none,         ///< no lower bound beyond 0 (zero weights and no enumerated skeleton)
  identity,     ///< no zero theta_k: rank(dPhi) = rank(B) (diagonal identity)
  elimination,  ///< Gaussian elimination modulo p of the exact entries of dPhi(theta)
  /// zero weights: the rank of B without the zero edges plus the zero parameters some path
  /// crosses alone (jacobian_rank_by_zero_pattern, symmetry.hpp): exact, no path enumerated
  zero_pattern,
};

/// "none", "identity", "elimination" or "zero_pattern".
std::string_view to_string(JacobianRankMethod method);
/// The method named `name` (a to_string name); std::invalid_argument otherwise.
JacobianRankMethod parse_jacobian_rank_method(std::string_view name);

/// Certified bounds on rank(dPhi(theta)) over Q: lower <= rank <= upper.
struct JacobianRankCertificate {
  Index lower = 0;
  Index upper = 0;
  JacobianRankMethod method = JacobianRankMethod::none;
  std::uint64_t prime = default_prime;  ///< the prime of the elimination
  Index zero_weights = 0;               ///< theta_k equal to 0

  [[nodiscard]] bool certified() const { return lower == upper; }
  [[nodiscard]] std::optional<Index> rank() const {
    return certified() ? std::optional<Index>(lower) : std::nullopt;
  }
};

/// Certified bounds on rank(dPhi(theta)), from a certificate of rank(B) and (with zero weights)
/// the enumerated skeleton `b` (rows in the order of the paths, nullptr when not enumerated).
/// The bounds meet (rank certified) whenever rank(dPhi(theta)) = rank(B); a rank below it at a
/// theta with zero weights is bounded, not certified (the upper bound is rank(B)).
/// - upper = rank_b.upper: rank(dPhi(theta)) <= max over theta of rank(dPhi) = rank(B) (the
///   set where rank(dPhi) >= r is open, so the maximum is taken at some theta with no zero
///   coordinate, where the diagonal identity holds).
/// - No zero theta_k: lower = rank_b.lower (rank(dPhi) = rank(B), both diagonals of
///   diag(Phi) B diag(1/theta) being invertible). Method identity.
/// - Zero weights and `b` given: lower = rank modulo options.prime (odd) of the exact entries
///   dPhi_{p,k} = prod over the other edges of p of theta_e, each a dyadic rational reduced by
///   dyadic_residue(); sparse elimination in the order of rank_column_order() stopped at upper.
///   Method elimination. With p = 2 (not odd) the lower bound is not computed (method none).
/// - Zero weights and no `b` (or shared parameters): lower = upper = the exact rank of
///   jacobian_rank_by_zero_pattern(), method zero_pattern.
/// Throws std::invalid_argument when theta has not d finite entries or b has not d columns.
/// Complexity: O(d) for the identity; O(nnz(B)) plus the elimination otherwise.
JacobianRankCertificate certify_jacobian_rank(const Network& net, std::span<const double> theta,
                                              const RankCertificate& rank_b,
                                              const CsrPattern* b = nullptr,
                                              const RankOptions& options = {});

}  // namespace pathlift
