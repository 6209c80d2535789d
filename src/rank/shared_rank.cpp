#include <flint/fmpz_mat.h>
#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "pathlift/error.hpp"
#include "pathlift/limits.hpp"
#include "pathlift/symmetry.hpp"
#include "src/core/detail/progress.hpp"
#include "src/rank/detail/modular_elimination.hpp"
#include "src/rank/detail/shared_rank.hpp"

namespace pathlift::detail {

namespace {

/// The largest d for which rank(B^T B) is computed exactly over Q.
constexpr Index k_exact_max_params = 2000;

/// rank(B) over Q as rank(B^T B), with FLINT's exact integer rank.
Index exact_rank(const CsrPattern& b) {
  const auto d = static_cast<std::size_t>(b.cols);
  std::vector<std::uint64_t> gram(d * d, 0);
  for (Index r = 0; r < b.rows; ++r) {
    const auto row = b.row(r);
    for (const EdgeId i : row) {
      for (const EdgeId j : row) {
        ++gram[static_cast<std::size_t>(i) * d + static_cast<std::size_t>(j)];
      }
    }
  }
  fmpz_mat_t m;
  fmpz_mat_init(m, static_cast<slong>(d), static_cast<slong>(d));
  for (std::size_t i = 0; i < d; ++i) {
    for (std::size_t j = 0; j < d; ++j) {
      fmpz_set_ui(fmpz_mat_entry(m, static_cast<slong>(i), static_cast<slong>(j)),
                  static_cast<ulong>(gram[i * d + j]));
    }
  }
  const auto rank = static_cast<Index>(fmpz_mat_rank(m));
  fmpz_mat_clear(m);
  return rank;
}

}  // namespace

RankCertificate certify_shared_rank(const Network& net, const CsrPattern& b,
                                    const RankOptions& options) {
  if (b.cols != net.num_params()) {
    throw std::invalid_argument(
        fmt::format("certify_rank: the skeleton has {} columns but the network has {} parameters",
                    b.cols, net.num_params()));
  }
  const SymmetryDimension sym = rescaling_symmetry_dimension(net, options.engine);
  RankCertificate cert;
  cert.d = net.num_params();
  cert.h = sym.h_sym;
  cert.expected = cert.d - cert.h;
  cert.upper = cert.expected;
  cert.prime = options.prime;
  if (options.method == RankMethod::gram) {
    cert.method = RankMethod::gram;
    cert.lower = modular_rank(skeleton_gram_mod(b, options.prime, options.engine));
    cert.rows_eliminated = cert.d;
  } else {
    cert.method = RankMethod::skeleton;
    const ModularRowLoader load = [&](Index r, auto& out) {
      for (const EdgeId c : b.row(r)) {
        out.emplace_back(c, 1);
      }
    };
    const auto result =
        modular_eliminate(b.rows, b.cols, load, options.prime, {}, cert.upper,
                          phase_callback(options.engine.progress, "eliminating B mod p"));
    cert.lower = result.rank;
    cert.rows_eliminated = result.rows_used;
  }
  if (cert.lower < cert.upper && cert.d <= k_exact_max_params) {
    // Below the symmetry bound mod p: the rank over Q decides whether it truly is.
    cert.method = RankMethod::gram;
    cert.prime = 0;  // exact over Q, no prime
    cert.lower = exact_rank(b);
    cert.upper = cert.lower;
  }
  return cert;
}

JacobianRankCertificate certify_shared_jacobian_rank(const Network& net,
                                                     std::span<const double> theta,
                                                     const RankCertificate& rank_b,
                                                     const RankOptions& options) {
  check_theta(net, theta);
  JacobianRankCertificate cert;
  cert.prime = options.prime;
  cert.upper = rank_b.upper;
  cert.zero_weights = static_cast<Index>(std::count(theta.begin(), theta.end(), 0.0));
  const auto fixed = net.parameter_map()->fixed_weights;
  const auto params = net.parameter_map()->edge_params;
  bool zero_fixed = false;
  for (std::size_t e = 0; e < params.size(); ++e) {
    zero_fixed = zero_fixed || (params[e] == kFixedEdge && fixed[e] == 0.0);
  }
  if (cert.zero_weights == 0 && !zero_fixed) {
    // dPhi = diag(Phi) B diag(1/theta) with Phi and theta free of zeros.
    cert.method = JacobianRankMethod::identity;
    cert.lower = rank_b.lower;
  }
  return cert;
}

RankReport shared_rank_report(const Network& net, const RankCertificate& rank_b,
                              const std::optional<JacobianRankCertificate>& rank_j_exact,
                              const std::optional<NumericalRank>& rank_j,
                              std::span<const double> theta) {
  RankReport rep = rank_report_head(net, rank_b, rank_j_exact, rank_j, theta);
  const auto set = [&rep](RankStatus s, std::string why) {
    return concluded(rep, s, std::move(why));
  };
  const std::string bound = fmt::format("d - h_sym = {} - {} = {}", rep.d, rank_b.h, rep.expected);
  if (!rank_b.certified()) {
    return set(RankStatus::rank_B_uncertified,
               fmt::format("rank(B) is only bounded: {} <= rank(B) <= {} (mod {}; d = {} is too "
                           "large for the exact rank); try another prime",
                           rank_b.lower, rank_b.upper, rank_b.prime, rep.d));
  }
  const Index rb = *rank_b.rank();
  const std::string how_b =
      rank_b.prime == 0 ? "exact over Q" : fmt::format("mod {}", rank_b.prime);
  std::string rj_text = "rank(dPhi) not certified (a theta_k or a fixed weight is 0)";
  std::optional<Index> rj;
  if (rank_j_exact && rank_j_exact->certified()) {
    rj = *rank_j_exact->rank();
    rj_text = fmt::format(
        "rank(dPhi) = {} (no theta_k and no fixed weight is 0, so dPhi = "
        "diag(Phi) B diag(1/theta) has the rank of B)",
        *rj);
  } else if (rank_j) {
    rj_text =
        fmt::format("rank(dPhi) = {} numerically ({})", rank_j->rank, to_string(rank_j->status));
  }
  if (rb < rep.expected) {
    return set(RankStatus::below_symmetry_bound,
               fmt::format("certified rank(B) = {} ({}) is below the rescaling-symmetry bound "
                           "{}: weight sharing removes {} more direction(s) than the "
                           "rescalings explain; {}",
                           rb, how_b, bound, rep.expected - rb, rj_text));
  }
  if (!rj && !rank_j) {
    return set(RankStatus::rank_J_not_computed,
               fmt::format("rank(B) = {} = {} certified ({}); {}", rb, bound, how_b, rj_text));
  }
  if (rank_j && rank_j->rank != rb && rj) {
    return set(RankStatus::ill_conditioned,
               fmt::format("rank(dPhi) = rank(B) = {} = {} certified ({}); in floating point "
                           "dPhi's numerical rank is {} ({})",
                           rb, bound, how_b, rank_j->rank, to_string(rank_j->status)));
  }
  return set(RankStatus::verified,
             fmt::format("rank(B) = {} = {} certified ({}); {}{}", rb, bound, how_b, rj_text,
                         rank_j && rj ? "; the numerical rank agrees" : ""));
}

}  // namespace pathlift::detail
