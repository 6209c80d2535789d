// pathlift rescale: a rescaling of the hidden units (per channel class with weight sharing)
// that balances the network before training, the function unchanged: PathCond or ENorm
// (balance.hpp). The rescaled theta goes to -o.

#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "../common.hpp"
#include "../matrix_io.hpp"
#include "../registry.hpp"
#include "pathlift/balance.hpp"

namespace pathlift::cli {

namespace {

struct RescaleOptions {
  NetworkOptions network;
  ComputeOptions compute;
  bool path_cond = false;
  bool enorm = false;
  std::string output;
  Index max_sweeps = BalanceOptions{}.max_sweeps;
  double tolerance = BalanceOptions{}.tolerance;
  bool json = false;
};

void run_rescale(const RescaleOptions& opts) {
  if (opts.path_cond == opts.enorm) {
    throw std::invalid_argument("rescale needs one of --path-cond and --enorm");
  }
  if (opts.output.empty()) {
    throw std::invalid_argument(
        "rescale needs -o FILE for the rescaled theta (.npy, .txt, .csv; - for stdout)");
  }
  require_one_stdout_result(opts.json, opts.output);
  output_format(opts.output, Content::vector);  // before the work
  BalanceOptions o;
  o.max_sweeps = opts.max_sweeps;
  o.tolerance = opts.tolerance;
  check_balance_options(o);
  const LoadedModel model = load_model(opts.network, opts.compute);
  const LoadedTheta theta = load_theta(model, opts.compute);
  o.engine = engine_options(opts.compute, opts.path_cond ? "PathCond" : "ENorm");
  const BalanceReport r =
      opts.path_cond ? path_cond(model.model, theta.theta, o) : enorm(model.model, theta.theta, o);
  write_vector(opts.output, std::span<const double>(r.theta.data(), r.theta.size()));
  const char* method = opts.path_cond ? "path_cond" : "enorm";
  if (opts.json) {
    auto j = json_header("rescale", 1, model.description, theta.source);
    j["method"] = method;
    j["output"] = opts.output;
    j["d"] = model.model.num_params();
    j.update(nlohmann::ordered_json::parse(to_json(r, -1)));
    print_json(j);
    return;
  }
  std::FILE* text = text_stream(opts.output);
  fmt::print(text,
             "{}: {} classes, {} sweeps{}, criterion {:.10g} -> {:.10g}, stationarity {:.2g}\n",
             method, r.classes, r.sweeps, r.converged ? "" : " (not converged)", r.criterion_before,
             r.criterion_after, r.stationarity);
  fmt::print(text, "rescaled theta ({} entries, the same function) written to {}\n", r.theta.size(),
             opts.output);
}

void add_rescale_command(CLI::App& app) {
  auto opts = std::make_shared<RescaleOptions>();
  auto* cmd = add_network_command(
      app, "rescale",
      "Rescale the hidden units (per channel class with weight sharing) to balance the network "
      "before training, the function unchanged: --path-cond (PathCond: the path kernel's "
      "diagonal conditioned) or --enorm (ENorm: sum of squared weights least); the rescaled "
      "theta to -o (docs/balance.md)",
      opts->network, opts->compute, TakesTheta::yes);
  auto* pc = cmd->add_flag("--path-cond", opts->path_cond,
                           "PathCond: minimise n log(sum_k G_kk) - sum_k log G_kk (G = the path "
                           "kernel's diagonal)");
  cmd->add_flag("--enorm", opts->enorm, "ENorm: minimise sum_k theta_k^2")->excludes(pc);
  cmd->add_option("-o,--output", opts->output,
                  "The rescaled theta: .npy, .txt, .csv (- for stdout)");
  cmd->add_option("--max-sweeps", opts->max_sweeps,
                  "Iterations at most: Newton steps on the log-scales, or coordinate sweeps "
                  "where one cannot help (an integer >= 0)")
      ->capture_default_str();
  cmd->add_option("--tolerance", opts->tolerance,
                  "Stop, converged, once the stationarity (the largest relative violation of "
                  "the optimum's condition over the classes) is at most this (a finite number "
                  ">= 0)")
      ->capture_default_str();
  add_json_flag(*cmd, opts->json,
                "method, output, d, classes, sweeps, converged, criterion_before, "
                "criterion_after, stationarity");
  cmd->callback([opts] { run_rescale(*opts); });
}

const CommandRegistration rescale_registration{63, add_rescale_command};

}  // namespace

}  // namespace pathlift::cli
