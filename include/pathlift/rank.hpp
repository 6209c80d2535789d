#pragma once
/// \file rank.hpp
/// Ranks of the skeleton B and of the Jacobian dPhi (paper: Theorem 1, Corollaries 1-2):
/// rank(B) = #E - #H = d - h, and rank(dPhi) = rank(B) for almost every theta.
///
/// - The exact rank of B is *certified*: a lower bound from Gaussian elimination modulo a
///   prime (a rank mod p never exceeds the rank over Q) and an upper bound from an explicit
///   kernel, the h rescaling vectors z_v (+1 on the edges into hidden node v, -1 on the edges
///   out of it), each checked to satisfy B z_v = 0 and checked independent. When the bounds
///   meet, rank(B) is proved.
/// - The numerical rank of dPhi at theta comes from its singular values, with the tolerance
///   used, the gap at the cut and a status that says "inconclusive" when the gap is small.
/// - check_rank_theorem() puts both together and compares them with d - h.
///
/// The modular elimination is also available for any sparse integer matrix (modular_rank()),
/// and for a dense matrix of residues (ModMatrix, e.g. B^T B built without enumerating paths).

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pathlift/modular.hpp"
#include "pathlift/network.hpp"
#include "pathlift/paths.hpp"
#include "pathlift/sparse.hpp"
#include "pathlift/types.hpp"

namespace pathlift {

// ---------------------------------------------------------------------------------------------
// Sparse integer matrices and exact modular rank
// ---------------------------------------------------------------------------------------------

/// One stored entry of a SparseIntMatrix row.
struct IntEntry {
  EdgeId col = 0;
  std::int64_t value = 0;
  bool operator==(const IntEntry&) const = default;
};

/// A sparse integer matrix stored by rows: each row lists its non-zero entries by increasing
/// column. Small and mutable (row and column operations of the proof, tests that corrupt an
/// entry); not meant for the path engine's large matrices (use CsrPattern there).
struct SparseIntMatrix {
  Index cols = 0;
  std::vector<std::vector<IntEntry>> row_entries;

  SparseIntMatrix() = default;
  SparseIntMatrix(Index num_rows, Index num_cols);

  [[nodiscard]] Index rows() const { return static_cast<Index>(row_entries.size()); }
  [[nodiscard]] Index nnz() const;
  /// Entry (r, c); 0 when not stored. Throws std::out_of_range outside the matrix.
  [[nodiscard]] std::int64_t at(Index r, Index c) const;
  /// Sets entry (r, c) (a zero removes it). Throws std::out_of_range outside the matrix.
  void set(Index r, Index c, std::int64_t value);
  /// The 0/1 matrix of a pattern (B as integers). Complexity: O(nnz).
  static SparseIntMatrix from_pattern(const CsrPattern& pattern);

