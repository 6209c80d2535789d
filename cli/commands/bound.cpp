// pathlift bound: the path-norm toolkit's generalization bound (Theorem 3.1 and Remark 3.1) with
// every constant read from the model (generalization.hpp); a layer graph is not unrolled.

#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "../common.hpp"
#include "../registry.hpp"
#include "pathlift/generalization.hpp"

namespace pathlift::cli {

namespace {

struct BoundOptions : NetworkCommandOptions {
  double samples = 0;
  double input_bound = 0;
};

void run_bound(const BoundOptions& opts) {
  const LoadedModel model = load_model(opts.network, opts.compute);
  const LoadedTheta theta = load_theta(model, opts.compute);
  GeneralizationBoundOptions o;
  o.samples = opts.samples;
  o.input_bound = opts.input_bound;
  o.engine = engine_options(opts.compute, "generalization bound");
  o.engine.progress = phase_progress();
  const GeneralizationBound r = generalization_bound(model.model, theta.theta, o);
  if (opts.json) {
    auto j = json_header("bound", 1, model.description, theta.source);
    j["d"] = model.model.num_params();
    j.update(nlohmann::ordered_json::parse(to_json(r, -1)));
    print_json(j);
    return;
  }
  fmt::print("network      {} (theta: {})\n", model.description, theta.source);
  fmt::print("D            {}  (longest input-to-output path, edges{})\n", r.depth,
             r.depth_exact ? "" : "; an upper bound from the layers");
  fmt::print("P            {}  (distinct k of the k-max-pooling neurons, max pooling k = 1)\n",
             r.max_pool_types);
  fmt::print("K            {}  (most inputs of a *-max-pooling neuron)\n", r.max_pool_kernel);
  fmt::print("M            {}  (most *-max-pooling neurons on one path)\n", r.max_pools_on_a_path);
  fmt::print("d_in, d_out  {}, {}\n", r.inputs, r.outputs);
  fmt::print("n, B         {}, {}\n", r.samples, r.input_bound);
  fmt::print("C            {:.10g}\n", r.constant);
  fmt::print("coefficient  {:.10g}  (4 C max(B, 1) / sqrt(n))\n", r.coefficient);
  fmt::print("||Phi||_1    {}\n", scaled_text(r.path_norm));
  fmt::print("bound        {}  (Theorem 3.1: coefficient x ||Phi||_1)\n", scaled_text(r.bound));
  fmt::print("sharpened    {}  (Remark 3.1: C = {:.10g}, coefficient {:.10g})\n",
             scaled_text(r.sharp_bound), r.sharp_constant, r.sharp_coefficient);
  fmt::print("assumptions\n");
  for (const std::string& a : generalization_assumptions()) {
    fmt::print("  - {}\n", a);
  }
}

void add_bound_command(CLI::App& app) {
  auto opts = std::make_shared<BoundOptions>();
  auto* cmd = add_network_command(
      app, "bound",
      "The generalization bound of the path-norm toolkit (Theorem 3.1, and Remark 3.1's "
      "sharpened form): 4 C max(B, 1) / sqrt(n) x ||Phi(theta)||_1 with D, P, K, d_in and d_out "
      "read from the model (docs/generalization.md); a layer graph is not unrolled",
      opts->network, opts->compute, TakesTheta::yes);
  cmd->add_option("--samples", opts->samples, "n, the number of training samples")
      ->required()
      ->check(positive_number);
  cmd->add_option("--input-bound", opts->input_bound,
                  "B, the largest ||x||_inf over the training inputs (after normalization)")
      ->required()
      ->check(non_negative_number);
  add_json_flag(*cmd, opts->json,
                "d, D, D_exact, P, K, M, d_in, d_out, n, B, C, coefficient, l1_path_norm, bound, "
                "their sharpened forms and assumptions");
  cmd->callback([opts] { run_bound(*opts); });
}

const CommandRegistration bound_registration{61, add_bound_command};

}  // namespace

}  // namespace pathlift::cli
