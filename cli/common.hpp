#pragma once
// Options and helpers shared by the CLI's subcommands.

#include <CLI/CLI.hpp>
#include <string>

#include "pathlift/network.hpp"

namespace pathlift::cli {

/// How the network is chosen: --network FILE.json | --ff r,w1,..,q [--no-bias] | --example NAME.
struct NetworkOptions {
  std::string file;
  std::string ff;
  bool no_bias = false;
  std::string example;
};

void add_network_options(CLI::App& cmd, NetworkOptions& opts);

/// The chosen network (default: the paper's Figure 1) and a short description of it.
struct LoadedNetwork {
  Network net;
  std::string description;
};
LoadedNetwork load_network(const NetworkOptions& opts);

}  // namespace pathlift::cli