  bool operator==(const SparseIntMatrix&) const = default;
};

/// Whether n is prime (deterministic Miller-Rabin, exact for every 64-bit n).
bool is_prime(std::uint64_t n);

/// Options of modular_rank().
struct ModularRankOptions {
  /// A prime < 2^63 (default 2^61 - 1). Throws std::invalid_argument otherwise.
  std::uint64_t prime = default_prime;
  /// The pivot order: column_order[i] is the column tried i-th (a permutation of 0..cols-1);
  /// empty = 0, 1, 2, ... A good order makes elimination fill-free (see rank_column_order()).
  std::vector<EdgeId> column_order;
  /// Stop as soon as the rank reaches this value (a known upper bound); -1 = never.
  Index stop_at = -1;
};

/// rank of an integer matrix modulo a prime, by sparse Gaussian elimination: first every row
/// whose leading column (in column_order) is new becomes a pivot with no arithmetic at all
/// (rows with distinct leading columns are independent), then the remaining rows are reduced
/// against the pivots (mod p, sparse rows, dense accumulator) until they vanish or become
/// pivots. rank mod p <= rank over Q, so the result is a certified lower bound of the rank.
/// Complexity: O(nnz) when the first phase finds stop_at pivots; otherwise up to
/// O(rows * rank * cols) modular operations.
Index modular_rank(const SparseIntMatrix& m, const ModularRankOptions& options = {});

/// The same for a 0/1 pattern (B), without converting it.
Index modular_rank(const CsrPattern& pattern, const ModularRankOptions& options = {});

/// rank of a dense matrix of residues modulo its own prime m.prime (any prime < 2^63), by
/// dense Gaussian elimination (OpenMP-parallel row updates, `threads` 0 = all cores).
/// Throws std::invalid_argument for a prime that is not a prime < 2^63 or a wrong data size.
/// Complexity: O(rows * cols * rank) modular operations.
Index modular_rank(const ModMatrix& m, int threads = 0);

/// B^T B modulo `prime` (d x d, dense): entry (i, j) = number of paths through edges i and j,
/// from an enumerated skeleton. Refuses (TooLarge) when d x d residues exceed `max_memory`
/// (0 = default limit). Complexity: O(sum over paths of len^2 + d^2).
ModMatrix skeleton_gram(const CsrPattern& b, std::uint64_t prime = default_prime,
                        std::size_t max_memory = 0);

// ---------------------------------------------------------------------------------------------
// The certified rank of B
// ---------------------------------------------------------------------------------------------

/// The rescaling vector z_v of a hidden node v (paper: the rescaling invariance behind
/// Theorem 1): +1 on every edge into v, -1 on every edge out of v, 0 elsewhere (d entries).
/// B z_v = 0 because a path through v uses exactly one edge into v and one edge out of it.
/// Throws std::invalid_argument when v is not a hidden node. Complexity: O(d).
std::vector<int> rescaling_vector(const Network& net, NodeId v);

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

/// Which matrix the lower bound eliminates.
enum class RankMethod : std::uint8_t {
  automatic,  ///< B when paths are enumerated (O(nnz) with rank_column_order()), else B^T B
  skeleton,   ///< B itself, sparse elimination with the pivot order of rank_column_order()
  gram        ///< B^T B mod p, dense elimination (d x d)
};

/// "automatic", "skeleton" or "gram".
std::string_view to_string(RankMethod method);

/// A certified rank: lower <= rank over Q <= upper, proved when they meet.
struct RankCertificate {
  Index d = 0;         ///< columns (edges)
  Index h = 0;         ///< hidden nodes
  Index expected = 0;  ///< d - h (Theorem 1)
  /// rank mod `prime` of the eliminated matrix (B, a subset of its rows, or B^T B): a lower
  /// bound of rank(B) over Q.
  Index lower = 0;
  /// d minus the number of rescaling vectors verified in the kernel (B z_v = 0, or
  /// B^T B z_v = 0 mod p for a Gram certificate) and checked independent: an upper bound.
  Index upper = 0;
  std::uint64_t prime = default_prime;
  RankMethod method = RankMethod::skeleton;  ///< the matrix actually eliminated
  /// Rows of B eliminated (the lower bound needs only a subset of them), or d for B^T B.
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
  EngineOptions engine;                 ///< threads and memory limit
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
RankCertificate certify_rank_from_gram(const Network& net, const ModMatrix& gram, int threads = 0);

// ---------------------------------------------------------------------------------------------
// The numerical rank of dPhi
// ---------------------------------------------------------------------------------------------

enum class NumericalRankMethod : std::uint8_t {
  automatic,        ///< svd when P x d is small, else gram_eigenvalues
  svd,              ///< dense SVD of dPhi (Eigen BDCSVD, singular values only)
  gram_eigenvalues  ///< eigenvalues of dPhi^T dPhi (d x d), sigma = sqrt(lambda)
};

enum class NumericalRankStatus : std::uint8_t {
  conclusive,    ///< gap >= min_gap: the cut is clear
  inconclusive,  ///< gap < min_gap: the rank depends on where the tolerance is put
};

std::string_view to_string(NumericalRankMethod method);
std::string_view to_string(NumericalRankStatus status);

struct NumericalRankOptions {
  NumericalRankMethod method = NumericalRankMethod::automatic;
  /// Absolute tolerance on the singular values; <= 0 = the default: for svd
  /// max(P, d) * eps * sigma_max (numpy's matrix_rank); for gram_eigenvalues
  /// 10 sqrt(d * eps) * sigma_max, i.e. 100 d eps lambda_max on the eigenvalues of
  /// dPhi^T dPhi, whose computed zero eigenvalues come out at about eps * lambda_max.
  double tolerance = 0;
  /// The status is inconclusive when the gap (see NumericalRank::gap) is below this.
  double min_gap = 1e3;
  /// automatic uses svd when P * d <= this many entries (the SVD of a tall dPhi goes through
  /// its QR factor R), else gram_eigenvalues.
  Index svd_max_entries = Index{1} << 18;
  std::size_t max_memory = 0;  ///< refuse dense work beyond this (0 = default limit)
};

/// The numerical rank of a matrix (dPhi) from its singular values.
struct NumericalRank {
  Index rank = 0;
  double tolerance = 0;  ///< singular values > tolerance are kept
  /// sigma_rank / sigma_{rank+1}: the last kept singular value over the first dropped one; when
  /// none is dropped (rank = min(P, d)) or the first dropped one is exactly 0, the last kept one
  /// over the tolerance. +inf for the zero matrix (rank 0 exactly); 0 when every singular
  /// value is dropped but some is non-zero (a tolerance above sigma_max).
  double gap = 0;
  NumericalRankStatus status = NumericalRankStatus::conclusive;
  NumericalRankMethod method = NumericalRankMethod::svd;  ///< the method used
  std::vector<double> singular_values;                    ///< descending, min(P, d) of them
};

/// Numerical rank of `j` (P x d): singular values by dense SVD (small) or as square roots of
/// the eigenvalues of j^T j (d x d, built from the sparse rows), the tolerance, the gap and the
/// status. Throws TooLarge when the dense matrix needed exceeds the memory limit.
/// Complexity: svd O(P d min(P, d)); gram_eigenvalues O(sum len^2 + d^3).
NumericalRank numerical_rank(const CsrMatrix<double>& j, const NumericalRankOptions& options = {});

// ---------------------------------------------------------------------------------------------
// The theorem check
// ---------------------------------------------------------------------------------------------

/// What check_rank_theorem() concluded.
enum class RankStatus : std::uint8_t {
  verified,             ///< rank(B) = d - h certified and rank(dPhi) = d - h (conclusive)
  theta_in_null_set,    ///< rank(B) = d - h, rank(dPhi) < d - h, theta has a zero coordinate
  rank_J_inconclusive,  ///< rank(B) = d - h; the singular values of dPhi have no clear gap
  rank_J_not_computed,  ///< rank(B) = d - h; dPhi was not computed (paths not enumerated)
  rank_B_uncertified,   ///< the bounds on rank(B) do not meet (e.g. an unlucky prime)
  theorem_fails         ///< certified rank(B) != d - h, or rank(dPhi) != d - h at nonzero theta
};

/// "verified", "theta_in_null_set", "rank_J_inconclusive", "rank_J_not_computed",
/// "rank_B_uncertified", "theorem_fails".
std::string_view to_string(RankStatus status);

/// True for the statuses that contradict the theorem's equalities (the CLI exits 1):
/// rank_B_uncertified and theorem_fails.
bool is_failure(RankStatus status);

struct RankReport {
  Index d = 0;
  Index h = 0;
  Index expected = 0;  ///< d - h
  RankCertificate rank_B;
  std::optional<NumericalRank> rank_J;  ///< absent when dPhi was not computed
  std::vector<EdgeId> zero_weights;     ///< edges k with theta_k = 0
  RankStatus status = RankStatus::verified;
  std::string explanation;  ///< one sentence saying why `status`
};

/// Combines a rank certificate and (optionally) a numerical rank into the theorem's verdict.
RankReport rank_report(const Network& net, const RankCertificate& rank_b,
                       const std::optional<NumericalRank>& rank_j, std::span<const double> theta);

/// How check_rank_theorem() gets at B.
enum class RankRoute : std::uint8_t {
  /// Enumerate the paths: certify rank(B) from B, compute dPhi and its numerical rank.
  /// Throws TooLarge when B does not fit in options.engine.max_memory.
  enumerate,
  /// Certify rank(B) from B^T B mod p built by dynamic programming (skeleton_gram_mod): no
  /// path is enumerated, rank(dPhi) is not computed (status rank_J_not_computed at best).
  path_free,
  /// enumerate when B and dPhi fit in options.engine.max_memory (judged from the DP counts,
  /// before anything is enumerated), else path_free; the explanation says which and why.
  automatic
};

/// The theorem check at theta: certifies rank(B) (by `route`), computes dPhi and its numerical
/// rank when the paths are enumerated, and concludes (see RankStatus). When dPhi or its
/// numerical rank would exceed the memory limit, rank_J is absent and the explanation quotes
/// the sizes. theta is not read on the path-free route (it may be empty there).
/// Complexity: that of certify_rank() plus numerical_rank(), or certify_rank_from_gram() plus
/// skeleton_gram_mod() on the path-free route.
RankReport check_rank_theorem(const Network& net, std::span<const double> theta,
                              const RankOptions& options = {},
                              const NumericalRankOptions& numerical = {},
                              RankRoute route = RankRoute::enumerate);

}  // namespace pathlift
