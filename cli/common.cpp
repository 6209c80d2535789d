#include "common.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>

#include "matrix_io.hpp"
#include "pathlift/builtins.hpp"
#include "pathlift/checks.hpp"
#include "pathlift/error.hpp"
#include "pathlift/io.hpp"
#include "pathlift/layers.hpp"
#include "pathlift/limits.hpp"
#include "pathlift/options.hpp"
#include "pathlift/rank.hpp"
#include "pathlift/version.hpp"

namespace pathlift::cli {

void add_network_options(CLI::App& cmd, NetworkOptions& opts) {
  auto* group = cmd.add_option_group("network", "Choose the network (default: --example fig1)");
  auto* file = group->add_option("--network", opts.file,
                                 "A model file, read by its content: pathlift-network JSON, or a "
                                 "layer graph (pathlift-layers JSON, ONNX), handled as --onnx is");
  auto* ff = group->add_option("--ff", opts.ff,
                               "Feed-forward ReLU network r,w1,...,wL,q (one bias per layer)");
  file->check(non_empty);
  ff->check(non_empty);
  group->add_flag("--no-bias", opts.no_bias, "With --ff: no bias nodes");
  auto* example = group->add_option(
      "--example", opts.example,
      "A built-in network: fig1, sketch-h0, sketch-h1, ff:r,w1,..,q, ff-nobias:r,..,q, "
      "random-dag:m,p,seed");
  auto* onnx = group->add_option(
      "--onnx", opts.onnx,
      fmt::format("An ONNX model (Conv, Gemm, pools, BatchNormalization, Relu, Add, ...), read "
                  "as a layer graph: {} compute on it without unrolling, the other commands "
                  "unroll it into a DAG; its weights are theta's default",
                  layer_graph_commands));
  group->add_option("--input-shape", opts.input_shape,
                    "With --onnx: the input shape per sample, without the batch dimension "
                    "(e.g. 3,32,32); needed when the model's is symbolic");
  example->check(non_empty);
  onnx->check(non_empty);
  file->excludes(ff)->excludes(example)->excludes(onnx);
  ff->excludes(example)->excludes(onnx);
  example->excludes(onnx);
}

std::vector<Index> parse_input_shape(const std::string& text) {
  std::vector<Index> shape;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    const auto value = parse_unsigned(item);
    if (!value || *value < 1 ||
        *value > static_cast<std::uint64_t>(std::numeric_limits<Index>::max())) {
      throw std::invalid_argument(fmt::format(
          "--input-shape '{}': expected positive integers separated by commas, such as 3,32,32",
          printable(text)));
    }
    shape.push_back(static_cast<Index>(*value));
    start = comma + 1;
  }
  return shape;
}

namespace {

/// f(), a TooLarge from unrolling thrown again as an UnrollTooLarge.
template <class F>
decltype(auto) with_unroll_hint(F&& f) {
  try {
    return f();
  } catch (const TooLarge& e) {
    throw UnrollTooLarge(e.what(), e.reason());
  }
}

LoadedModel read_model(const NetworkOptions& opts, std::size_t max_memory) {
  if (opts.no_bias && opts.ff.empty()) {
    throw std::invalid_argument("--no-bias goes with --ff");
  }
  if (!opts.input_shape.empty() && opts.onnx.empty() && opts.file.empty()) {
    throw std::invalid_argument("--input-shape goes with --onnx (an ONNX model)");
  }
  const std::string& file = opts.onnx.empty() ? opts.file : opts.onnx;
  if (!file.empty()) {
    ModelOptions mo;
    mo.engine.max_memory = max_memory;
    if (!opts.input_shape.empty()) {
      mo.input_shape = parse_input_shape(opts.input_shape);
    }
    try {
      return {load_model(file, mo), file};
    } catch (const InputShapeError& e) {
      if (!e.needed()) {
        throw std::invalid_argument(
            fmt::format("--input-shape goes with an ONNX model: {}", e.what()));
      }
      if (opts.input_shape.empty()) {
        throw InputShapeError(std::string(e.what()) + " with --input-shape", true);
      }
      throw;
    }
  }
  const std::string name = !opts.ff.empty()       ? (opts.no_bias ? "ff-nobias:" : "ff:") + opts.ff
                           : opts.example.empty() ? std::string("fig1")
                                                  : opts.example;
  return {Model(builtin_network(name)), name};
}

}  // namespace

const Network& LoadedModel::network(const ComputeOptions& compute) const {
  if (const Network* dag = model.dag()) {
    return *dag;
  }
  // The model keeps the DAG it unrolls, and this model the model.
  const EngineOptions options = engine_options(compute, "unrolling the layer graph");
  return *with_unroll_hint([&] { return model.unrolled(options); });
}

LoadedModel load_model(const NetworkOptions& opts, std::size_t max_memory) {
  LoadedModel m =
      with_progress("loading the network", [&] { return read_model(opts, max_memory); });
  // What the importer noticed (an ONNX export that folded batch norms into convolutions, so
  // that d and theta are not the PyTorch model's): one line each on stderr, for every command.
  if (const LayerGraph* g = m.model.layer_graph()) {
    for (const std::string& w : g->warnings) {
      fmt::print(stderr, "warning: {}\n", w);
    }
  }
  return m;
}

