// pathlift bench: the paper's experiment with pathlift's own methods (C++ only). For each
// feed-forward shape: P, d, nnz and the times (median, min, max over --reps) of building the
// path set and skeleton, Phi, sparse dPhi and dense dPhi (the paper's output).

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <optional>

#include "../common.hpp"
#include "../matrix_io.hpp"
#include "../output_file.hpp"
#include "../registry.hpp"
#include "pathlift/builtins.hpp"
#include "pathlift/error.hpp"
#include "pathlift/lifting.hpp"
#include "pathlift/limits.hpp"

namespace pathlift::cli {

namespace {

struct BenchOptions {
  std::vector<std::string> grid;
  bool scale = false;
  int reps = 5;
  bool float64 = false;
  std::string csv;
  ComputeOptions compute;  ///< --threads and --max-memory
};

/// The paper's grid: r = 5, q = 2, L = 1..3 hidden layers of width w = 1..8, biases on.
std::vector<std::string> paper_grid() {
  std::vector<std::string> out;
  for (int layers = 1; layers <= 3; ++layers) {
    for (int w = 1; w <= 8; ++w) {
      std::string shape = "5";
      for (int l = 0; l < layers; ++l) {
        shape += fmt::format(",{}", w);
      }
      out.push_back(shape + ",2");
    }
  }
  return out;
}

/// Beyond the paper: L = 3, w = 8, 16, 32, 64, and L = 4, w = 32.
std::vector<std::string> scale_grid() {
  return {"5,8,8,8,2", "5,16,16,16,2", "5,32,32,32,2", "5,64,64,64,2", "5,32,32,32,32,2"};
}

struct Stat {
  double median = 0;
  double min = 0;
  double max = 0;
  bool skipped = false;
};

template <class F>
Stat measure(int reps, F&& f) {
  f();  // warm-up: first-touch page faults and the thread team's start are not the method's
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    f();
    t.push_back(seconds_since(start));
  }
  if (t.empty()) {
    return {};
  }
  std::sort(t.begin(), t.end());
  const double median = t[t.size() / 2];
  return {median, t.front(), t.back(), false};
}

template <class T>
void run_bench_t(const BenchOptions& opts) {
  std::vector<std::string> grid = opts.grid;
  if (grid.empty()) {
    grid = opts.scale ? scale_grid() : paper_grid();
  }
  for (const std::string& shape : grid) {
    (void)parse_layer_sizes(shape);  // every shape checked before anything is printed or timed
  }
  EngineOptions engine;
  engine.threads = opts.compute.threads;
  engine.max_memory = parse_memory_size(opts.compute.max_memory);
  const std::size_t limit = effective_max_memory(engine.max_memory);

  // Created now, so that a bad name is refused before the timings; renamed into place at the end.
  std::optional<OutputFile> csv;
  if (!opts.csv.empty()) {
    output_format(opts.csv, Content::table, " (the table itself goes to stdout)");
    csv.emplace(opts.csv);
    csv->write("shape,L,w,P,d,nnz,dtype,threads,reps,method,median_s,min_s,max_s,status\n");
  }
  const char* dtype = sizeof(T) == 4 ? "float32" : "float64";
  fmt::print("pathlift bench: {} reps, {}, {} threads\n", opts.reps, dtype,
             resolve_threads(engine.threads));
  fmt::print("{:<18} {:>10} {:>7} {:>11}  {:>22} {:>22} {:>22} {:>22}\n", "shape", "P", "d", "nnz",
             "paths+B build", "Phi", "sparse dPhi", "dense dPhi");
  for (const std::string& shape : grid) {
    const auto sizes = parse_layer_sizes(shape);
    const Network net = feed_forward(
        sizes.front(), std::vector<Index>(sizes.begin() + 1, sizes.end() - 1), sizes.back(), true);
    const std::vector<double> theta64 = normal_weights(net.num_edges(), 0);
    const std::vector<T> theta(theta64.begin(), theta64.end());
    const auto span = std::span<const T>(theta);

    PathSet paths = enumerate_paths(net, engine);
    const Stat build = measure(opts.reps, [&] {
      PathSet p = enumerate_paths(net, engine);
      const CsrPattern b = skeleton(p, engine);
      (void)b;
    });
    const Stat phi = measure(opts.reps, [&] { (void)path_lifting<T>(net, span, engine); });
    const Stat sparse = measure(opts.reps, [&] { (void)jacobian<T>(paths, span, engine); });
    Stat dense;
    const std::size_t dense_need = dense_bytes(paths.size(), net.num_edges(), sizeof(T));
    if (dense_need > limit) {
      dense.skipped = true;
    } else {
      dense = measure(opts.reps, [&] { (void)dense_jacobian<T>(paths, span, engine); });
    }
    const auto cell = [](const Stat& s) {
      return s.skipped ? std::string("needs more memory")
                       : fmt::format("{:.3e} [{:.2e},{:.2e}]", s.median, s.min, s.max);
    };
    fmt::print("{:<18} {:>10} {:>7} {:>11}  {:>22} {:>22} {:>22} {:>22}\n", shape, paths.size(),
               net.num_edges(), paths.nnz(), cell(build), cell(phi), cell(sparse),
               dense.skipped
                   ? fmt::format("needs {}", format_bytes(static_cast<double>(dense_need)))
                   : cell(dense));
    if (csv) {
      const auto row = [&](const char* method, const Stat& s) {
        csv->write(fmt::format("\"{}\",{},{},{},{},{},{},{},{},{},{},{},{},{}\n", shape,
                               sizes.size() - 2, sizes.size() > 2 ? sizes[1] : 0, paths.size(),
                               net.num_edges(), paths.nnz(), dtype, engine.threads, opts.reps,
                               method, s.median, s.min, s.max,
                               s.skipped ? fmt::format("needs {} bytes", dense_need) : "ok"));
      };
      row("pathlift_build", build);
      row("pathlift_phi", phi);
      row("pathlift_sparse_jacobian", sparse);
      row("pathlift_dense_jacobian", dense);
    }
  }
  if (csv) {
    csv->commit();
    fmt::print(stderr, "wrote {}\n", opts.csv);
  }
}

void add_bench_command(CLI::App& app) {
  auto opts = std::make_shared<BenchOptions>();
  auto* cmd = app.add_subcommand(
      "bench",
      "Time pathlift on the paper's experiment grid (r = 5, q = 2, L = 1..3, w = 1..8, float32): "
      "path set + skeleton, Phi, sparse dPhi, dense dPhi");
  cmd->add_option("--grid", opts->grid,
                  "Feed-forward shapes r,w1,..,q to time instead of the paper's grid (repeatable)");
  cmd->add_flag("--scale", opts->scale,
                "The sweep beyond the paper: L = 3, w = 8..64, and L = 4, w = 32");
  cmd->add_option("--reps", opts->reps, "Repetitions per measurement (median, min, max)")
      ->check(positive_number);
  cmd->add_flag("--float64", opts->float64, "Time float64 (default float32, as the paper)");
  cmd->add_option("--csv,-o", opts->csv, "Also write the results as CSV to this file");
  add_engine_options(*cmd, opts->compute);
  cmd->get_option("--max-memory")
      ->description("Skip dense outputs needing more than this (default: half of physical RAM)");
  cmd->callback([opts] { opts->float64 ? run_bench_t<double>(*opts) : run_bench_t<float>(*opts); });
}

const CommandRegistration bench_registration{70, add_bench_command};

}  // namespace

}  // namespace pathlift::cli
