#include "pathlift/rank.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>

#include "pathlift/counting.hpp"
#include "pathlift/error.hpp"
#include "pathlift/kernel.hpp"
#include "pathlift/lifting.hpp"
#include "pathlift/limits.hpp"
#include "pathlift/path_memory.hpp"
#include "pathlift/paths.hpp"
#include "pathlift/symmetry.hpp"
#include "src/core/enum_names.hpp"
#include "src/core/json.hpp"
#include "src/core/progress.hpp"
#include "src/dp/path_totals.hpp"
#include "src/rank/detail/shared_rank.hpp"

namespace pathlift {

namespace {

using detail::EnumName;

constexpr std::array k_status_names{
    EnumName<RankStatus>{RankStatus::verified, "verified"},
    EnumName<RankStatus>{RankStatus::theta_in_null_set, "theta_in_null_set"},
    EnumName<RankStatus>{RankStatus::rank_J_inconclusive, "rank_J_inconclusive"},
    EnumName<RankStatus>{RankStatus::rank_J_not_computed, "rank_J_not_computed"},
    EnumName<RankStatus>{RankStatus::rank_B_uncertified, "rank_B_uncertified"},
    EnumName<RankStatus>{RankStatus::theorem_fails, "theorem_fails"},
    EnumName<RankStatus>{RankStatus::ill_conditioned, "ill_conditioned"},
    EnumName<RankStatus>{RankStatus::numerical_failure, "numerical_failure"},
    EnumName<RankStatus>{RankStatus::below_symmetry_bound, "below_symmetry_bound"}};

}  // namespace

std::string_view to_string(RankStatus status) {
  return detail::enum_name(k_status_names, status);
}

RankStatus parse_rank_status(std::string_view name) {
  return detail::parse_enum(k_status_names, name, "rank status");
}

bool is_failure(RankStatus status) {
  return status == RankStatus::rank_B_uncertified || status == RankStatus::theorem_fails;
}

namespace detail {

RankReport rank_report_head(const RankSubject& net, const RankCertificate& rank_b,
                            const std::optional<JacobianRankCertificate>& rank_j_exact,
                            const std::optional<NumericalRank>& rank_j,
                            std::span<const double> theta) {
  RankReport rep;
  rep.d = net.d;
  rep.h = net.h;
  rep.h_sym = rank_b.h;
  rep.one_parameter_per_edge = net.one_parameter_per_edge;
  rep.expected = rep.d - rep.h_sym;
  rep.rank_B = rank_b;
  rep.rank_J_exact = rank_j_exact;
  rep.rank_J = rank_j;
  for (std::size_t k = 0; k < theta.size(); ++k) {
    if (theta[k] == 0.0) {
      rep.zero_weights.push_back(static_cast<EdgeId>(k));
    }
  }
  return rep;
}

RankReport concluded(RankReport& rep, RankStatus status, std::string why) {
  rep.status = status;
  rep.explanation = std::move(why);
  return rep;
}

}  // namespace detail

namespace {

std::string zero_edges_text(const Network& net, const std::vector<EdgeId>& zeros) {
  std::string edges;
  for (std::size_t i = 0; i < zeros.size() && i < 5; ++i) {
    edges += fmt::format("{}{} ({})", i == 0 ? "" : ", ", zeros[i], net.edge_label(zeros[i]));
  }
  if (zeros.size() > 5) {
    edges += ", ...";
  }
  return edges;
}

/// "sigma_max 1.4, sigma_2 7.1e-21 (condition 2e+20), tolerance 6.3e-16, gap 2.2e+05".
std::string condition_text(const NumericalRank& j, Index expected) {
  const double smax = j.sigma(1);
  const double sk = j.sigma(expected);
  return fmt::format(
      "sigma_max {:.3g}, sigma_{} {:.3g} (condition {:.3g}), tolerance {:.3g}, gap "
      "{:.3g}",
      smax, expected, sk, smax / sk, j.tolerance, j.gap);
}

/// Why a numerical rank cannot be trusted, or empty: non-finite singular values, or a rank
/// above the certified upper bound of rank(B) (rank(dPhi(theta)) <= rank(B) for every theta).
std::string numerical_failure_text(const NumericalRank& j, const RankCertificate& rank_b) {
  if (j.status == NumericalRankStatus::failed) {
    return fmt::format(
        "{} of the {} singular values of dPhi are not finite (dPhi has entries "
        "that overflow, or the SVD failed); they are not counted",
        j.non_finite, j.singular_values.size());
  }
  if (j.rank > rank_b.upper) {
    return fmt::format(
        "the numerical rank of dPhi ({}) exceeds the certified rank(B) <= {}, "
        "which bounds rank(dPhi(theta)) for every theta: the singular values are "
        "wrong",
        j.rank, rank_b.upper);
  }
  return {};
}

}  // namespace

RankReport rank_report(const Network& net, const RankCertificate& rank_b,
                       const std::optional<JacobianRankCertificate>& rank_j_exact,
                       const std::optional<NumericalRank>& rank_j, std::span<const double> theta) {
  const detail::RankSubject subject{net.num_params(), net.num_hidden(),
                                    net.one_parameter_per_edge()};
  if (!net.one_parameter_per_edge()) {
    return detail::shared_rank_report(subject, rank_b, rank_j_exact, rank_j, theta);
  }
  RankReport rep = detail::rank_report_head(subject, rank_b, rank_j_exact, rank_j, theta);
  const auto set = [&rep](RankStatus s, std::string why) {
    return detail::concluded(rep, s, std::move(why));
  };
  if (!rank_b.certified()) {
    return set(RankStatus::rank_B_uncertified,
               fmt::format("rank(B) is only bounded: {} <= rank(B) <= {} (lower bound by {}{}); "
                           "try another prime",
                           rank_b.lower, rank_b.upper, to_string(rank_b.method),
                           rank_b.kernel_failures.empty()
                               ? ""
                               : fmt::format(", {} rescaling vectors failed the kernel check",
                                             rank_b.kernel_failures.size())));
  }
  const Index rb = *rank_b.rank();
  if (rb != rep.expected) {
    return set(RankStatus::theorem_fails,
               fmt::format("certified rank(B) = {} but d - h = {} - {} = {} (Theorem 1)", rb, rep.d,
                           rep.h, rep.expected));
  }
  const std::string failure = rank_j ? numerical_failure_text(*rank_j, rank_b) : std::string();
  const bool null_set = !rep.zero_weights.empty();
  if (rank_j_exact && rank_j_exact->certified()) {
    const Index rj = *rank_j_exact->rank();
    const std::string how = detail::jacobian_how(*rank_j_exact);
    if (rj != rep.expected) {
      if (null_set) {
        return set(RankStatus::theta_in_null_set,
                   fmt::format("rank(dPhi) = {} < d - h = {} certified ({}) at this theta, which "
                               "has {} zero coordinate(s) (edges {}): theta lies in the null set "
                               "that Corollary 2 excludes, not a failure of the theorem",
                               rj, rep.expected, how, rep.zero_weights.size(),
                               zero_edges_text(net, rep.zero_weights)));
      }
      return set(RankStatus::theorem_fails,
                 fmt::format("certified rank(dPhi) = {} but d - h = {} although no theta_k is 0",
                             rj, rep.expected));
    }
    if (!failure.empty()) {
      return set(RankStatus::numerical_failure,
                 fmt::format("rank(dPhi) = rank(B) = d - h = {} certified ({}); the numerical "
                             "rank failed: {}",
                             rb, how, failure));
    }
    if (rank_j && (rank_j->rank != rj || rank_j->status != NumericalRankStatus::conclusive)) {
      return set(RankStatus::ill_conditioned,
                 fmt::format("rank(dPhi) = rank(B) = d - h = {} certified ({}); in floating point "
                             "dPhi is ill-conditioned: its numerical rank is {} ({}, {}). A "
                             "numerical outcome, not a counterexample",
                             rb, how, rank_j->rank, to_string(rank_j->status),
                             condition_text(*rank_j, rep.expected)));
    }
    return set(RankStatus::verified,
               fmt::format("rank(dPhi) = rank(B) = d - h = {} certified ({}){}", rb, how,
                           rank_j ? "; the numerical rank agrees" : ""));
  }
  // rank(dPhi) is not certified: theta has zero weights and dPhi was not eliminated.
  if (!rank_j) {
    return set(RankStatus::rank_J_not_computed,
               fmt::format("rank(B) = d - h = {} certified; rank(dPhi) neither certified nor "
                           "computed",
                           rb));
  }
  if (!failure.empty()) {
    return set(RankStatus::numerical_failure,
               fmt::format("rank(B) = d - h = {} certified; {}", rb, failure));
  }
  if (rank_j->status == NumericalRankStatus::inconclusive) {
    return set(RankStatus::rank_J_inconclusive,
               fmt::format("rank(B) = d - h = {} certified; the singular values of dPhi have no "
                           "clear gap at the tolerance {:.3g} (gap {:.3g}), so its numerical rank "
                           "({}) is not conclusive",
                           rb, rank_j->tolerance, rank_j->gap, rank_j->rank));
  }
  if (rank_j->rank == rep.expected) {
    return set(RankStatus::verified,
               fmt::format("rank(B) = d - h = {} certified; rank(dPhi) = {} numerically "
                           "(conclusive, not certified)",
                           rb, rank_j->rank));
  }
  if (null_set) {
    return set(RankStatus::theta_in_null_set,
               fmt::format("rank(dPhi) = {} < d - h = {} numerically at this theta, which has {} "
                           "zero coordinate(s) (edges {}): theta lies in the null set that "
                           "Corollary 2 excludes, not a failure of the theorem",
                           rank_j->rank, rep.expected, rep.zero_weights.size(),
                           zero_edges_text(net, rep.zero_weights)));
  }
  return set(RankStatus::ill_conditioned,
             fmt::format("rank(B) = d - h = {} certified; the numerical rank of dPhi is {} ({}), "
                         "a floating-point outcome: with no zero theta_k rank(dPhi) = rank(B)",
                         rb, rank_j->rank, condition_text(*rank_j, rep.expected)));
}

RankReport rank_report(const Network& net, const RankCertificate& rank_b,
                       const std::optional<NumericalRank>& rank_j, std::span<const double> theta) {
  std::optional<JacobianRankCertificate> exact;
  if (static_cast<Index>(theta.size()) == net.num_params()) {
    exact = certify_jacobian_rank(net, theta, rank_b);
  }
  return rank_report(net, rank_b, exact, rank_j, theta);
}

namespace {

/// Whether B and dPhi fit in max_memory, from the DP counts; `why` quotes the sizes when not.
bool jacobian_fits(const Network& net, std::size_t max_memory, std::string& why) {
  try {
    // The enumerated route holds the path set and B, then dPhi's values beside them.
    require_memory(net, {PathObject::path_set, PathObject::jacobian}, max_memory,
                   "the paths and the Jacobian dPhi with its pattern B");
  } catch (const TooLarge& e) {
    why = e.what();
    return false;
  }
  return true;
}

/// The engine options with the phase display as their progress, when one is set.
EngineOptions engine_for(const RankOptions& options, std::string_view name) {
  EngineOptions e = options.engine;
  e.progress = detail::renamed(options.engine.progress, name);
  return e;
}

}  // namespace

RankReport check_rank_theorem(const Network& net, std::span<const double> theta,
                              const RankOptions& options, const NumericalRankOptions& numerical,
                              RankRoute route) {
  std::string why_path_free = "the path-free route was asked for";
  const bool shared = !net.one_parameter_per_edge();
  // With shared parameters the symmetry certificate comes first: the paths only when their
  // numerical rank would be computed (a one-parameter-per-edge network keeps its enumerated
  // check wherever it fits).
  const bool enumerate =
      route == RankRoute::enumerate ||
      (route == RankRoute::automatic &&
       jacobian_fits(net, options.engine.max_memory, why_path_free) && (!shared || [&] {
         const detail::PathTotals t = detail::path_totals(net);
         return detail::enumeration_adds(t.paths, t.nnz, net.num_params(), numerical,
                                         why_path_free) &&
                detail::skeleton_possible(net, why_path_free);
       }()));
  if (!enumerate) {
    RankCertificate cert;
    const bool symmetry = options.method == RankMethod::symmetry ||
                          (shared && options.method == RankMethod::automatic);
    if (shared && !symmetry) {
      throw std::invalid_argument(fmt::format(
          "the rank method {} needs one parameter per edge on the path-free route; this network "
          "has {} parameters on {} edges (shared or fixed): its rank(B) is certified by the "
          "symmetry theorem (method symmetry, the default) or from the enumerated paths",
          to_string(options.method), net.num_params(), net.num_edges()));
    }
    if (symmetry) {
      if (options.engine.progress) {
        options.engine.progress("rescaling symmetries", -1.0);
      }
      cert = certify_rank_by_symmetry(net, options);
      if (options.engine.progress) {
        options.engine.progress("rescaling symmetries", 1.0);
      }
    } else if (options.method == RankMethod::gram) {
      const ModMatrix gram = skeleton_gram_mod(net, options.prime,
                                               engine_for(options, "B^T B by dynamic programming"));
      if (options.engine.progress) {
        options.engine.progress("eliminating B^T B mod p", -1.0);
      }
      cert = certify_rank_from_gram(net, gram);
      if (options.engine.progress) {
        options.engine.progress("eliminating B^T B mod p", 1.0);
      }
    } else {
      cert = certify_rank_by_path_basis(net, options);
    }
    std::optional<JacobianRankCertificate> exact;
    if (!theta.empty()) {
      exact = certify_jacobian_rank(net, theta, cert, nullptr, options);
    }
    RankReport rep = rank_report(net, cert, exact, std::nullopt, theta);
    rep.rank_J_note = fmt::format(
        "the numerical rank of dPhi needs the paths, which were not "
        "enumerated ({})",
        why_path_free);
    return rep;
  }
  check_theta(net, theta);
  const PathSet paths = enumerate_paths(net, engine_for(options, "enumerating paths"));
  const CsrPattern b = skeleton(paths, options.engine);
  const RankCertificate cert = options.method == RankMethod::symmetry
                                   ? certify_rank_by_symmetry(net, options)
                                   : certify_rank(net, b, options);
  JacobianRankCertificate exact = certify_jacobian_rank(net, theta, cert, &b, options);
  if (!exact.certified() && exact.zero_weights > 0) {
    // The elimination of dPhi's exact entries bounds a rank drop from below only; the zero
    // pattern gives it exactly, in O(nodes + edges).
    const JacobianRankCertificate pattern =
        detail::jacobian_rank_from_zero_pattern(net, theta, cert, options);
    if (pattern.lower < exact.lower) {
      throw std::logic_error(fmt::format(
          "rank(dPhi) by the zero pattern ({}) is below the elimination's lower bound ({})",
          pattern.lower, exact.lower));
    }
    exact = pattern;
  }

  NumericalRankOptions nopt = numerical;
  if (nopt.engine.max_memory == 0) {
    nopt.engine.max_memory = options.engine.max_memory;
  }
  std::optional<NumericalRank> rank_j;
  std::string note;
  bool skipped = false;
  const double flops = numerical_rank_flops(b.rows, b.cols, b.nnz(), nopt);
  if (nopt.when == NumericalRankOptions::When::never) {
    note = "the numerical rank of dPhi was not asked for";
  } else if (nopt.when == NumericalRankOptions::When::automatic &&
             flops > nopt.automatic_max_flops) {
    skipped = true;
    note = fmt::format(
        "the numerical rank of dPhi was skipped: its dense linear algebra needs "
        "about {:.2g} floating-point operations, over the automatic limit of "
        "{:.2g} (the exact ranks are certified without it)",
        flops, nopt.automatic_max_flops);
  } else {
    try {
      const CsrMatrix<double> j =
          jacobian<double>(paths, theta, engine_for(options, "computing dPhi"));
      if (options.engine.progress) {
        options.engine.progress("singular values of dPhi", -1.0);
      }
      rank_j = numerical_rank(j, nopt);
      if (options.engine.progress) {
        options.engine.progress("singular values of dPhi", 1.0);
      }
    } catch (const TooLarge& e) {
      note = fmt::format("the numerical rank of dPhi was not computed: {}", e.what());
    }
  }
  RankReport rep = rank_report(net, cert, exact, rank_j, theta);
  rep.rank_J_note = note;
  rep.rank_J_skipped = skipped;
  return rep;
}

std::string to_json(const RankReport& rep, int indent) {
  using detail::Json;
  using detail::json_value;
  using detail::number_or_null;
  const RankCertificate& c = rep.rank_B;
  Json j;
  PATHLIFT_JSON_MEMBERS(j, rep, d, h, h_sym, expected);
  j["rank_B"] = json_value(c.rank());
  j["rank_B_lower"] = c.lower;
  j["rank_B_upper"] = c.upper;
  j["rank_B_certified"] = c.certified();
  // The numerical rank of dPhi: null when not computed or failed.
  const NumericalRank* ok =
      rep.rank_J && rep.rank_J->status != NumericalRankStatus::failed ? &*rep.rank_J : nullptr;
  j["rank_J"] = ok ? Json(ok->rank) : Json();
  j["rank_J_tolerance"] = ok ? number_or_null(ok->tolerance) : Json();
  j["rank_J_gap"] = ok ? number_or_null(ok->gap) : Json();
  j["status"] = std::string(to_string(rep.status));
  j["explanation"] = rep.explanation;
  j["rank_B_method"] = std::string(to_string(c.method));
  j["prime"] = c.prime;
  const auto& x = rep.rank_J_exact;
  j["rank_J_exact"] = x ? json_value(x->rank()) : nullptr;
  j["rank_J_exact_lower"] = x ? nlohmann::ordered_json(x->lower) : nullptr;
  j["rank_J_exact_upper"] = x ? nlohmann::ordered_json(x->upper) : nullptr;
  j["rank_J_certified"] = x && x->certified();
  j["rank_J_exact_method"] =
      x ? nlohmann::ordered_json(std::string(to_string(x->method))) : nullptr;
  j["zero_weights"] = rep.zero_weights.size();
  // The numerical rank of dPhi's keys: null when it was not computed.
  const NumericalRank* n = rep.rank_J ? &*rep.rank_J : nullptr;
  j["rank_J_numerical_status"] = n ? std::string(to_string(n->status)) : "not_computed";
  j["rank_J_method"] = n ? Json(std::string(to_string(n->method))) : Json();
  j["rank_J_sigma_max"] = n ? number_or_null(n->sigma(1)) : Json();
  j["rank_J_sigma_expected"] = n ? number_or_null(n->sigma(rep.expected)) : Json();
  j["rank_J_condition"] = n ? number_or_null(n->sigma(1) / n->sigma(rep.expected)) : Json();
  j["rank_J_non_finite"] = n ? Json(n->non_finite) : Json();
  j["rank_J_note"] = detail::text_or_null(rep.rank_J_note);
  return j.dump(indent);
}

}  // namespace pathlift
