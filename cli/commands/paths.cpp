// pathlift paths: the paths in canonical order, one a line (0-based edge ids, walk order).

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "../common.hpp"
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
  const auto [net, description] = load_network(opts.network, opts.compute);
  const auto start = std::chrono::steady_clock::now();
  const PathSet paths = enumerate_paths(net, engine_options(opts.compute, "paths"));
  const double elapsed = seconds_since(start);
  std::FILE* out = stdout;
  const std::string tmp = opts.output + ".tmp";
  if (opts.output != "-") {
    out = std::fopen(tmp.c_str(), "wb");
    if (out == nullptr) {
      throw FormatError(fmt::format("cannot write '{}'", opts.output));
    }
  }
  fmt::memory_buffer buf;
  ProgressBar writing("writing the paths");
  bool ok = true;
  for (Index p = 0; p < paths.size() && ok; ++p) {
    const auto path = paths.path(p);
    for (std::size_t i = 0; i < path.size(); ++i) {
      fmt::format_to(std::back_inserter(buf), "{}{}", i == 0 ? "" : " ", path[i]);
    }
    if (opts.nodes) {
      fmt::format_to(std::back_inserter(buf), "  # {}", net.node_name(net.source(path[0])));
      for (EdgeId e : path) {
        fmt::format_to(std::back_inserter(buf), " -> {}", net.node_name(net.target(e)));
      }
    }
    buf.push_back('\n');
    if (buf.size() > (1 << 20)) {
      ok = std::fwrite(buf.data(), 1, buf.size(), out) == buf.size();
      buf.clear();
      writing(static_cast<double>(p) / static_cast<double>(paths.size()));
    }
  }
  writing(1.0);
  ok = ok && std::fwrite(buf.data(), 1, buf.size(), out) == buf.size();
  if (out == stdout) {
    std::fflush(stdout);
  } else {
    ok = std::fclose(out) == 0 && ok;
    std::error_code ec;
    if (ok) {
      std::filesystem::rename(tmp, opts.output, ec);
    }
    if (!ok || ec) {
      std::filesystem::remove(tmp, ec);
      throw FormatError(fmt::format("cannot write '{}'", opts.output));
    }
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
  cmd->add_option("-o,--output", opts->output, "Output text file, or - for stdout")->required();
  cmd->add_flag("--nodes", opts->nodes, "Append the path's nodes as a '# a -> d -> h' comment");
  cmd->callback([opts] { run_paths(*opts); });
}

const CommandRegistration registration{20, add_paths_command};

}  // namespace

}  // namespace pathlift::cli
