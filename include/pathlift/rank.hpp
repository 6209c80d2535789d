#pragma once
/// \file rank.hpp
/// Theorem 1 checked on a network: rank(dPhi) = rank(B) = d - h. Puts together the certified
/// rank of B and the certified rank of dPhi(theta) (certificate.hpp), and the numerical rank of
/// dPhi (numerical_rank.hpp), into one verdict whose status never calls a floating-point
/// outcome a failure of the theorem (docs/rank.md lists the statuses).

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pathlift/certificate.hpp"
#include "pathlift/model.hpp"
#include "pathlift/modular.hpp"
#include "pathlift/network.hpp"
#include "pathlift/numerical_rank.hpp"
#include "pathlift/types.hpp"

namespace pathlift {

/// What check_rank_theorem() concluded. Only exact (certified) ranks can make it
/// theorem_fails; numerical outcomes are ill_conditioned or numerical_failure.
enum class RankStatus : std::uint8_t {
  verified,             ///< rank(B) = rank(dPhi) = d - h certified (and the numerics agree)
  theta_in_null_set,    ///< rank(B) = d - h, rank(dPhi) < d - h, theta has a zero coordinate
  rank_J_inconclusive,  ///< rank(dPhi) not certified and its singular values have no clear gap
  rank_J_not_computed,  ///< rank(B) = d - h; rank(dPhi) neither certified nor computed
  rank_B_uncertified,   ///< the bounds on rank(B) do not meet (e.g. an unlucky prime)
  theorem_fails,        ///< certified rank(B) != d - h, or certified rank(dPhi) != d - h at a
                        ///< theta without zero coordinate
  ill_conditioned,      ///< exact ranks agree with the theorem; the numerical rank of dPhi
                        ///< differs from the exact one, or has no clear gap (floating point)
  numerical_failure,    ///< exact ranks agree with the theorem; the singular values are not
                        ///< finite, or the numerical rank exceeds the certified rank(B)
  below_symmetry_bound  ///< shared parameters: certified rank(B) < d - h_sym (a finding,
                        ///< not a failure: Theorem 1 is about one parameter per edge)
};

/// "verified", "theta_in_null_set", "rank_J_inconclusive", "rank_J_not_computed",
/// "rank_B_uncertified", "theorem_fails", "ill_conditioned", "numerical_failure",
/// "below_symmetry_bound".
std::string_view to_string(RankStatus status);

/// The status named `name` (a to_string name). Throws std::invalid_argument naming `name` and
/// listing the valid names otherwise.
RankStatus parse_rank_status(std::string_view name);

/// True for the statuses that contradict or fail to establish the theorem's equalities with
/// exact arithmetic (the CLI exits 1): rank_B_uncertified and theorem_fails.
bool is_failure(RankStatus status);

struct RankReport {
  Index d = 0;
  Index h = 0;
  Index expected = 0;  ///< d - h (d - h_sym with parameters distinct from edges)
  /// The dimension of the rescaling symmetries (symmetry.hpp): h with one parameter per edge;
  /// with shared parameters or fixed edges the bound rank(B) <= d - h_sym replaces d - h.
  Index h_sym = 0;
  /// False for a network whose parameters are not one per edge (then `expected` is d - h_sym
  /// and Theorem 1 does not apply).
  bool one_parameter_per_edge = true;
  RankCertificate rank_B;
  /// Certified bounds on rank(dPhi(theta)); absent when theta was not given.
  std::optional<JacobianRankCertificate> rank_J_exact;
  std::optional<NumericalRank> rank_J;  ///< absent when dPhi's numerical rank was not computed
  std::string rank_J_note;              ///< why rank_J is absent (empty when present)
  /// True when rank_J was skipped for its estimated work (NumericalRankOptions::when automatic):
  /// asking for it explicitly computes it.
  bool rank_J_skipped = false;
  std::vector<EdgeId> zero_weights;  ///< edges k with theta_k = 0
  RankStatus status = RankStatus::verified;
  std::string explanation;  ///< one sentence saying why `status`
};

/// Combines the certificates and (optionally) a numerical rank into the theorem's verdict.
RankReport rank_report(const Network& net, const RankCertificate& rank_b,
                       const std::optional<JacobianRankCertificate>& rank_j_exact,
                       const std::optional<NumericalRank>& rank_j, std::span<const double> theta);

/// The same without an exact certificate of rank(dPhi): certify_jacobian_rank() is run from
/// rank_b alone (identity when theta has no zero, else the zero pattern's exact rank) when theta
/// has d entries, else rank(dPhi) is reported from the numerical rank only.
RankReport rank_report(const Network& net, const RankCertificate& rank_b,
                       const std::optional<NumericalRank>& rank_j, std::span<const double> theta);

/// How check_rank_theorem() gets at B.
enum class RankRoute : std::uint8_t {
  /// Enumerate the paths: certify rank(B) from B, rank(dPhi) exactly and numerically.
  /// Throws TooLarge when B does not fit in options.engine.max_memory.
  enumerate,
  /// Certify rank(B) without enumerating a path (the path basis, or B^T B mod p by dynamic
  /// programming with method gram; with shared parameters the symmetry theorem); rank(dPhi)
  /// certified by the identity when theta has no zero, else by the zero pattern, never
  /// computed numerically.
  path_free,
  /// enumerate when B and dPhi fit in options.engine.max_memory (judged from the DP counts,
  /// before anything is enumerated) and, with shared parameters, the numerical rank of dPhi
  /// would run and no parameter may be carried twice by one path (B could not hold it); else
  /// path_free. The explanation says which and why.
  automatic
};

/// The theorem check at theta: certifies rank(B) (by `route`) and rank(dPhi(theta))
/// (certify_jacobian_rank; with the paths enumerated and zero weights, a rank drop that the
/// elimination leaves bounded is certified by the zero pattern, method zero_pattern), computes
/// the numerical rank of dPhi when the paths are enumerated and numerical.when allows, and
/// concludes (see RankStatus). When dPhi or its numerical rank would exceed the memory limit or
/// the work limit, rank_J is absent and rank_J_note says why. theta may be empty on the
/// path-free route (rank(dPhi) is then not certified).
/// Complexity: that of the certificates plus numerical_rank().
RankReport check_rank_theorem(const Network& net, std::span<const double> theta,
                              const RankOptions& options = {},
                              const NumericalRankOptions& numerical = {},
                              RankRoute route = RankRoute::enumerate);

/// The theorem check on a model (model.hpp). A DAG: the function above. A layer graph: with
/// route enumerate, or automatic when B and dPhi would fit in options.engine.max_memory (P and
/// nnz(B) counted by the layer DP), on the DAG Model::unrolled() gives; otherwise without
/// unrolling: rank(B) by the symmetry theorem with h_sym computed on the layer graph
/// (certify_rank_by_symmetry), rank(dPhi) by the identity when no theta_k and no fixed weight
/// is 0, else by the zero pattern on the unrolled DAG when it fits (else not certified, and the
/// status is never verified). h is the unrolled DAG's hidden nodes, counted without unrolling.
/// The method asked for must be automatic or symmetry on that route (std::invalid_argument
/// otherwise).
RankReport check_rank_theorem(const Model& model, std::span<const double> theta,
                              const RankOptions& options, const NumericalRankOptions& numerical,
                              RankRoute route);

/// The report as one JSON object, the rank report of the CLI and of Python's pathlift.rank()
/// (docs/rank.md lists the keys), indented by `indent` spaces (-1: one line).
std::string to_json(const RankReport& report, int indent = 2);

}  // namespace pathlift
