#pragma once
// The model and theta a command computes on: the network options, loading, theta, data.

#include <CLI/CLI.hpp>
#include <Eigen/Dense>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "pathlift/certificate.hpp"
#include "pathlift/count.hpp"
#include "pathlift/error.hpp"
#include "pathlift/layers.hpp"
#include "pathlift/model.hpp"
#include "pathlift/network.hpp"
#include "pathlift/paths.hpp"
#include "pathlift/scaled_real.hpp"

// The other concepts every command uses, so that a command includes this header alone.
#include "check_text.hpp"
#include "exit.hpp"
#include "json_output.hpp"
#include "memory.hpp"
#include "progress.hpp"
#include "validators.hpp"

namespace pathlift::cli {

/// How the network is chosen: --network FILE.json | --ff r,w1,..,q [--no-bias] | --example NAME
/// | --onnx FILE [--input-shape C,H,W].
struct NetworkOptions {
  std::string file;
  std::string ff;
  bool no_bias = false;
  std::string example;
  std::string onnx;
  std::string input_shape;
};

void add_network_options(CLI::App& cmd, NetworkOptions& opts);

struct ComputeOptions;

/// The commands that compute on a layer graph (an ONNX model, a pathlift-layers file) without
/// unrolling it: --onnx's help and the message of a refused unrolling name them.
inline constexpr std::string_view layer_graph_commands =
    "info, norm, kernel --diag|--trace|--top-eig, rank, bound, metric, paths --top|--sample and "
    "rescale";

/// A TooLarge from unrolling a layer graph (LoadedModel::network): its message ends with the
/// commands of layer_graph_commands, after the way to raise the limit.
class UnrollTooLarge : public TooLarge {
 public:
  using TooLarge::TooLarge;
};

/// The chosen model (model.hpp: a DAG, or a layer graph for an ONNX model or a
/// pathlift-layers file) and a short description of it. The commands of
/// layer_graph_commands run on a layer graph without unrolling; network() unrolls it for
/// everything that needs edges.
struct LoadedModel {
  Model model;
  std::string description;

  /// The DAG: the model's own, or the layer graph unrolled within --max-memory (progress on a
  /// terminal; UnrollTooLarge with the node and edge counts), made once and kept by the model.
  [[nodiscard]] const Network& network(const ComputeOptions& compute) const;
};
/// Files are read under max_input_bytes(kind, max_memory) (0: default).
LoadedModel load_model(const NetworkOptions& opts, std::size_t max_memory = 0);
/// load_model() under the --max-memory of `compute`.
LoadedModel load_model(const NetworkOptions& opts, const ComputeOptions& compute);

/// The chosen network as a DAG (default: the paper's Figure 1) and a short description of it:
/// load_model() then LoadedModel::network() (the second form within --max-memory; the first uses
/// the default limit). Its weights are the network's weights.
struct LoadedNetwork {
  std::shared_ptr<const Network> dag;
  std::string description;
};
LoadedNetwork load_network(const NetworkOptions& opts);

/// "3,32,32" -> {3, 32, 32}: the per-sample shape of --input-shape (positive integers).
std::vector<Index> parse_input_shape(const std::string& text);

/// Where theta comes from: --theta FILE | --seed N, else the network file's weights, else
/// --seed 0 (standard normal). --threads and --max-memory for the engine.
struct ComputeOptions {
  std::string theta_file;
  /// The option and the vector's name in messages: --theta and theta, or a command's second
  /// vector (metric: --theta2 and theta2).
  std::string theta_flag = "--theta";
  std::string theta_name = "theta";
  std::optional<std::uint64_t> seed;
  int threads = 0;
  std::string max_memory;
};

/// load_network() unrolling a layer graph within --max-memory.
LoadedNetwork load_network(const NetworkOptions& opts, const ComputeOptions& compute);

/// --theta FILE and --seed N (exclusive).
void add_theta_options(CLI::App& cmd, ComputeOptions& opts);
/// --threads N and --max-memory SIZE.
void add_engine_options(CLI::App& cmd, ComputeOptions& opts);

/// The options of a subcommand that computes on one network and can print one JSON object.
struct NetworkCommandOptions {
  NetworkOptions network;
  ComputeOptions compute;
  bool json = false;
};

/// Whether a subcommand takes theta (--theta FILE | --seed N).
enum class TakesTheta : bool { no, yes };

/// "1 output", "2 outputs": n and the noun, plural unless n is 1.
std::string counted(Index n, std::string_view noun);

/// --json's help: "Print one JSON object (keys in docs/cli.md#<command>: the header, then
/// <keys>)", the anchor being the command's name.
std::string json_flag_help(std::string_view command, std::string_view keys);

/// --json on `cmd`, described by json_flag_help(cmd's name, keys).
CLI::Option* add_json_flag(CLI::App& cmd, bool& json, std::string_view keys);

/// Adds subcommand `name` with the options every network command takes, in this order: the
/// network options, --theta and --seed (when `theta` is yes), --threads and --max-memory.
CLI::App* add_network_command(CLI::App& app, const std::string& name,
                              const std::string& description, NetworkOptions& network,
                              ComputeOptions& compute, TakesTheta theta);

/// --data FILE (required): the batch X of forward and linearize.
void add_data_option(CLI::App& cmd, std::string& path);

/// The data X (n x r) of --data FILE for `net` (.npy or text), read under --max-memory
/// (`compute`): FormatError when its width is not the number of data inputs, naming the file,
/// both numbers and `description`.
Eigen::MatrixXd read_data(const std::string& path, const Network& net,
                          const std::string& description, const ComputeOptions& compute);

/// theta for the network, and where it came from ("--theta FILE", "network file", "--seed 0").
/// `theta` views the network's own weights, which are not copied (an ONNX model's may be the
/// largest object of the program: the network must outlive it), or `owned` (read or drawn).
/// Move-only, so that the view never outlives its storage.
struct LoadedTheta {
  std::span<const double> theta;
  std::string source;
  std::vector<double> owned;

  LoadedTheta(std::span<const double> stored, std::string from)
      : theta(stored), source(std::move(from)) {}
  LoadedTheta(std::vector<double> values, std::string from)
      : source(std::move(from)), owned(std::move(values)) {
    theta = owned;
  }
  LoadedTheta(LoadedTheta&&) = default;  // a vector's move keeps its storage: the view holds
  LoadedTheta& operator=(LoadedTheta&&) = default;
  LoadedTheta(const LoadedTheta&) = delete;
  LoadedTheta& operator=(const LoadedTheta&) = delete;
  ~LoadedTheta() = default;
};
LoadedTheta load_theta(const Network& net, const ComputeOptions& opts);
/// The same for a loaded model: for a layer graph, --theta FILE (d numbers), --seed N, else
/// the graph's weights (an ONNX model's initializers), else --seed 0.
LoadedTheta load_theta(const LoadedModel& model, const ComputeOptions& opts);

}  // namespace pathlift::cli
