// pathlift convert: write a network (a built-in one, or any network option) to a file.

#include <fmt/format.h>

#include <memory>
#include <optional>

#include "../common.hpp"
#include "../matrix_io.hpp"
#include "../output_file.hpp"
#include "../registry.hpp"
#include "pathlift/io.hpp"

namespace pathlift::cli {

namespace {

struct ConvertOptions {
  NetworkOptions network;
  ComputeOptions compute;  // --theta FILE | --seed N: the weights written; --max-memory
  std::string output;
};

void run_convert(const ConvertOptions& opts) {
  output_format(opts.output, Content::network);  // a wrong name is refused before the work
  const LoadedNetwork loaded = load_network(opts.network, opts.compute);
  const std::string& description = loaded.description;
  // --theta FILE or --seed N: those weights are written (theta_from_seed's draw for a seed).
  const bool new_weights = !opts.compute.theta_file.empty() || opts.compute.seed.has_value();
  std::optional<LoadedTheta> theta;
  std::optional<Network> reweighted;
  if (new_weights) {
    theta = load_theta(*loaded.dag, opts.compute);
    reweighted =
        loaded.dag->with_weights(std::vector<double>(theta->theta.begin(), theta->theta.end()));
  }
  const Network& net = reweighted ? *reweighted : *loaded.dag;
  // The text of write_network, through the CLI's OutputFile (temporary name, signals).
  OutputFile out(opts.output);
  out.write(network_to_json(net, 1) + "\n");
  out.commit();
  if (opts.output == "-") {
    return;
  }
  fmt::print(stderr, "wrote {} ({} nodes, {} edges{}) to {}\n", description, net.num_nodes(),
             net.num_edges(), theta ? fmt::format(", weights from {}", theta->source) : "",
             opts.output);
}

}  // namespace

namespace {

void add_convert_command(CLI::App& app) {
  auto opts = std::make_shared<ConvertOptions>();
  auto* cmd = add_network_command(
      app, "convert",
      "Write the network as a pathlift-network JSON file (e.g. --example fig1 -o fig1.json), "
      "with its weights, or those of --theta FILE or --seed N",
      opts->network, opts->compute, TakesTheta::yes);
  cmd->add_option("-o,--output", opts->output, "Output file (.json), or - for stdout")->required();
  cmd->callback([opts] { run_convert(*opts); });
}

const CommandRegistration convert_registration{90, add_convert_command};

}  // namespace

}  // namespace pathlift::cli
