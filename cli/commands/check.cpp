// pathlift check: the paper's identities verified at theta (Lemma 1, Proposition 2,
// Corollary 1, finite differences). Exit 1 if one fails.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../common.hpp"
#include "../registry.hpp"
#include "pathlift/checks.hpp"

namespace pathlift::cli {

namespace {

struct CheckCommandOptions : NetworkCommandOptions {
  Index samples = 2000;
  double tolerance = CheckOptions{}.tolerance;
};

/// Runs and prints the checks; CheckFailed naming the failed ones.
void run_check(const CheckCommandOptions& opts) {
  const LoadedNetwork loaded = load_network(opts.network, opts.compute);
  const Network& net = *loaded.dag;
  const std::string& description = loaded.description;
  const LoadedTheta theta = load_theta(net, opts.compute);
  CheckOptions co;
  co.fd_samples = opts.samples;
  co.tolerance = opts.tolerance;
  co.engine = engine_options(opts.compute, "checks");
  const auto results = check_identities(net, theta.theta, co);
  if (opts.json) {
    nlohmann::ordered_json j = json_header("check", 1, description, theta.source);
    j.update(nlohmann::ordered_json::parse(to_json(results, -1)));
    j["status"] = to_string(checks_status(results));
    print_json(j);
  } else {
    fmt::print("checks on {} (theta: {})\n", description, theta.source);
    for (const auto& r : results) {
      fmt::print("  {:<52} {}\n", r.claim, format_check(r));
    }
    fmt::print("{}\n", checks_verdict(results));
  }
  throw_unless_passed(results);
}

void add_check_command(CLI::App& app) {
  auto opts = std::make_shared<CheckCommandOptions>();
  auto* cmd = add_network_command(
      app, "check",
      "Verify Lemma 1, Proposition 2, Corollary 1 and dPhi against finite differences (exit 1 if "
      "one fails)",
      opts->network, opts->compute, TakesTheta::yes);
  cmd->add_flag("--json", opts->json, "Print one JSON object");
  cmd->add_option("--samples", opts->samples, "Entries of dPhi compared with finite differences")
      ->check(positive_number);
  cmd->add_option("--tolerance", opts->tolerance,
                  "Relative tolerance of Lemma 1 and Proposition 2 (float64 rounding)")
      ->check(non_negative_number)
      ->default_val(CheckOptions{}.tolerance);
  cmd->callback([opts] { run_check(*opts); });
}

const CommandRegistration check_registration{30, add_check_command};

}  // namespace

}  // namespace pathlift::cli
