// pathlift paths: the paths in canonical order, one a line (0-based edge ids, walk order).

#include <fmt/format.h>

#include <limits>
#include <memory>

#include "../common.hpp"
#include "../matrix_io.hpp"
#include "../output_file.hpp"
#include "../registry.hpp"
#include "pathlift/error.hpp"
#include "pathlift/paths.hpp"

namespace pathlift::cli {

namespace {

struct PathsOptions {
  NetworkOptions network;
  ComputeOptions compute;
  std::string output;
  bool nodes = false;
};

void run_paths(const PathsOptions& opts) {
  output_format(opts.output, Content::text);  // a wrong name is refused before the work
  const LoadedNetwork loaded = load_network(opts.network, opts.compute);
  const Network& net = *loaded.dag;
  const std::string& description = loaded.description;
  const auto start = std::chrono::steady_clock::now();
  const PathSet paths = enumerate_paths(net, engine_options(opts.compute, "paths"));
  const double elapsed = seconds_since(start);
  OutputFile out(opts.output);
  fmt::memory_buffer buf;
  // Names escaped in full, so that a name cannot break the one-path-a-line layout.
  constexpr std::size_t whole = std::numeric_limits<std::size_t>::max();
  for (Index p = 0; p < paths.size(); ++p) {
    const auto path = paths.path(p);
    for (std::size_t i = 0; i < path.size(); ++i) {
      fmt::format_to(std::back_inserter(buf), "{}{}", i == 0 ? "" : " ", path[i]);
    }
    if (opts.nodes) {
      fmt::format_to(std::back_inserter(buf), "  # {}",
                     printable(net.node_name(net.source(path[0])), whole));
      for (EdgeId e : path) {
        fmt::format_to(std::back_inserter(buf), " -> {}",
                       printable(net.node_name(net.target(e)), whole));
      }
    }
    buf.push_back('\n');
    out.flush_if_large(buf, static_cast<double>(p) / static_cast<double>(paths.size()));
  }
  out.write(buf);
  out.commit();
  if (opts.output != "-") {
    fmt::print(stderr, "wrote {} paths of {} ({} entries) to {} ({:.3f} s to enumerate)\n",
               paths.size(), description, paths.nnz(), opts.output, elapsed);
  }
}

void add_paths_command(CLI::App& app) {
  auto opts = std::make_shared<PathsOptions>();
  auto* cmd = app.add_subcommand(
      "paths",
      "Write the paths in canonical order: one a line, its 0-based edge ids in walk order");
  add_network_options(*cmd, opts->network);
  add_engine_options(*cmd, opts->compute);
  cmd->add_option("-o,--output", opts->output, "Output text file (.txt), or - for stdout")
      ->required();
  cmd->add_flag("--nodes", opts->nodes, "Append the path's nodes as a '# a -> d -> h' comment");
  cmd->callback([opts] { run_paths(*opts); });
}

const CommandRegistration paths_registration{20, add_paths_command};

}  // namespace

}  // namespace pathlift::cli
