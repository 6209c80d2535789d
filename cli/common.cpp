#include "common.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "pathlift/builtins.hpp"
#include "pathlift/io.hpp"

namespace pathlift::cli {

void add_network_options(CLI::App& cmd, NetworkOptions& opts) {
  auto* group = cmd.add_option_group("network", "Choose the network (default: --example fig1)");
  auto* file = group->add_option("--network", opts.file, "A pathlift-network JSON file");
  auto* ff = group->add_option("--ff", opts.ff,
                               "Feed-forward ReLU network r,w1,...,wL,q (one bias per layer)");
  group->add_flag("--no-bias", opts.no_bias, "With --ff: no bias nodes");
  auto* example = group->add_option(
      "--example", opts.example,
      "A built-in network: fig1, sketch-h0, sketch-h1, ff:r,w1,..,q, ff-nobias:r,..,q, "
      "random-dag:m,p,seed");
  file->excludes(ff)->excludes(example);
  ff->excludes(example);
}

LoadedNetwork load_network(const NetworkOptions& opts) {
  if (opts.no_bias && opts.ff.empty()) {
    throw std::invalid_argument("--no-bias goes with --ff");
  }
  if (!opts.file.empty()) {
    return {read_network(opts.file), opts.file};
  }
  if (!opts.ff.empty()) {
    const std::string name = (opts.no_bias ? "ff-nobias:" : "ff:") + opts.ff;
    return {builtin_network(name), name};
  }
  const std::string name = opts.example.empty() ? "fig1" : opts.example;
  return {builtin_network(name), name};
}

}  // namespace pathlift::cli
