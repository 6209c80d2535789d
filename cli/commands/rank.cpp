// pathlift rank: the certified rank of B, the numerical rank of dPhi at theta, and Theorem 1's
// equalities rank(dPhi) = rank(B) = d - h.

#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "../common.hpp"
#include "../registry.hpp"
#include "pathlift/error.hpp"
#include "pathlift/rank.hpp"

namespace pathlift::cli {

namespace {

struct RankCommandOptions {
  NetworkOptions network;
  ComputeOptions compute;
  bool json = false;
  bool no_enumerate = false;
  std::uint64_t prime = default_prime;
  std::string method = "auto";
  std::string jacobian_method = "auto";
  double tolerance = 0;
  double min_gap = NumericalRankOptions{}.min_gap;
};

RankMethod parse_method(const std::string& s) {
  if (s == "auto") {
    return RankMethod::automatic;
  }
  if (s == "skeleton") {
    return RankMethod::skeleton;
  }
  return RankMethod::gram;
}

NumericalRankMethod parse_jacobian_method(const std::string& s) {
  if (s == "auto") {
    return NumericalRankMethod::automatic;
  }
  if (s == "svd") {
    return NumericalRankMethod::svd;
  }
  return NumericalRankMethod::gram_eigenvalues;
}

nlohmann::ordered_json number_or_null(double x) {
  return std::isfinite(x) ? nlohmann::ordered_json(x) : nlohmann::ordered_json(nullptr);
}

void print_report(const RankReport& rep, const std::string& description,
                  const std::string& theta_source) {
  const RankCertificate& c = rep.rank_B;
  fmt::print("network      {}\n", description);
  fmt::print("d            {} parameters (edges)\n", rep.d);
  fmt::print("h            {} hidden nodes\n", rep.h);
  fmt::print("d - h        {}  (Theorem 1)\n", rep.expected);
  const std::string eliminated =
      c.method == RankMethod::gram
          ? fmt::format("B^T B ({} x {})", rep.d, rep.d)
          : fmt::format("{} row{} of B", c.rows_eliminated, c.rows_eliminated == 1 ? "" : "s");
  fmt::print("rank(B)      {}  {}: {} <= rank(B) <= {}\n",
             c.certified() ? fmt::format("{}", c.lower) : std::string("?"),
             c.certified() ? "certified" : "NOT certified", c.lower, c.upper);
  fmt::print("             lower bound: rank mod p = {}{} of {}\n", c.prime,
             c.prime == default_prime ? " (2^61 - 1)" : "", eliminated);
  fmt::print(
      "             upper bound: d - {} rescaling vectors z_v, checked in the kernel and "
      "independent{}\n",
      rep.h - static_cast<Index>(c.kernel_failures.size()),
      c.kernel_failures.empty() ? ""
                                : fmt::format(" ({} failed the check)", c.kernel_failures.size()));
  if (rep.rank_J) {
    const NumericalRank& j = *rep.rank_J;
    fmt::print("rank(dPhi)   {}  numerical, at theta = {}\n", j.rank, theta_source);
    fmt::print("             {}, tolerance {:.3g}, gap {:.3g} ({}), sigma_max {:.3g}\n",
               to_string(j.method), j.tolerance, j.gap, to_string(j.status),
               j.singular_values.empty() ? 0.0 : j.singular_values.front());
  } else {
    fmt::print("rank(dPhi)   not computed\n");
  }
  if (!rep.zero_weights.empty()) {
    fmt::print("theta        {} zero coordinate(s)\n", rep.zero_weights.size());
  }
  fmt::print("status       {}: {}\n", to_string(rep.status), rep.explanation);
}

nlohmann::ordered_json report_json(const RankReport& rep) {
  const RankCertificate& c = rep.rank_B;
  nlohmann::ordered_json j;
  j["d"] = rep.d;
  j["h"] = rep.h;
  j["expected"] = rep.expected;
  j["rank_B"] = c.certified() ? nlohmann::ordered_json(c.lower) : nlohmann::ordered_json(nullptr);
  j["rank_B_lower"] = c.lower;
  j["rank_B_upper"] = c.upper;
  j["rank_B_certified"] = c.certified();
  if (rep.rank_J) {
    j["rank_J"] = rep.rank_J->rank;
    j["rank_J_tolerance"] = number_or_null(rep.rank_J->tolerance);
    j["rank_J_gap"] = number_or_null(rep.rank_J->gap);
  } else {
    j["rank_J"] = nullptr;
    j["rank_J_tolerance"] = nullptr;
    j["rank_J_gap"] = nullptr;
  }
  j["status"] = std::string(to_string(rep.status));
  return j;
}

void run_rank(const RankCommandOptions& opts) {
  const auto [net, description] = load_network(opts.network);
  EngineOptions engine = engine_options(opts.compute, "rank");
  RankOptions ro;
  ro.method = parse_method(opts.method);
  ro.prime = opts.prime;
  ro.engine = engine;

  NumericalRankOptions no;
  no.method = parse_jacobian_method(opts.jacobian_method);
  no.tolerance = opts.tolerance;
  no.min_gap = opts.min_gap;
  no.max_memory = engine.max_memory;
  const LoadedTheta theta = load_theta(net, opts.compute);
  const RankReport rep = check_rank_theorem(
      net, theta.theta, ro, no, opts.no_enumerate ? RankRoute::path_free : RankRoute::automatic);

  if (opts.json) {
    fmt::print("{}\n", report_json(rep).dump(2));
  } else {
    print_report(rep, description, theta.source);
  }
  if (is_failure(rep.status)) {
    throw CLI::RuntimeError(1);
  }
}

void add_rank_command(CLI::App& app) {
  auto opts = std::make_shared<RankCommandOptions>();
  auto* cmd =
      app.add_subcommand("rank",
                         "Certified rank of B, numerical rank of dPhi at theta, and Theorem 1: "
                         "rank(dPhi) = rank(B) = d - h (exit 1 if the equalities fail)");
  add_network_options(*cmd, opts->network);
  add_theta_options(*cmd, opts->compute);
  add_engine_options(*cmd, opts->compute);
  cmd->add_flag("--json", opts->json,
                "Print one JSON object with the keys d, h, expected, rank_B, rank_B_lower, "
                "rank_B_upper, rank_B_certified, rank_J, rank_J_tolerance, rank_J_gap, status");
  cmd->add_flag("--no-enumerate", opts->no_enumerate,
                "Certify rank(B) from B^T B built without enumerating paths (rank_J is then "
                "null); chosen automatically when the paths do not fit in memory");
  add_prime_option(*cmd, opts->prime,
                   "The prime of the modular elimination (a prime below 2^63; default 2^61 - 1)");
  cmd->add_option("--method", opts->method,
                  "Matrix eliminated for the lower bound: auto (B when enumerated), skeleton "
                  "(B, sparse), gram (B^T B, dense)")
      ->check(CLI::IsMember({"auto", "skeleton", "gram"}));
  cmd->add_option("--jacobian-method", opts->jacobian_method,
                  "Singular values of dPhi: auto, svd (dense), eig (eigenvalues of dPhi^T dPhi)")
      ->check(CLI::IsMember({"auto", "svd", "eig"}));
  cmd->add_option("--tolerance", opts->tolerance,
                  "Absolute tolerance on the singular values of dPhi (default: relative to the "
                  "largest, see docs/rank.md)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--min-gap", opts->min_gap,
                  "rank(dPhi) is inconclusive when the gap at the cut is below this (default "
                  "1000)")
      ->check(CLI::PositiveNumber);
  cmd->callback([opts] { run_rank(*opts); });
}

const CommandRegistration registration{40, add_rank_command};

}  // namespace

}  // namespace pathlift::cli
