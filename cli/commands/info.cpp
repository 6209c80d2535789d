// pathlift info: the network's summary and its path counts (by dynamic programming).

#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "../common.hpp"
#include "../registry.hpp"
#include "pathlift/counting.hpp"

namespace pathlift::cli {

namespace {

struct InfoOptions {
  NetworkOptions network;
  bool json = false;
};

nlohmann::ordered_json count_json(const Count& c) {
  if (c.exact()) {
    return c.value();
  }
  const double x = c.approx();
  return std::isfinite(x) ? nlohmann::ordered_json(x) : nlohmann::ordered_json(nullptr);
}

void run_info(const InfoOptions& opts) {
  const auto [net, description] = load_network(opts.network);
  const PathCounts counts = count_paths(net);
  const Index d = net.num_params();
  const Index h = net.num_hidden();
  const bool per_edge = net.one_parameter_per_edge();
  const auto num_bias = static_cast<Index>(net.bias_nodes().size());
  const auto num_inputs = static_cast<Index>(net.inputs().size());
  const auto num_outputs = static_cast<Index>(net.outputs().size());

  if (opts.json) {
    nlohmann::ordered_json j;
    j["network"] = description;
    j["nodes"] = net.num_nodes();
    j["inputs"] = num_inputs;
    j["bias"] = num_bias;
    j["hidden"] = h;
    j["outputs"] = num_outputs;
    j["d"] = d;
    j["edges"] = net.num_edges();
    j["h"] = h;
    // d - h is Theorem 1's rank with one parameter per edge; otherwise `rank` gives d - h_sym.
    j["d_minus_h"] = per_edge ? nlohmann::ordered_json(d - h) : nlohmann::ordered_json(nullptr);
    j["P"] = count_json(counts.paths);
    j["P_exact"] = counts.paths.exact();
    j["log10_P"] = counts.paths.log10();
    j["nnz"] = count_json(counts.nnz);
    j["nnz_exact"] = counts.nnz.exact();
    j["max_path_length"] = counts.max_path_length;
    nlohmann::ordered_json hist = nlohmann::ordered_json::object();
    for (std::size_t l = 0; l < counts.length_histogram.size(); ++l) {
      if (!counts.length_histogram[l].is_zero()) {
        hist[std::to_string(l)] = count_json(counts.length_histogram[l]);
      }
    }
    j["length_histogram"] = hist;
    fmt::print("{}\n", j.dump(2));
    return;
  }

  fmt::print("network          {}\n", description);
  const auto plural = [](Index n, const char* word) {
    return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
  };
  fmt::print("nodes            {}: {} ({} bias), {} hidden, {}\n", net.num_nodes(),
             plural(num_inputs, "input"), num_bias, h, plural(num_outputs, "output"));
  if (per_edge) {
    fmt::print("d                {} parameters (edges)\n", d);
  } else {
    fmt::print("d                {} parameters on {} edges (shared parameters, fixed edges)\n", d,
               net.num_edges());
  }
  fmt::print("h                {} hidden nodes\n", h);
  if (per_edge) {
    fmt::print("d - h            {}  (rank of B and of dPhi, Theorem 1)\n", d - h);
  } else {
    fmt::print("rank bound       d - h_sym (rescaling symmetries): see `pathlift rank`\n");
  }
  fmt::print("P                {} paths\n", counts.paths.to_string());
  if (!counts.paths.exact()) {
    fmt::print("                 (more than 2^64: log10 P = {:.6f})\n", counts.paths.log10());
  }
  if (per_edge) {
    fmt::print("nnz(B)           {}\n", counts.nnz.to_string());
  } else {
    fmt::print("path edges       {}  (the sum of the path lengths, fixed edges included)\n",
               counts.nnz.to_string());
  }
  fmt::print("max path length  {}\n", counts.max_path_length);
  fmt::print("path lengths     ");
  bool first = true;
  for (std::size_t l = 0; l < counts.length_histogram.size(); ++l) {
    if (!counts.length_histogram[l].is_zero()) {
      fmt::print("{}{}: {}", first ? "" : ", ", l, counts.length_histogram[l].to_string());
      first = false;
    }
  }
  fmt::print("\n");
}

}  // namespace

namespace {

void add_info_command(CLI::App& app) {
  auto opts = std::make_shared<InfoOptions>();
  auto* cmd = app.add_subcommand("info", "Summary of the network and its path counts (by DP)");
  add_network_options(*cmd, opts->network);
  cmd->add_flag("--json", opts->json,
                "Print one JSON object (keys nodes, inputs, hidden, outputs, d, edges, h, P, nnz, "
                "max_path_length, length_histogram)");
  cmd->callback([opts] { run_info(*opts); });
}

const CommandRegistration registration{10, add_info_command};

}  // namespace

}  // namespace pathlift::cli
