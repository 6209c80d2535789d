#include <flint/fmpz_mat.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "pathlift/error.hpp"
#include "pathlift/limits.hpp"
#include "pathlift/symmetry.hpp"
#include "src/core/progress.hpp"
#include "src/network/parameters.hpp"
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

std::string jacobian_how(const JacobianRankCertificate& cert) {
  switch (cert.method) {
    case JacobianRankMethod::identity:
      return "no theta_k and no fixed weight is 0, so dPhi = diag(Phi) B diag(1/theta) has the "
             "rank of B";
    case JacobianRankMethod::elimination:
      return fmt::format("elimination mod {} of the exact entries of dPhi", cert.prime);
    case JacobianRankMethod::zero_pattern:
      return "exact by the zero pattern: the rank of B without the zero edges, plus the zero "
             "parameters some path crosses as its only zero edge";
    default:
      return "not certified";
  }
}

JacobianRankCertificate zero_pattern_certificate(const ZeroPatternRank& z,
                                                 const RankCertificate& rank_b) {
  if (rank_b.certified() && z.rank > rank_b.upper) {
    throw std::logic_error(
        fmt::format("the zero pattern's rank(dPhi) = {} exceeds the certified rank(B) <= {}",
                    z.rank, rank_b.upper));
  }
  JacobianRankCertificate cert;
  cert.method = JacobianRankMethod::zero_pattern;
  cert.prime = 0;
  cert.zero_weights = z.zero_params;
  cert.lower = z.rank;
  cert.upper = z.rank;
  return cert;
}

JacobianRankCertificate jacobian_rank_from_zero_pattern(const Network& net,
                                                        std::span<const double> theta,
                                                        const RankCertificate& rank_b,
                                                        const RankOptions& options) {
  return zero_pattern_certificate(jacobian_rank_by_zero_pattern(net, theta, options.engine),
                                  rank_b);
}

JacobianRankCertificate certify_shared_jacobian_rank(const Network& net,
                                                     std::span<const double> theta,
                                                     const RankCertificate& rank_b,
                                                     const RankOptions& options) {
  check_theta(net, theta);
  const auto fixed = net.parameter_map()->fixed_weights;
  const auto params = net.parameter_map()->edge_params;
  bool zero_fixed = false;
  for (std::size_t e = 0; e < params.size(); ++e) {
    zero_fixed = zero_fixed || (params[e] == kFixedEdge && fixed[e] == 0.0);
  }
  if (std::count(theta.begin(), theta.end(), 0.0) == 0 && !zero_fixed) {
    // dPhi = diag(Phi) B diag(1/theta) with Phi and theta free of zeros.
    JacobianRankCertificate cert;
    cert.prime = options.prime;
    cert.upper = rank_b.upper;
    cert.method = JacobianRankMethod::identity;
    cert.lower = rank_b.lower;
    return cert;
  }
  return jacobian_rank_from_zero_pattern(net, theta, rank_b, options);
}

