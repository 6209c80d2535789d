#pragma once
// Ranks of a network whose parameters are distinct from its edges (docs/rank.md#weight-sharing):
// the certificate of rank(B) against d - h_sym and the report. certificate.cpp and rank.cpp
// hand such networks here.

#include <optional>
#include <span>
#include <string>

#include "pathlift/rank.hpp"

namespace pathlift::detail {

/// lower = rank of B mod p (B with one column per parameter), upper = d - h_sym (B c = 0 for
/// every rescaling change c). When they differ and d is small enough for exact integer
/// linear algebra (FLINT), rank(B^T B) over Q decides: lower = upper = rank(B).
RankCertificate certify_shared_rank(const Network& net, const CsrPattern& b,
                                    const RankOptions& options);

/// rank(dPhi) = rank(B) when no theta_k and no fixed weight is 0 (identity); else only the
/// upper bound rank(B).
JacobianRankCertificate certify_shared_jacobian_rank(const Network& net,
                                                     std::span<const double> theta,
                                                     const RankCertificate& rank_b,
                                                     const RankOptions& options);

/// The fields every report starts from (rank.cpp): d, h, h_sym = rank_b.h, expected = d -
/// h_sym, the certificates, the zero coordinates of theta.
RankReport rank_report_head(const Network& net, const RankCertificate& rank_b,
                            const std::optional<JacobianRankCertificate>& rank_j_exact,
                            const std::optional<NumericalRank>& rank_j,
                            std::span<const double> theta);

/// Sets the status and its explanation; returns the report.
RankReport concluded(RankReport& rep, RankStatus status, std::string why);

/// The report: verified when the certified ranks equal d - h_sym, below_symmetry_bound when
/// they are lower (a finding, not an error).
RankReport shared_rank_report(const Network& net, const RankCertificate& rank_b,
                              const std::optional<JacobianRankCertificate>& rank_j_exact,
                              const std::optional<NumericalRank>& rank_j,
                              std::span<const double> theta);

}  // namespace pathlift::detail
