// pathlift norm: path-norms ||Phi(theta)||_s and the path count, by dynamic programming (no path
// is enumerated), right beyond double's range (as log10). A layer graph (--onnx, a
// pathlift-layers file) is not unrolled, except for --per-node's norms per input node.

#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "../common.hpp"
#include "../registry.hpp"
#include "pathlift/counting.hpp"
#include "pathlift/error.hpp"
#include "pathlift/norms.hpp"
#include "pathlift/path_free.hpp"
#include "pathlift/path_shares.hpp"

namespace pathlift::cli {

namespace {

struct NormOptions {
  NetworkOptions network;
  ComputeOptions compute;
  std::vector<double> s{1.0, 2.0};
  bool json = false;
  bool per_node = false;
  std::string shares;  // --shares parameter|node|channel|layer
};

using Json = nlohmann::ordered_json;

/// What norm prints, from a DAG or from a layer graph.
struct NormResults {
  Count paths;
  std::vector<PathNorm> norms;
  std::vector<std::string> output_names;  // of per_output's entries
  std::vector<std::string> input_names;   // of per_input's entries (--per-node)
};

/// P and the norms (path_free.hpp: a layer graph layer by layer, without unrolling). The norms
/// per input node are sums per node of the DAG: on a layer graph --per-node unrolls it.
NormResults norms_of(const LoadedModel& loaded, std::span<const double> theta,
                     const NormOptions& opts) {
  const Model& model = loaded.model;
  NormResults r;
  r.paths = count_paths_total(model, engine_options(opts.compute, "counting paths"));
  const PathNormDetail parts =
      opts.per_node ? PathNormDetail::inputs_and_outputs : PathNormDetail::outputs;
  const Network* net = model.dag();
  if (opts.per_node && net == nullptr) {
    try {
      net = &loaded.network(opts.compute);
    } catch (const TooLarge& e) {
      throw TooLarge(fmt::format("--per-node: the norms per input node are sums over the "
                                 "unrolled network's input nodes (without --per-node, the norms "
                                 "and P are computed without unrolling), and {}",
                                 e.what()),
                     e.reason());
    }
  }
  for (double s : opts.s) {
    r.norms.push_back(path_norm(model, theta, s, parts,
                                engine_options(opts.compute, fmt::format("norm s={}", s))));
    if (!opts.per_node) {
      // Printed only with --per-node: not held beside the next norm (an output layer of 10^8
      // entries holds 1.6 GB of them).
      std::vector<ScaledReal>().swap(r.norms.back().per_output);
    }
  }
  const std::size_t outputs =
      r.norms.empty() || !opts.per_node ? 0 : r.norms.front().per_output.size();
  for (std::size_t i = 0; i < outputs; ++i) {
    // A layer graph's outputs are the unrolled DAG's y0, y1, ...
    r.output_names.push_back(model.dag() != nullptr ? net->node_name(net->outputs()[i])
                                                    : fmt::format("y{}", i));
  }
  if (opts.per_node) {
    for (const NodeId v : net->inputs()) {
      r.input_names.push_back(net->node_name(v));
    }
  }
  return r;
}

void run_norm(const NormOptions& opts) {
  const LoadedModel model = load_model(opts.network, opts.compute);
  const std::string& description = model.description;
  const LoadedTheta theta = load_theta(model, opts.compute);
  if (opts.s.empty()) {
    throw std::invalid_argument("--s needs at least one exponent, e.g. --s 1,2");
  }
  const NormResults results = norms_of(model, theta.theta, opts);
  const Count& p = results.paths;
  const std::vector<PathNorm>& norms = results.norms;

  std::optional<PathNormShares> shares;
  if (!opts.shares.empty()) {
    const double s = opts.s.front();
    shares = path_norm_shares(model.model, theta.theta, s, parse_shares_by(opts.shares),
                              engine_options(opts.compute, "path-norm shares"));
  }
  if (opts.json) {
    Json j = json_header("norm", 1, description, theta.source);
    j["P"] = count_json(p);
    j.update(Json::parse(to_json(norms, results.output_names, results.input_names, -1)));
    j["P_exact"] = p.exact();
    j["log10_P"] = p.log10();
    j["d"] = model.model.num_params();
    if (shares) {
      j["shares"] = Json::parse(to_json(*shares, -1));
    }
    print_json(j);
    return;
  }

  fmt::print("network     {} (theta: {})\n", description, theta.source);
  fmt::print("P           {} paths{}\n", p.to_string(),
             p.exact() ? "" : fmt::format(" (log10 P = {:.6f})", p.log10()));
  for (const auto& n : norms) {
    const std::string name = n.s == 0 ? "paths (s=0)" : fmt::format("||Phi||_{}", s_key(n.s));
    fmt::print("{:<11} {}\n", name, scaled_text(n.norm));
    if (!opts.per_node) {
      continue;
    }
    for (std::size_t i = 0; i < n.per_output.size(); ++i) {
      fmt::print("  output {:<12} {}\n", results.output_names[i], scaled_text(n.per_output[i]));
    }
    for (std::size_t i = 0; i < n.per_input.size(); ++i) {
      fmt::print("  input  {:<12} {}\n", results.input_names[i], scaled_text(n.per_input[i]));
    }
  }
  if (shares) {
    fmt::print("shares      of ||Phi||_{}^{} by {}\n", s_key(shares->s), s_key(shares->s),
               to_string(shares->by));
    for (std::size_t i = 0; i < shares->shares.size(); ++i) {
      fmt::print("  {:<24} {:.6f}\n", shares->name(i), shares->shares[i]);
    }
  }
}

void add_norm_command(CLI::App& app) {
  auto opts = std::make_shared<NormOptions>();
  auto* cmd = add_network_command(
      app, "norm",
      "Path-norms ||Phi(theta)||_s = (sum_p |Phi_p|^s)^(1/s) and P, by dynamic programming "
      "(no path enumerated; right beyond 1e308, as log10). An ONNX model or a pathlift-layers "
      "file is computed layer by layer, without unrolling",
      opts->network, opts->compute, TakesTheta::yes);
  cmd->add_option("--s", opts->s,
                  "Exponents s >= 0, comma separated (default 1,2); s = 0 counts the paths, "
                  "s = inf gives max_p |Phi_p| (a max-plus DP; a layer graph is unrolled for it)")
      ->delimiter(',')
      ->check(any_number);
  cmd->add_flag("--per-node", opts->per_node,
                "Also the norm of the paths ending at each output and starting at each input (on "
                "a layer graph, the per-input norms unroll it, within --max-memory)");
  cmd->add_option("--shares", opts->shares,
                  "Also each layer's, channel's, parameter's or node's share of ||Phi||_s^s for "
                  "the first --s (layer, channel: a layer graph's, without unrolling)")
      ->check(CLI::IsMember({"layer", "channel", "parameter", "node"}));
  add_json_flag(*cmd, opts->json,
                "P, norms {\"1\": x, ...}, log10_norms, ...; a norm beyond double's range is "
                "null in norms");
  cmd->callback([opts] { run_norm(*opts); });
}

const CommandRegistration norm_registration{60, add_norm_command};

}  // namespace

}  // namespace pathlift::cli