RankReport shared_rank_report(const RankSubject& net, const RankCertificate& rank_b,
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
  const std::string how_b = rank_b.method == RankMethod::symmetry
                                ? std::string("by the symmetry theorem, h_sym exact")
                            : rank_b.prime == 0 ? std::string("exact over Q")
                                                : fmt::format("mod {}", rank_b.prime);
  const bool zeros = !rep.zero_weights.empty();
  std::optional<Index> rj;
  std::string rj_text = zeros ? "rank(dPhi) not certified (a theta_k is 0)"
                              : "rank(dPhi) not certified (a fixed weight is 0)";
  if (rank_j_exact && rank_j_exact->certified()) {
    rj = *rank_j_exact->rank();
    rj_text = fmt::format("rank(dPhi) = {} ({})", *rj, jacobian_how(*rank_j_exact));
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
  if (rj && *rj < rep.expected) {
    return set(RankStatus::theta_in_null_set,
               fmt::format("rank(B) = {} = {} certified ({}); rank(dPhi) = {} < {} certified at "
                           "this theta ({}), which has {} zero coordinate(s){}: {} direction(s) "
                           "lost, theta lies in the null set where dPhi drops rank",
                           rb, bound, how_b, *rj, rep.expected, jacobian_how(*rank_j_exact),
                           rep.zero_weights.size(), zeros ? "" : " (a fixed weight is 0)",
                           rep.expected - *rj));
  }
  if (!rj) {
    if (rank_j && rank_j->rank < rep.expected &&
        rank_j->status == NumericalRankStatus::conclusive) {
      return set(
          RankStatus::theta_in_null_set,
          fmt::format("rank(B) = {} = {} certified ({}); rank(dPhi) = {} < {} numerically "
                      "(conclusive, not certified) at this theta, which has {} zero "
                      "coordinate(s)",
                      rb, bound, how_b, rank_j->rank, rep.expected, rep.zero_weights.size()));
    }
    // Zero weights and no certified rank(dPhi): never verified.
    return set(RankStatus::rank_J_not_computed,
               fmt::format("rank(B) = {} = {} certified ({}); {}", rb, bound, how_b, rj_text));
  }
  if (rank_j && rank_j->rank != *rj) {
    return set(RankStatus::ill_conditioned,
               fmt::format("rank(dPhi) = rank(B) = {} = {} certified ({}); in floating point "
                           "dPhi's numerical rank is {} ({})",
                           rb, bound, how_b, rank_j->rank, to_string(rank_j->status)));
  }
  return set(RankStatus::verified,
             fmt::format("rank(B) = {} = {} certified ({}); {}{}", rb, bound, how_b, rj_text,
                         rank_j ? "; the numerical rank agrees" : ""));
}

bool skeleton_possible(const Network& net, std::string& why) {
  const std::vector<Index> maybe = params_maybe_repeated(net);
  if (maybe.empty()) {
    return true;
  }
  // Exactly, for the parameters the depth test leaves in doubt (a layer applied on parallel
  // branches is fine): some path carries parameter k twice when the source of one of its edges
  // is reachable from the target of another. One search per parameter, within a budget (about
  // a second), beyond which the route is path-free all the same.
  const auto n = static_cast<std::size_t>(net.num_nodes());
  const auto m = static_cast<std::size_t>(net.num_edges());
  constexpr double k_budget = 2e8;
  const bool exact = static_cast<double>(maybe.size()) * static_cast<double>(n + m) <= k_budget;
  std::optional<Index> repeated;
  if (exact) {
    std::vector<std::vector<EdgeId>> edges_of(maybe.size());
    std::vector<std::int64_t> slot(static_cast<std::size_t>(net.num_params()), -1);
    for (std::size_t i = 0; i < maybe.size(); ++i) {
      slot[static_cast<std::size_t>(maybe[i])] = static_cast<std::int64_t>(i);
    }
    for (EdgeId e = 0; e < static_cast<EdgeId>(m); ++e) {
      const Index k = net.edge_param(e);
      if (k >= 0 && slot[static_cast<std::size_t>(k)] >= 0) {
        edges_of[static_cast<std::size_t>(slot[static_cast<std::size_t>(k)])].push_back(e);
      }
    }
    std::vector<char> reached(n);
    std::vector<NodeId> stack;
    for (std::size_t i = 0; i < maybe.size() && !repeated; ++i) {
      std::fill(reached.begin(), reached.end(), 0);
      for (const EdgeId e : edges_of[i]) {
        const NodeId v = net.target(e);
        if (reached[static_cast<std::size_t>(v)] == 0) {
          reached[static_cast<std::size_t>(v)] = 1;
          stack.push_back(v);
        }
      }
      while (!stack.empty()) {
        const NodeId v = stack.back();
        stack.pop_back();
        for (const EdgeId e : net.out_edges(v)) {
          const NodeId w = net.target(e);
          if (reached[static_cast<std::size_t>(w)] == 0) {
            reached[static_cast<std::size_t>(w)] = 1;
            stack.push_back(w);
          }
        }
      }
      for (const EdgeId e : edges_of[i]) {
        if (reached[static_cast<std::size_t>(net.source(e))] != 0) {
          repeated = maybe[i];
          break;
        }
      }
    }
    if (!repeated) {
      return true;
    }
  }
  why = fmt::format(
      "parameter {} {} carried twice by one path (a layer applied twice), and the skeleton B, "
      "a 0/1 pattern, cannot hold a 2; the symmetry theorem certifies rank(B) without the paths",
      repeated ? *repeated : maybe.front(), repeated ? "is" : "may be");
  return false;
}

bool enumeration_adds(const Count& paths, const Count& nnz, Index d,
                      const NumericalRankOptions& numerical, std::string& why) {
  using When = NumericalRankOptions::When;
  if (numerical.when == When::always) {
    return true;
  }
  if (numerical.when == When::never) {
    why =
        "with shared parameters the symmetry theorem certifies rank(B), and the numerical "
        "rank of dPhi, which needs the paths, was not asked for";
    return false;
  }
  const double flops =
      numerical_rank_flops(static_cast<Index>(std::min(paths.approx(), 9e18)), d,
                           static_cast<Index>(std::min(nnz.approx(), 9e18)), numerical);
  if (paths.exact() && nnz.exact() && flops <= numerical.automatic_max_flops) {
    return true;
  }
  why = fmt::format(
      "with shared parameters the symmetry theorem certifies rank(B), and the numerical rank of "
      "dPhi, the one thing the {} paths would add, needs about {:.2g} floating-point operations, "
      "over the automatic limit of {:.2g}; the enumerated route, or the numerical rank asked "
      "for, takes them",
      paths.to_string(), flops, numerical.automatic_max_flops);
  return false;
}

}  // namespace pathlift::detail

namespace pathlift {

namespace {

RankCertificate symmetry_certificate(const SymmetryDimension& sym, Index d) {
  RankCertificate cert;
  cert.d = d;
  cert.h = sym.h_sym;
  cert.expected = d - sym.h_sym;
  cert.lower = cert.expected;
  cert.upper = cert.expected;
  cert.prime = 0;
  cert.method = RankMethod::symmetry;
  cert.rows_eliminated = 0;
  return cert;
}

}  // namespace

RankCertificate certify_rank_by_symmetry(const Network& net, const RankOptions& options) {
  return symmetry_certificate(rescaling_symmetry_dimension(net, options.engine), net.num_params());
}

RankCertificate certify_rank_by_symmetry(const Model& model, const RankOptions& options) {
  if (const Network* net = model.dag()) {
    return certify_rank_by_symmetry(*net, options);
  }
  return symmetry_certificate(rescaling_symmetry_dimension(model, options.engine),
                              model.num_params());
}

}  // namespace pathlift
