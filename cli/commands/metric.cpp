// pathlift metric: the l1 path-metric ||Phi(theta) - Phi(theta2)||_1 and the Lipschitz constant
// C of ||f_theta(x) - f_theta2(x)||_1 <= max(||x||_inf, 1) C (path_metric.hpp), by dynamic
// programming; a layer graph is not unrolled.

#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "../common.hpp"
#include "../registry.hpp"
#include "pathlift/error.hpp"
#include "pathlift/path_free.hpp"
#include "pathlift/path_metric.hpp"

namespace pathlift::cli {

namespace {

struct MetricOptions {
  NetworkOptions network;
  ComputeOptions compute;
  std::string theta2_file;
  bool json = false;
};

void run_metric(const MetricOptions& opts) {
  const LoadedModel model = load_model(opts.network, opts.compute);
  const LoadedTheta theta = load_theta(model, opts.compute);
  ComputeOptions second = opts.compute;
  second.theta_file = opts.theta2_file;
  second.seed.reset();
  second.theta_flag = "--theta2";
  second.theta_name = "theta2";
  const LoadedTheta theta2 = load_theta(model, second);
  const EngineOptions engine = engine_options(opts.compute, "path-metric");
  const PathMetric metric = path_metric(model.model, theta.theta, theta2.theta, engine);
  const LipschitzBound bound = lipschitz_bound(model.model, theta.theta, theta2.theta, engine);
  if (opts.json) {
    auto j = json_header("metric", 1, model.description, theta.source);
    j["theta2"] = "--theta2 " + opts.theta2_file;
    j["d"] = model.model.num_params();
    j.update(nlohmann::ordered_json::parse(to_json(metric, -1)));
    j.update(nlohmann::ordered_json::parse(to_json(bound, -1)));
    print_json(j);
    return;
  }
  fmt::print("network     {} (theta: {}; theta2: --theta2 {})\n", model.description, theta.source,
             opts.theta2_file);
  fmt::print("metric      {}  ({})\n", scaled_text(metric.value),
             metric.exact ? "exact: one of theta, theta2 dominates the other, ||Phi(theta)||_1 - "
                            "||Phi(theta2)||_1"
                          : "an upper bound: the telescoping sum over the edges");
  fmt::print("lipschitz   {}  (||f_theta(x) - f_theta2(x)||_1 <= max(||x||_inf, 1) C{})\n",
             scaled_text(bound.constant),
             bound.sign_changes == 0
                 ? std::string()
                 : fmt::format("; {} coordinates change sign: through theta with them set to 0",
                               bound.sign_changes));
}

void add_metric_command(CLI::App& app) {
  auto opts = std::make_shared<MetricOptions>();
  auto* cmd = add_network_command(
      app, "metric",
      "The l1 path-metric ||Phi(theta) - Phi(theta2)||_1 (exact when one of the two dominates "
      "the other, as pruning does; else an upper bound) and the Lipschitz constant C of "
      "||f_theta(x) - f_theta2(x)||_1 <= max(||x||_inf, 1) C for every input x "
      "(docs/path_metric.md), by dynamic programming; a layer graph is not unrolled",
      opts->network, opts->compute, TakesTheta::yes);
  cmd->add_option("--theta2", opts->theta2_file,
                  "The second parameter vector (a pruned or quantized theta): a file as --theta")
      ->required();
  add_json_flag(*cmd, opts->json,
                "d, metric, log10_metric, exact, lipschitz_constant, log10_lipschitz_constant, "
                "lipschitz_exact, sign_changes");
  cmd->callback([opts] { run_metric(*opts); });
}

const CommandRegistration metric_registration{62, add_metric_command};

}  // namespace

}  // namespace pathlift::cli
