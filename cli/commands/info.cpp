// pathlift info: the network's summary and its path counts (by dynamic programming). A layer
// graph (--onnx, a pathlift-layers file) is summarised without unrolling: the node and edge
// counts of its unrolled DAG come from unrolled_size(), the path counts from the layer DP.

#include <fmt/format.h>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <string>

#include "../common.hpp"
#include "../registry.hpp"
#include "pathlift/counting.hpp"
#include "pathlift/error.hpp"
#include "pathlift/layer_dp.hpp"
#include "pathlift/symmetry.hpp"

namespace pathlift::cli {

namespace {

struct InfoOptions {
  NetworkOptions network;
  ComputeOptions compute;
  bool json = false;
};

/// What info prints, from a DAG or from a layer graph.
struct Summary {
  std::optional<Index> layers;  // a layer graph's layer count
  Index nodes = 0;
  Index edges = 0;
  Index inputs = 0;  // bias nodes included
  Index bias = 0;
  Index hidden = 0;
  Index outputs = 0;
  Index d = 0;
  bool per_edge = false;  // edge k carries parameter k (Theorem 1's setting)
  // The rescaling symmetries (h with one parameter per edge); empty with why when refused.
  std::optional<Index> h_sym;
  std::string h_sym_refused;
  PathCounts counts;
};

/// s.h_sym from f(), or why it was refused (TooLarge: info still prints the rest).
template <class F>
void symmetries(Summary& s, const F& f) {
  try {
    s.h_sym = f().h_sym;
  } catch (const TooLarge& e) {
    s.h_sym_refused = e.what();
  }
}

Summary summarise(const Network& net, const EngineOptions& options) {
  Summary s;
  s.nodes = net.num_nodes();
  s.edges = net.num_edges();
  s.inputs = static_cast<Index>(net.inputs().size());
  s.bias = static_cast<Index>(net.bias_nodes().size());
  s.hidden = net.num_hidden();
  s.outputs = static_cast<Index>(net.outputs().size());
  s.d = net.num_params();
  s.per_edge = net.one_parameter_per_edge();
  symmetries(s, [&] { return rescaling_symmetry_dimension(net, options); });
  s.counts = count_paths(net, options);
  return s;
}

Index entries(const std::vector<Index>& shape) {
  return std::accumulate(shape.begin(), shape.end(), Index{1}, std::multiplies<>());
}

/// The unrolled DAG's summary without unrolling (docs/layers.md: one input node per input
/// entry, one bias node per layer with a bias, one output node per output entry, the rest
/// hidden). Only a graph with as many edges as parameters (an MLP) can have edge k carry
/// parameter k; that one is unrolled to tell (it is no larger than theta's order), within
/// --max-memory.
Summary summarise(const LoadedModel& model, const ComputeOptions& compute) {
  const LayerGraph& graph = *model.model.layer_graph();
  Summary s;
  s.layers = static_cast<Index>(graph.layers.size());
  const UnrolledSize size = model.model.size(engine_options(compute, "counting paths"));
  s.nodes = size.nodes;
  s.edges = size.edges;
  const std::vector<std::vector<Index>> shapes = layer_shapes(graph);
  for (const Layer& layer : graph.layers) {
    const bool bias_kind = layer.kind == LayerKind::linear || layer.kind == LayerKind::conv ||
                           layer.kind == LayerKind::conv_transpose ||
                           layer.kind == LayerKind::batch_norm;
    s.bias += bias_kind && layer.bias_offset >= 0 ? 1 : 0;
  }
  s.inputs = entries(graph.input_shape) + s.bias;
  for (const Index o : graph.outputs) {
    s.outputs += entries(shapes[static_cast<std::size_t>(o)]);
  }
  s.hidden = s.nodes - s.inputs - s.outputs;
  s.d = graph.num_params;
  if (s.edges == s.d) {
    try {
      s.per_edge = model.network(compute).one_parameter_per_edge();
    } catch (const TooLarge&) {
      s.per_edge = false;  // unknown: reported as with shared parameters
    }
  }
  symmetries(s, [&] {
    return rescaling_symmetry_dimension(graph, engine_options(compute, "rescaling symmetries"));
  });
  s.counts = count_paths(graph, engine_options(compute, "counting paths"));
  return s;
}

/// memory_note() after a refusal for memory; nothing after one for work.
std::string refusal_note(const PathCounts& counts) {
  return counts.length_histogram_memory_bound ? memory_note() : "";
}

void run_info(const InfoOptions& opts) {
  const LoadedModel model = load_model(opts.network, opts.compute);
  const std::string& description = model.description;
  const Summary sum =
      model.model.is_layer_graph()
          ? summarise(model, opts.compute)
          : with_progress("counting paths", [&] {
              return summarise(*model.model.dag(),
                               EngineOptions{.max_memory = work_memory(opts.compute)});
            });
  const PathCounts& counts = sum.counts;
  const Index d = sum.d;
  const Index h = sum.hidden;
  const bool per_edge = sum.per_edge;
  const Index num_bias = sum.bias;
  const Index num_inputs = sum.inputs;
  const Index num_outputs = sum.outputs;

  if (opts.json) {
    nlohmann::ordered_json j = json_header("info", 1, description, std::nullopt);
    if (sum.layers) {
      j["layers"] = *sum.layers;
    }
    j["nodes"] = sum.nodes;
    j["inputs"] = num_inputs;
    j["bias"] = num_bias;
    j["hidden"] = h;
    j["outputs"] = num_outputs;
    j["d"] = d;
    j["edges"] = sum.edges;
    j["h"] = h;
    // d - h is Theorem 1's rank with one parameter per edge; otherwise `rank` gives d - h_sym.
    j["d_minus_h"] = per_edge ? nlohmann::ordered_json(d - h) : nlohmann::ordered_json(nullptr);
    j["h_sym"] = sum.h_sym ? nlohmann::ordered_json(*sum.h_sym) : nlohmann::ordered_json(nullptr);
    j["d_minus_h_sym"] =
        sum.h_sym ? nlohmann::ordered_json(d - *sum.h_sym) : nlohmann::ordered_json(nullptr);
    j.update(nlohmann::ordered_json::parse(to_json(counts, -1)));
    if (!counts.length_histogram_refused.empty()) {
      j["length_histogram_refused"] = counts.length_histogram_refused + refusal_note(counts);
    }
    const LayerGraph* graph = model.model.layer_graph();
    j["warnings"] = graph != nullptr ? graph->warnings : std::vector<std::string>{};
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
  const auto plural = [](Index n, const char* word) {
    return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
  };
  fmt::print("nodes            {}: {} ({} bias), {} hidden, {}\n", sum.nodes,
             plural(num_inputs, "input"), num_bias, h, plural(num_outputs, "output"));
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

}  // namespace

namespace {

void add_info_command(CLI::App& app) {
  auto opts = std::make_shared<InfoOptions>();
  auto* cmd = app.add_subcommand(
      "info",
      "Summary of the network and its path counts (by DP). An ONNX model or a pathlift-layers "
      "file is summarised without unrolling: its unrolled DAG's node and edge counts, and its "
      "path counts layer by layer");
  add_network_options(*cmd, opts->network);
  add_engine_options(*cmd, opts->compute);
  cmd->add_flag("--json", opts->json,
                "Print one JSON object (keys in docs/cli.md#info: the header, then nodes, inputs, "
                "hidden, outputs, d, edges, h, P, nnz, max_path_length, length_histogram; layers "
                "for a layer graph)");
  cmd->callback([opts] { run_info(*opts); });
}

const CommandRegistration info_registration{10, add_info_command};

}  // namespace

}  // namespace pathlift::cli
