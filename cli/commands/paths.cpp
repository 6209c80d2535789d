// pathlift paths: the paths in canonical order, one a line (0-based edge ids, walk order); with
// --top K the K heaviest, with --sample N paths drawn by weight (heavy_paths.hpp: nothing
// enumerated).

#include <fmt/format.h>

#include <limits>
#include <memory>
#include <optional>

#include "../common.hpp"
#include "../matrix_io.hpp"
#include "../output_file.hpp"
#include "../registry.hpp"
#include "pathlift/error.hpp"
#include "pathlift/heavy_paths.hpp"
#include "pathlift/paths.hpp"

namespace pathlift::cli {

namespace {

struct PathsOptions {
  NetworkOptions network;
  ComputeOptions compute;
  std::string output;
  bool nodes = false;
  std::optional<Index> top;     // --top K
  std::optional<Index> sample;  // --sample N
  double s = 1;
  std::uint64_t seed = 0;
  bool json = false;
};

/// --top K and --sample N: the paths with their values, by name, on stdout (or --json).
void run_heavy(const PathsOptions& opts) {
  const LoadedModel loaded = load_model(opts.network, opts.compute);
  const LoadedTheta theta = load_theta(loaded, opts.compute);
  const bool top = opts.top.has_value();
  const EngineOptions engine = engine_options(opts.compute, top ? "top paths" : "sampling paths");
  const std::vector<WeightedPath> paths =
      top ? top_paths(loaded.model, theta.theta, *opts.top, opts.s, engine)
          : sample_paths(loaded.model, theta.theta, *opts.sample, opts.s, opts.seed, engine);
  if (opts.json) {
    nlohmann::ordered_json j = json_header("paths", 1, loaded.description, theta.source);
    j["mode"] = top ? "top" : "sample";
    j["s"] = opts.s;
    if (!top) {
      j["sample_seed"] = opts.seed;
    }
    j["paths"] =
        nlohmann::ordered_json::parse(to_json(std::span<const WeightedPath>(paths), loaded.model));
    print_json(j);
    return;
  }
  constexpr std::size_t whole = std::numeric_limits<std::size_t>::max();
  const PathNames names(loaded.model);
  for (const WeightedPath& p : paths) {
    fmt::print("{:<24}", p.magnitude.fits_double() || p.magnitude.is_zero()
                             ? fmt::format("{:.12g}", p.value())
                             : fmt::format("{}1e{:.6f}", p.sign < 0 ? "-" : "", p.log10_abs()));
    for (std::size_t j = 0; j < names.size(p); ++j) {
      fmt::print("{}{}", j == 0 ? " " : " -> ", printable(names.node(p, j), whole));
    }
    fmt::print("\n");
  }
}

void run_paths(const PathsOptions& opts) {
  if (opts.top || opts.sample) {
    run_heavy(opts);
    return;
  }
  if (opts.output.empty()) {
    throw std::invalid_argument(
        "paths: -o is required to write every path (or --top K, --sample N)");
  }
  output_format(opts.output, Content::text);  // a wrong name is refused before the work
  const LoadedNetwork loaded = load_network(opts.network, opts.compute);
  const Network& net = *loaded.dag;
  (void)load_theta(net, opts.compute);  // a bad --theta is refused, though the paths ignore it
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
  auto* cmd = add_network_command(
      app, "paths",
      "Write the paths in canonical order: one a line, its 0-based edge ids in walk order; or "
      "the K heaviest (--top K) or N drawn by weight (--sample N), without enumerating them",
      opts->network, opts->compute, TakesTheta::yes);
  cmd->add_option("-o,--output", opts->output,
                  "Output text file (.txt), or - for stdout (every path; required without --top "
                  "and --sample)");
  cmd->add_flag("--nodes", opts->nodes, "Append the path's nodes as a '# a -> d -> h' comment");
  auto* top = cmd->add_option("--top", opts->top,
                              "The K paths of largest |Phi_p|, heaviest first (value, then its "
                              "nodes), by a best-first search: nothing enumerated")
                  ->check(positive_integer);
  auto* sample = cmd->add_option("--sample", opts->sample,
                                 "N paths drawn with probability |Phi_p|^s / ||Phi||_s^s")
                     ->check(positive_integer)
                     ->excludes(top);
  cmd->add_option("--s", opts->s, "The exponent of --sample (default 1; 0: uniform)")
      ->check(any_number);
  cmd->add_option("--sample-seed", opts->seed,
                  "The seed of --sample (default 0; --seed draws theta)");
  cmd->add_flag("--json", opts->json,
                "With --top or --sample: one JSON object (docs/cli.md#paths: the header, mode, "
                "s, paths: value, sign, log10_abs, nodes, edges, params)");
  top->excludes("-o");
  sample->excludes("-o");
  cmd->callback([opts] { run_paths(*opts); });
}

const CommandRegistration paths_registration{20, add_paths_command};

}  // namespace

}  // namespace pathlift::cli
