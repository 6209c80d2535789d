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
#include "pathlift/functional_dimension.hpp"
#include "pathlift/rank.hpp"

namespace pathlift::cli {

namespace {

struct RankCommandOptions {
  NetworkOptions network;
  ComputeOptions compute;
  RankOptions rank;                ///< --prime (the method and engine are set when run)
  NumericalRankOptions numerical;  ///< --tolerance, --min-gap
  std::string method = "auto";
  std::string jacobian_method = "auto";
  bool json = false;
  bool no_enumerate = false;
  bool enumerate = false;
  bool always_numerical = false;
  bool no_numerical = false;
  std::string data;          ///< --data: the functional dimension on this batch instead
  bool prime_given = false;  ///< --prime was given (else --data draws one at random)
};

void print_functional_dimension(const FunctionalDimension& fd, const std::string& description,
                                const std::string& theta_source) {
  fmt::print("network      {}\n", description);
  fmt::print("theta        {}\n", theta_source);
  fmt::print("J_X          {} x {}  (n = {} samples x q = {} outputs, d = {} parameters)\n",
             fd.rows, fd.d, fd.n, fd.q, fd.d);
  fmt::print("rank(J_X)    {}  {}: {} <= rank(J_X) <= {}\n",
             fd.rank() ? fmt::format("{}", *fd.rank()) : std::string("?"),
             fd.certified() ? "certified" : "NOT certified", fd.lower, fd.upper);
  fmt::print("             lower bound: rank mod p = {}{} of the first {} rows ({} eliminated)\n",
             fd.prime,
             fd.prime_random             ? " (drawn at random)"
             : fd.prime == default_prime ? " (2^61 - 1)"
                                         : "",
             fd.rows_to_rank, fd.rows_used);
  if (fd.monte_carlo_rank && fd.lower < fd.upper) {
    fmt::print("             Monte Carlo: rank(J_X) = {} except with probability <= {:.1e}\n",
               *fd.monte_carlo_rank, *fd.monte_carlo_error);
  }
  fmt::print(
      "             upper bounds: q x distinct samples {}, rank(dPhi) <= {}, d - known kernel "
      "{}\n",
      fd.upper_rows, fd.upper_dphi, fd.upper_kernel);
  if (fd.numerical && fd.numerical->status != NumericalRankStatus::failed) {
    const NumericalRank& j = *fd.numerical;
    const Index next = fd.lower + 1;
    fmt::print(
        "numerical    rank {}: tolerance {:.3g}, gap {:.3g} ({}), sigma_max {:.3g}, "
        "sigma_{} {:.3g}{}\n",
        j.rank, j.tolerance, j.gap, to_string(j.status), j.sigma(1), fd.lower, j.sigma(fd.lower),
        next <= static_cast<Index>(j.singular_values.size())
            ? fmt::format(", sigma_{} {:.3g}", next, j.sigma(next))
            : std::string());
  } else if (fd.numerical) {
    fmt::print("numerical    failed: {} singular values are not finite\n",
               fd.numerical->non_finite);
  } else {
    fmt::print("numerical    {}\n", fd.numerical_note);
  }
  fmt::print("margin       {:.3g}{}\n", fd.margin,
             fd.pattern_certified ? " (activation pattern certified)"
                                  : " (activation pattern NOT certified)");
  fmt::print("status       {}: {}\n", to_string(fd.status), fd.explanation);
}

void run_functional_dimension(const RankCommandOptions& opts, const LoadedModel& loaded) {
  const Network& net = loaded.network(opts.compute);
  const LoadedTheta theta = load_theta(loaded, opts.compute);
  const Eigen::MatrixXd X = read_data(opts.data, net, loaded.description, opts.compute);
  FunctionalDimensionOptions o;
  o.prime = opts.prime_given ? opts.rank.prime : 0;
  o.engine = engine_options(opts.compute, "rank");
  o.engine.progress = phase_progress();
  o.numerical.tolerance = opts.numerical.tolerance;
  o.numerical.min_gap = opts.numerical.min_gap;
  o.numerical.engine.max_memory = o.engine.max_memory;
  if (opts.always_numerical) {
    o.numerical.when = NumericalRankOptions::When::always;
  } else if (opts.no_numerical) {
    o.numerical.when = NumericalRankOptions::When::never;
  }
  FunctionalDimension fd = functional_dimension(loaded.model, theta.theta, X, o);
  if (fd.numerical_skipped) {
    fd.numerical_note += " (--numerical computes it)";
  }
  if (opts.json) {
    print_json(json_header("functional-dimension", 1, loaded.description, theta.source),
               to_json(fd));
  } else {
    print_functional_dimension(fd, loaded.description, theta.source);
  }
}

void print_report(const RankReport& rep, const std::string& description,
                  const std::string& theta_source) {
  const RankCertificate& c = rep.rank_B;
  fmt::print("network      {}\n", description);
  if (!rep.one_parameter_per_edge) {
    fmt::print("d            {} parameters (shared parameters, fixed edges)\n", rep.d);
    fmt::print("h            {} hidden nodes\n", rep.h);
    fmt::print("h_sym        {}  (dimension of the rescaling symmetries)\n", rep.h_sym);
    fmt::print("d - h_sym    {}  (upper bound of rank(B) and rank(dPhi))\n", rep.expected);
  } else {
    fmt::print("d            {} parameters (edges)\n", rep.d);
    fmt::print("h            {} hidden nodes\n", rep.h);
    fmt::print("d - h        {}  (Theorem 1)\n", rep.expected);
  }
  std::string lower;
  switch (c.method) {
    case RankMethod::gram:
      if (c.prime == 0) {
        lower = fmt::format("exact rank over Q of B^T B ({} x {}, integers)", rep.d, rep.d);
        break;
      }
      lower = fmt::format("rank mod p = {}{} of B^T B ({} x {})", c.prime,
                          c.prime == default_prime ? " (2^61 - 1)" : "", rep.d, rep.d);
      break;
    case RankMethod::symmetry:
      lower =
          "d - h_sym: ker B is exactly the space of rescaling changes "
          "(docs/rank.md#weight-sharing), h_sym computed exactly";
      break;
    case RankMethod::path_basis:
      lower = fmt::format(
          "{} paths whose rows of B have distinct leading columns (a triangular "
          "path basis, no path enumerated)",
          c.rows_eliminated);
      break;
    default:
      lower = fmt::format("rank mod p = {}{} of {} row{} of B", c.prime,
                          c.prime == default_prime ? " (2^61 - 1)" : "", c.rows_eliminated,
                          c.rows_eliminated == 1 ? "" : "s");
  }
  fmt::print("rank(B)      {}  {}: {} <= rank(B) <= {}\n",
             c.certified() ? fmt::format("{}", c.lower) : std::string("?"),
             c.certified() ? "certified" : "NOT certified", c.lower, c.upper);
  fmt::print("             lower bound: {}\n", lower);
  if (!rep.one_parameter_per_edge) {
    fmt::print("             upper bound: d - h_sym (B c = 0 for every rescaling change c)\n");
  } else {
    fmt::print(
        "             upper bound: d - {} rescaling vectors z_v, checked in the kernel and "
        "independent{}\n",
        rep.h - static_cast<Index>(c.kernel_failures.size()),
        c.kernel_failures.empty()
            ? ""
            : fmt::format(" ({} failed the check)", c.kernel_failures.size()));
  }
  if (rep.rank_J_exact) {
    const JacobianRankCertificate& x = *rep.rank_J_exact;
    const std::string how =
        x.method == JacobianRankMethod::identity ? "no theta_k is 0: rank(dPhi) = rank(B)"
        : x.method == JacobianRankMethod::elimination
            ? fmt::format("elimination mod {} of the exact entries of dPhi", x.prime)
        : x.method == JacobianRankMethod::zero_pattern
            ? std::string(
                  "zero pattern: rank of B without the zero edges + zero parameters "
                  "crossed alone")
            : std::string("zero weights, not certified: see the note");
    fmt::print("rank(dPhi)   {}  {} at theta = {}: {} <= rank(dPhi) <= {} ({})\n",
               x.certified() ? fmt::format("{}", x.lower) : std::string("?"),
               x.certified() ? "certified" : "NOT certified", theta_source, x.lower, x.upper, how);
  }
  if (rep.rank_J) {
    const NumericalRank& j = *rep.rank_J;
    if (j.status == NumericalRankStatus::failed) {
      fmt::print("numerical    failed: {} singular values are not finite\n", j.non_finite);
    } else {
      fmt::print(
          "numerical    rank {}: {}, tolerance {:.3g}, gap {:.3g} ({}), sigma_max {:.3g}, "
          "sigma_{} {:.3g}\n",
          j.rank, to_string(j.method), j.tolerance, j.gap, to_string(j.status), j.sigma(1),
          rep.expected, j.sigma(rep.expected));
    }
  } else {
    fmt::print("numerical    {}\n", rep.rank_J_note);
  }
  if (!rep.zero_weights.empty()) {
    fmt::print("theta        {} zero coordinate(s)\n", rep.zero_weights.size());
  }
  fmt::print("status       {}: {}\n", to_string(rep.status), rep.explanation);
}

void run_rank(const RankCommandOptions& opts) {
  const LoadedModel loaded = load_model(opts.network, opts.compute);
  if (!opts.data.empty()) {
    run_functional_dimension(opts, loaded);
    return;
  }
  const std::string& description = loaded.description;
  const EngineOptions engine = engine_options(opts.compute, "rank");
  RankOptions ro = opts.rank;
  ro.method = parse_rank_method(opts.method);
  ro.engine = engine;
  ro.engine.progress = phase_progress();

  NumericalRankOptions no = opts.numerical;
  no.method = parse_numerical_rank_method(opts.jacobian_method);
  no.engine.max_memory = engine.max_memory;
  if (opts.always_numerical) {
    no.when = NumericalRankOptions::When::always;
  } else if (opts.no_numerical) {
    no.when = NumericalRankOptions::When::never;
  }
  const LoadedTheta theta = load_theta(loaded, opts.compute);
  const RankReport rep = check_rank_theorem(loaded.model, theta.theta, ro, no,
                                            opts.no_enumerate ? RankRoute::path_free
                                            : opts.enumerate  ? RankRoute::enumerate
                                                              : RankRoute::automatic);

  RankReport shown = rep;
  if (shown.rank_J_skipped) {
    shown.rank_J_note += " (--numerical computes it)";
  }
  if (opts.json) {
    print_json(json_header("rank", 1, description, theta.source), to_json(shown));
  } else {
    print_report(shown, description, theta.source);
  }
  if (is_failure(rep.status)) {
    throw CheckFailed(fmt::format("rank: {}: {}", to_string(rep.status), rep.explanation));
  }
}

void add_rank_command(CLI::App& app) {
  auto opts = std::make_shared<RankCommandOptions>();
  auto* cmd =
      add_network_command(app, "rank",
                          "rank(B) and rank(dPhi) certified exactly, the numerical rank of dPhi "
                          "beside them, and Theorem 1: rank(dPhi) = rank(B) = d - h (exit 1 when "
                          "exact ranks contradict it or rank(B) is not certified). With shared "
                          "parameters (CNNs, ONNX models) rank(B) = d - h_sym (rescaling "
                          "symmetries), certified without unrolling; zero weights are handled "
                          "exactly (status theta_in_null_set when rank(dPhi) drops; docs/rank.md)",
                          opts->network, opts->compute, TakesTheta::yes);
  add_json_flag(*cmd, opts->json, "d, h, h_sym, expected, rank_B, ..., status, explanation");
  auto* no_enumerate = cmd->add_flag(
      "--no-enumerate", opts->no_enumerate,
      "Certify rank(B) without enumerating paths (a triangular path basis, or B^T B by dynamic "
      "programming with --method gram; with shared parameters, and on a layer graph (never "
      "unrolled), rank(B) = d - h_sym by the symmetry theorem; rank_J is then null); chosen "
      "automatically when the paths do not fit in memory, and with shared parameters unless "
      "the numerical rank of dPhi, which needs them, would run (within about 10 s, or "
      "--numerical)");
  auto* enumerate =
      cmd->add_flag("--enumerate", opts->enumerate,
                    "Enumerate the paths (unrolling a layer graph): rank(B) from B, rank(dPhi) "
                    "exactly and numerically; TooLarge when they do not fit in --max-memory")
          ->excludes(no_enumerate);
  auto* numerical = cmd->add_flag("--numerical", opts->always_numerical,
                                  "Always compute the numerical rank of dPhi (by default it is "
                                  "skipped when its dense linear algebra would take more than "
                                  "about 10 s; the exact ranks are certified without it)");
  cmd->add_flag("--no-numerical", opts->no_numerical,
                "Never compute the numerical rank of dPhi (only the exact ranks)")
      ->excludes(numerical);
  auto* data =
      cmd->add_option("--data", opts->data,
                      "The functional dimension on this batch X instead (.npy or .csv/.txt, n x r: "
                      "one sample a row, a layer graph's input flattened): the rank of J_X = d "
                      "f(X) / d theta, certified between a rank mod p of its exact rows and "
                      "min(q x distinct samples, rank(dPhi), d - the kernel known exactly) "
                      "(docs/functional-dimension.md)");
  data->excludes(no_enumerate);
  data->excludes(enumerate);
  add_prime_option(*cmd, opts->rank.prime,
                   "The prime of the modular elimination (a prime below 2^63; default 2^61 - 1; "
                   "with --data, a random prime in [2^60, 2^61), which also bounds the "
                   "probability that the rank mod p is not the rank)");
  cmd->add_option("--method", opts->method,
                  "Lower bound of rank(B): auto (B when enumerated, else the path basis, or the "
                  "symmetry theorem with shared parameters), skeleton (B, sparse elimination), "
                  "gram (B^T B, dense elimination), path-basis (d - h paths with distinct leading "
                  "columns, no enumeration), symmetry (d - h_sym, h_sym exact: ker B is the "
                  "rescaling changes)")
      ->check(CLI::IsMember({"auto", "skeleton", "gram", "path-basis", "symmetry"}))
      ->excludes(data);
  cmd->add_option("--jacobian-method", opts->jacobian_method,
                  "Singular values of dPhi: auto, svd (dense), eig (eigenvalues of dPhi^T dPhi)")
      ->check(CLI::IsMember({"auto", "svd", "eig"}))
      ->excludes(data);
  cmd->add_option("--tolerance", opts->numerical.tolerance,
                  "Absolute tolerance on the singular values of dPhi (default: relative to the "
                  "largest, see docs/rank.md)")
      ->check(positive_number);
  cmd->add_option("--min-gap", opts->numerical.min_gap,
                  "rank(dPhi) is inconclusive when the gap at the cut is below this")
      ->capture_default_str()
      ->check(positive_number);
  cmd->callback([opts, cmd] {
    opts->prime_given = cmd->count("--prime") > 0;
    run_rank(*opts);
  });
}

const CommandRegistration rank_registration{40, add_rank_command};

}  // namespace

}  // namespace pathlift::cli
