// pathlift convert: write a network (a built-in one, or any network option) to a file.

#include <fmt/format.h>

#include <memory>

#include "../common.hpp"
#include "../registry.hpp"
#include "pathlift/io.hpp"

namespace pathlift::cli {

namespace {

struct ConvertOptions {
  NetworkOptions network;
  std::string output;
};

void run_convert(const ConvertOptions& opts) {
  const auto [net, description] = load_network(opts.network);
  if (opts.output == "-") {
    fmt::print("{}\n", network_to_json(net, 1));
    return;
  }
  write_network(net, opts.output);
  fmt::print(stderr, "wrote {} ({} nodes, {} edges) to {}\n", description, net.num_nodes(),
             net.num_edges(), opts.output);
}

}  // namespace

namespace {

void add_convert_command(CLI::App& app) {
  auto opts = std::make_shared<ConvertOptions>();
  auto* cmd = app.add_subcommand(
      "convert",
      "Write the network as a pathlift-network JSON file (e.g. --example fig1 -o fig1.json)");
  add_network_options(*cmd, opts->network);
  cmd->add_option("-o,--output", opts->output, "Output file (.json), or - for stdout")->required();
  cmd->callback([opts] { run_convert(*opts); });
}

const CommandRegistration registration{90, add_convert_command};

}  // namespace

}  // namespace pathlift::cli