LoadedModel load_model(const NetworkOptions& opts, const ComputeOptions& compute) {
  return load_model(opts, parse_memory_size(compute.max_memory));
}

LoadedNetwork load_network(const NetworkOptions& opts) {
  return load_network(opts, ComputeOptions{});
}

LoadedNetwork load_network(const NetworkOptions& opts, const ComputeOptions& compute) {
  LoadedModel m = load_model(opts, compute);
  (void)m.network(compute);  // unrolled, with its hint and progress, and kept by the model
  return {m.model.unrolled(), std::move(m.description)};
}

void add_theta_options(CLI::App& cmd, ComputeOptions& opts) {
  auto* theta = cmd.add_option("--theta", opts.theta_file,
                               "Weights theta: a .npy or text file of d numbers (overrides the "
                               "network file's weights)");
  auto* seed = cmd.add_option("--seed", opts.seed,
                              "Weights theta drawn standard normal from this seed (default: the "
                              "network file's weights, else seed 0)")
                   ->check(seed_number);
  theta->excludes(seed);
}

void add_engine_options(CLI::App& cmd, ComputeOptions& opts) {
  cmd.add_option("--threads", opts.threads, "Threads (default: all cores)")
      ->check(non_negative_number);
  cmd.add_option("--max-memory", opts.max_memory,
                 "Refuse work needing more memory than this (e.g. 8G, 512M; default: half of "
                 "physical RAM)");
}

std::string counted(Index n, std::string_view noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

std::string json_flag_help(std::string_view command, std::string_view keys) {
  return fmt::format("Print one JSON object (keys in docs/cli.md#{}: the header, then {})", command,
                     keys);
}

CLI::Option* add_json_flag(CLI::App& cmd, bool& json, std::string_view keys) {
  return cmd.add_flag("--json", json, json_flag_help(cmd.get_name(), keys));
}

CLI::App* add_network_command(CLI::App& app, const std::string& name,
                              const std::string& description, NetworkOptions& network,
                              ComputeOptions& compute, TakesTheta theta) {
  auto* cmd = app.add_subcommand(name, description);
  add_network_options(*cmd, network);
  if (theta == TakesTheta::yes) {
    add_theta_options(*cmd, compute);
  }
  add_engine_options(*cmd, compute);
  return cmd;
}

void add_data_option(CLI::App& cmd, std::string& path) {
  cmd.add_option("--data", path,
                 "Data X, n x r (.npy or .csv/.txt): one sample a row, one column per data "
                 "input in node order, bias nodes excluded")
      ->required();
}

Eigen::MatrixXd read_data(const std::string& path, const Network& net,
                          const std::string& description, const ComputeOptions& compute) {
  Eigen::MatrixXd X = read_matrix(path, true, parse_memory_size(compute.max_memory));
  const auto r = static_cast<Index>(net.data_inputs().size());
  if (X.cols() != r) {
    throw FormatError(
        fmt::format("'{}' has {} columns but the network {} has {} data inputs (bias nodes "
                    "excluded)",
                    path, X.cols(), description, r));
  }
  return X;
}

namespace {

/// theta from --theta FILE (d numbers), --seed N, else the stored weights, else --seed 0.
LoadedTheta choose_theta(Index d, const std::optional<std::span<const double>>& stored,
                         const std::function<void(std::size_t)>& check_size,
                         const ComputeOptions& opts) {
  if (!opts.theta_file.empty()) {
    std::vector<double> theta = [&] {
      try {
        return read_vector(opts.theta_file, true, parse_memory_size(opts.max_memory));
      } catch (const FormatError& e) {  // the reader names the file; this names the option
        throw FormatError(fmt::format("{}: {}", opts.theta_flag, e.what()));
      }
    }();
    try {
      check_size(theta.size());
    } catch (const std::invalid_argument& e) {  // the count's message, with the file's name
      throw std::invalid_argument(
          fmt::format("{} {}: {}", opts.theta_flag, opts.theta_file, e.what()));
    }
    return {std::move(theta), opts.theta_flag + " " + opts.theta_file};
  }
  if (opts.seed) {
    return {normal_weights(d, *opts.seed), fmt::format("--seed {}", *opts.seed)};
  }
  if (stored) {
    return {*stored, "the network file's weights"};
  }
  return {normal_weights(d, 0), "standard normal, --seed 0"};
}

}  // namespace

LoadedTheta load_theta(const Network& net, const ComputeOptions& opts) {
  const auto stored = net.has_weights() ? std::optional(net.weights()) : std::nullopt;
  return choose_theta(
      net.num_params(), stored, [&](std::size_t n) { check_theta_size(net, n, opts.theta_name); },
      opts);
}

LoadedTheta load_theta(const LoadedModel& loaded, const ComputeOptions& opts) {
  const Model& m = loaded.model;
  if (const Network* net = m.dag()) {
    return load_theta(*net, opts);
  }
  const auto stored = m.has_weights() ? std::optional(m.weights()) : std::nullopt;
  const Index d = m.num_params();
  return choose_theta(
      d, stored,
      [&](std::size_t n) {
        if (n != static_cast<std::size_t>(d)) {
          throw std::invalid_argument(fmt::format(
              "{} has {} entries but the network has {} parameters", opts.theta_name, n, d));
        }
      },
      opts);
}

}  // namespace pathlift::cli
