#pragma once
// Ranks of a network whose parameters are distinct from its edges (docs/rank.md#weight-sharing):
// the certificate of rank(B) against d - h_sym and the report. certificate.cpp and rank.cpp
// hand such networks here.

#include <optional>
#include <span>
#include <string>

#include "pathlift/counting.hpp"
#include "pathlift/numerical_rank.hpp"
#include "pathlift/rank.hpp"
#include "pathlift/symmetry.hpp"

namespace pathlift::detail {

/// lower = rank of B mod p (B with one column per parameter), upper = d - h_sym (B c = 0 for
/// every rescaling change c). When they differ and d is small enough for exact integer
/// linear algebra (FLINT), rank(B^T B) over Q decides: lower = upper = rank(B).
RankCertificate certify_shared_rank(const Network& net, const CsrPattern& b,
                                    const RankOptions& options);

/// rank(dPhi) = rank(B) when no theta_k and no fixed weight is 0 (identity); else the exact rank
/// by the zero pattern.
JacobianRankCertificate certify_shared_jacobian_rank(const Network& net,
                                                     std::span<const double> theta,
                                                     const RankCertificate& rank_b,
                                                     const RankOptions& options);

/// rank(dPhi(theta)) exactly by jacobian_rank_by_zero_pattern (method zero_pattern); upper is
/// rank_b.upper, which the exact rank never exceeds (std::logic_error if it did).
JacobianRankCertificate jacobian_rank_from_zero_pattern(const Network& net,
                                                        std::span<const double> theta,
                                                        const RankCertificate& rank_b,
                                                        const RankOptions& options);

/// The certificate of an exact rank by the zero pattern (method zero_pattern, lower = upper);
/// std::logic_error when it exceeds the certified rank(B).
JacobianRankCertificate zero_pattern_certificate(const ZeroPatternRank& z,
                                                 const RankCertificate& rank_b);

/// Whether enumerating the paths adds to the symmetry certificate of a network with shared
/// parameters (a layer graph, an unrolled CNN): only the numerical rank of dPhi needs the paths,
/// so they are enumerated when it would run (numerical.when always, or automatic with its work
/// within numerical.automatic_max_flops). Else `why` says so, and the route is path-free.
bool enumeration_adds(const Count& paths, const Count& nnz, Index d,
                      const NumericalRankOptions& numerical, std::string& why);

/// Whether the enumerated route can build the skeleton B of a network with shared parameters:
/// no parameter carried twice by one path (params_maybe_repeated's depth test, then, for the
/// parameters it leaves in doubt, a search from the targets of their edges, within a budget).
/// Else `why` names the parameter (a layer applied twice), and the route is path-free, where
/// the symmetry theorem certifies rank(B) without B.
bool skeleton_possible(const Network& net, std::string& why);

/// How rank(dPhi) was certified, for explanations: "no theta_k is 0, so dPhi = ...".
std::string jacobian_how(const JacobianRankCertificate& cert);

/// The subject of a report: d, the hidden nodes, whether one parameter per edge.
struct RankSubject {
  Index d = 0;
  Index h = 0;
  bool one_parameter_per_edge = true;
};

/// The fields every report starts from (rank.cpp): d, h, h_sym = rank_b.h, expected = d -
/// h_sym, the certificates, the zero coordinates of theta.
RankReport rank_report_head(const RankSubject& net, const RankCertificate& rank_b,
                            const std::optional<JacobianRankCertificate>& rank_j_exact,
                            const std::optional<NumericalRank>& rank_j,
                            std::span<const double> theta);

/// Sets the status and its explanation; returns the report.
RankReport concluded(RankReport& rep, RankStatus status, std::string why);

/// The report: verified when the certified ranks equal d - h_sym; theta_in_null_set when
/// rank(dPhi) is below at a theta with zero weights (never verified then); below_symmetry_bound
/// when rank(B) is lower (a finding, not an error).
RankReport shared_rank_report(const RankSubject& net, const RankCertificate& rank_b,
                              const std::optional<JacobianRankCertificate>& rank_j_exact,
                              const std::optional<NumericalRank>& rank_j,
                              std::span<const double> theta);

}  // namespace pathlift::detail
