// pathlift norm: path-norms ||Phi(theta)||_s and the path count, by dynamic programming (no path
// is enumerated), right beyond double's range (as log10).

#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../common.hpp"
#include "../registry.hpp"
#include "pathlift/counting.hpp"
#include "pathlift/norms.hpp"

namespace pathlift::cli {

namespace {

struct NormOptions {
  NetworkOptions network;
  ComputeOptions compute;
  std::vector<double> s{1.0, 2.0};
  bool json = false;
  bool per_node = false;
};

using Json = nlohmann::ordered_json;

/// The JSON key of an exponent: "1", "2", "0.5" (shortest round-trip form).
std::string s_key(double s) {
  return fmt::format("{}", s);
}

/// A number, or null when it is not a finite double (JSON has no inf).
Json finite_or_null(double x) {
  return std::isfinite(x) ? Json(x) : Json(nullptr);
}

/// The value when it fits in a double, else null (its log10 is reported beside it).
Json scaled_json(const ScaledReal& x) {
  return x.fits_double() ? Json(x.value()) : Json(nullptr);
}

Json count_json(const Count& c) {
  if (c.exact()) {
    return c.value();
  }
  return finite_or_null(c.approx());
}

std::string scaled_text(const ScaledReal& x) {
  if (x.is_zero()) {
    return "0";
  }
  if (x.fits_double()) {
    return fmt::format("{:.10e}  (log10 {:.6f})", x.value(), x.log10());
  }
  return fmt::format("10^{:.10f}  (beyond double's range)", x.log10());
}

void run_norm(const NormOptions& opts) {
  const auto [net, description] = load_network(opts.network);
  const LoadedTheta theta = load_theta(net, opts.compute);
  if (opts.s.empty()) {
    throw std::invalid_argument("--s needs at least one exponent, e.g. --s 1,2");
  }
  const Count p = count_paths_total(net);
  const PathNormDetail parts =
      opts.per_node ? PathNormDetail::inputs_and_outputs : PathNormDetail::outputs;
  std::vector<PathNorm> norms;
  norms.reserve(opts.s.size());
  for (double s : opts.s) {
    norms.push_back(path_norm(net, theta.theta, s, parts));
  }

  if (opts.json) {
    Json j;
    j["P"] = count_json(p);
    Json values = Json::object();
    Json logs = Json::object();
    for (const auto& n : norms) {
      values[s_key(n.s)] = scaled_json(n.norm);
      logs[s_key(n.s)] = finite_or_null(n.norm.log10());
    }
    j["norms"] = values;
    j["log10_norms"] = logs;
    j["P_exact"] = p.exact();
    j["log10_P"] = p.log10();
    j["network"] = description;
    j["theta"] = theta.source;
    j["d"] = net.num_params();
    if (opts.per_node) {
      // Per node: {"<s>": {"<node name>": log10 of the norm restricted to its paths}}.
      Json per_output = Json::object();
      Json per_input = Json::object();
      for (const auto& n : norms) {
        Json o = Json::object();
        for (std::size_t i = 0; i < n.per_output.size(); ++i) {
          o[net.node_name(net.outputs()[i])] = finite_or_null(n.per_output[i].log10());
        }
        Json in = Json::object();
        for (std::size_t i = 0; i < n.per_input.size(); ++i) {
          in[net.node_name(net.inputs()[i])] = finite_or_null(n.per_input[i].log10());
        }
        per_output[s_key(n.s)] = o;
        per_input[s_key(n.s)] = in;
      }
      j["log10_per_output"] = per_output;
      j["log10_per_input"] = per_input;
    }
    fmt::print("{}\n", j.dump(2));
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
      fmt::print("  output {:<12} {}\n", net.node_name(net.outputs()[i]),
                 scaled_text(n.per_output[i]));
    }
    for (std::size_t i = 0; i < n.per_input.size(); ++i) {
      fmt::print("  input  {:<12} {}\n", net.node_name(net.inputs()[i]),
                 scaled_text(n.per_input[i]));
    }
  }
}

void add_norm_command(CLI::App& app) {
  auto opts = std::make_shared<NormOptions>();
  auto* cmd = app.add_subcommand(
      "norm",
      "Path-norms ||Phi(theta)||_s = (sum_p |Phi_p|^s)^(1/s) and P, by dynamic programming "
      "(no path enumerated; right beyond 1e308, as log10)");
  add_network_options(*cmd, opts->network);
  add_theta_options(*cmd, opts->compute);
  cmd->add_option("--s", opts->s,
                  "Exponents s >= 0, comma separated (default 1,2); s = 0 counts the paths")
      ->delimiter(',');
  cmd->add_flag("--per-node", opts->per_node,
                "Also the norm of the paths ending at each output and starting at each input");
  cmd->add_flag("--json", opts->json,
                "Print one JSON object: {\"P\": ..., \"norms\": {\"1\": x, ...}, \"log10_norms\": "
                "{...}} (a norm beyond double's range is null in norms)");
  cmd->callback([opts] { run_norm(*opts); });
}

const CommandRegistration registration{60, add_norm_command};

}  // namespace

}  // namespace pathlift::cli
