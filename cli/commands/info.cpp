// pathlift info: the network's summary and its path counts (by dynamic programming). A layer
// graph (--onnx, a pathlift-layers file) is summarised without unrolling: the node and edge
// counts of its unrolled DAG come from unrolled_size(), the path counts from the layer DP.

#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "../common.hpp"
#include "../registry.hpp"
#include "pathlift/counting.hpp"
#include "pathlift/error.hpp"
#include "pathlift/summary.hpp"

namespace pathlift::cli {

namespace {

using InfoOptions = NetworkCommandOptions;

/// memory_note() after a refusal for memory; nothing after one for work.
std::string refusal_note(const PathCounts& counts) {
  return counts.length_histogram_memory_bound ? memory_note() : "";
}

void run_info(const InfoOptions& opts) {
  const LoadedModel model = load_model(opts.network, opts.compute);
  const std::string& description = model.description;
  EngineOptions options = engine_options(opts.compute, "counting paths");
  options.progress = phase_progress();
  const ModelSummary sum = summarise(model.model, options);
  const PathCounts& counts = sum.counts;
  const Index d = sum.d;
  const Index h = sum.hidden;
  const bool per_edge = sum.per_edge;
  const Index num_bias = sum.bias;
  const Index num_inputs = sum.inputs;
  const Index num_outputs = sum.outputs;

  if (opts.json) {
    nlohmann::ordered_json j = json_header("info", 1, description, std::nullopt);
    j.update(nlohmann::ordered_json::parse(to_json(sum, -1)));
    if (!counts.length_histogram_refused.empty()) {
      j["length_histogram_refused"] = counts.length_histogram_refused + refusal_note(counts);
    }
    print_json(j);
    return;
  }

  fmt::print("network          {}\n", description);
  if (sum.layers) {
    fmt::print(
        "layers           {}  (a layer graph: the counts below are its unrolled DAG's, "
        "computed without unrolling)\n",
        *sum.layers);
  }
  fmt::print("nodes            {}: {} ({} bias), {} hidden, {}\n", sum.nodes,
             counted(num_inputs, "input"), num_bias, h, counted(num_outputs, "output"));
  if (per_edge) {
    fmt::print("d                {} parameters (edges)\n", d);
  } else {
    fmt::print("d                {} parameters on {} edges (shared parameters, fixed edges)\n", d,
               sum.edges);
  }
  fmt::print("h                {} hidden nodes\n", h);
  if (per_edge) {
    fmt::print("d - h            {}  (rank of B and of dPhi, Theorem 1)\n", d - h);
  } else {
    if (sum.h_sym) {
      fmt::print("h_sym            {}  (dimension of the rescaling symmetries)\n", *sum.h_sym);
      fmt::print("d - h_sym        {}  (rank of B, and of dPhi when no weight is 0)\n",
                 d - *sum.h_sym);
    } else {
      fmt::print("h_sym            not computed: {}\n", sum.h_sym_refused);
    }
  }
  fmt::print("P                {} paths\n", counts.paths.to_string());
  if (!counts.paths.exact()) {
    // The layer DP counts exactly below 2^53, in floating point beyond; the DAG's below 2^64.
    fmt::print("                 (more than 2^{}: log10 P = {:.6f})\n", sum.layers ? 53 : 64,
               counts.paths.log10());
  }
  if (per_edge) {
    fmt::print("nnz(B)           {}\n", counts.nnz.to_string());
  } else {
    fmt::print("path edges       {}  (the sum of the path lengths, fixed edges included)\n",
               counts.nnz.to_string());
  }
  if (counts.max_path_length >= 0) {
    fmt::print("max path length  {}\n", counts.max_path_length);
  } else {
    fmt::print("max path length  not computed (it comes with the path lengths)\n");
  }
  fmt::print("path lengths     ");
  if (!counts.length_histogram_refused.empty()) {
    fmt::print("not computed: {}{}\n", counts.length_histogram_refused, refusal_note(counts));
    return;
  }
  bool first = true;
  for (std::size_t l = 0; l < counts.length_histogram.size(); ++l) {
    if (!counts.length_histogram[l].is_zero()) {
      fmt::print("{}{}: {}", first ? "" : ", ", l, counts.length_histogram[l].to_string());
      first = false;
    }
  }
  fmt::print("\n");
}

void add_info_command(CLI::App& app) {
  auto opts = std::make_shared<InfoOptions>();
  auto* cmd = add_network_command(
      app, "info",
      "Summary of the network and its path counts (by DP). An ONNX model or a pathlift-layers "
      "file is summarised without unrolling: its unrolled DAG's node and edge counts, and its "
      "path counts layer by layer",
      opts->network, opts->compute, TakesTheta::no);
  add_json_flag(*cmd, opts->json,
                "nodes, inputs, hidden, outputs, d, edges, h, P, nnz, max_path_length, "
                "length_histogram; layers for a layer graph");
  cmd->callback([opts] { run_info(*opts); });
}

const CommandRegistration info_registration{10, add_info_command};

}  // namespace

}  // namespace pathlift::cli
