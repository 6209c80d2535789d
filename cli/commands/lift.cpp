// pathlift lift / skeleton / jacobian: Phi, B and dPhi written to a file (.npz, .mtx, .npy,
// .txt/.csv, or - for stdout).

#include <fmt/format.h>

#include <memory>

#include "../common.hpp"
#include "../magnitudes.hpp"
#include "../matrix_io.hpp"
#include "../registry.hpp"
#include "pathlift/counting.hpp"
#include "pathlift/error.hpp"
#include "pathlift/lifting.hpp"
#include "pathlift/limits.hpp"
#include "pathlift/path_memory.hpp"

namespace pathlift::cli {

namespace {

struct LiftOptions {
  NetworkOptions network;
  ComputeOptions compute;
  std::string output;
  bool float32 = false;
  bool dense = false;
  bool paper_formula = false;
  bool log = false;
};

void report_written(const std::string& what, const std::string& output, double seconds) {
  if (output != "-") {
    fmt::print(stderr, "wrote {} to {} ({:.3f} s to compute)\n", what, output, seconds);
  }
}

/// The network, its description and theta (as given, and as T) of Phi and dPhi.
template <class T>
struct LiftInput {
  LoadedNetwork loaded;
  LoadedTheta given;
  std::vector<T> theta;

  explicit LiftInput(const LiftOptions& opts)
      : loaded(load_network(opts.network, opts.compute)),
        given(load_theta(*loaded.dag, opts.compute)),
        theta(given.theta.begin(), given.theta.end()) {}
  [[nodiscard]] const Network& net() const { return *loaded.dag; }
};

/// The way out of a RangeError, ending its message.
constexpr std::string_view k_log_hint =
    " (--log writes the exact sign and log10 magnitude instead; `pathlift norm` and `pathlift "
    "kernel` work at any magnitude)";

/// --log: the result is float64 sign and log10 columns; --float32 and --dense do not apply.
void check_log_options(const LiftOptions& opts) {
  if (opts.float32 || opts.dense || opts.paper_formula) {
    throw std::invalid_argument(
        fmt::format("--log writes float64 sign and log10 columns: drop {}",
                    opts.float32 ? "--float32" : (opts.dense ? "--dense" : "--paper-formula")));
  }
  output_format(opts.output, Content::dense,
                " (--log writes a dense table: rows of sign and log10, or of row, column, sign "
                "and log10)");
}

/// lift --log: P x 2, [sign, log10|Phi_p|] a path; jacobian --log: nnz x 4, [row, column,
/// sign, log10|dPhi[row, column]|] an entry of B's pattern, row by row. Memory: the path set,
/// the signs and logs and the table, refused together over the limit.
void run_log(const LiftOptions& opts, bool jacobian) {
  const LoadedNetwork loaded = load_network(opts.network, opts.compute);
  const Network& net = *loaded.dag;
  const std::string& description = loaded.description;
  const LoadedTheta theta = load_theta(net, opts.compute);
  const EngineOptions engine = engine_options(opts.compute, jacobian ? "log dPhi" : "log Phi");
  check_log_options(opts);
  const auto start = std::chrono::steady_clock::now();
  // The table beside what the library holds (the path set, the signs and logs).
  const PathCounts counts = count_paths(net);
  require_bytes(
      static_cast<double>(estimate_bytes(net, {PathObject::path_set, PathObject::skeleton})) +
          (jacobian
               ? counts.nnz.approx() * (4 * sizeof(double) + sizeof(std::int8_t) + sizeof(double))
               : counts.paths.approx() *
                     (2 * sizeof(double) + sizeof(std::int8_t) + sizeof(double))),
      engine.max_memory,
      jacobian ? "the table of dPhi's entries (--log)" : "the table of Phi (--log)");
  std::vector<double> rows;
  Index n = 0;
  if (jacobian) {
    const LogJacobian j = log_jacobian(net, theta.theta, engine);
    const auto off = j.pattern.offsets();
    const auto cols = j.pattern.indices();
    n = static_cast<Index>(cols.size());
    rows.resize(4 * cols.size());
    for (Index p = 0; p < j.pattern.rows; ++p) {
      for (auto k = static_cast<std::size_t>(off[static_cast<std::size_t>(p)]);
           k < static_cast<std::size_t>(off[static_cast<std::size_t>(p) + 1]); ++k) {
        rows[4 * k] = static_cast<double>(p);
        rows[4 * k + 1] = static_cast<double>(cols[k]);
        rows[4 * k + 2] = j.values.sign[k];
        rows[4 * k + 3] = j.values.log10[k];
      }
    }
  } else {
    const SignedLog10 phi = log_path_lifting(net, theta.theta, engine);
    n = static_cast<Index>(phi.sign.size());
    rows = sign_log10_rows(phi);
  }
  const double elapsed = seconds_since(start);
  const Index width = jacobian ? 4 : 2;
  write_dense<double>(opts.output, rows.data(), n, width);
  report_written(fmt::format("{} ({} rows) of {}",
                             jacobian ? "row, column, sign and log10|dPhi| of the entries of dPhi"
                                      : "sign and log10|Phi_p| of the paths",
                             n, description),
                 opts.output, elapsed);
}

/// Refuses a dense P x d output before anything is computed or written.
void require_dense(const Network& net, const EngineOptions& engine, std::size_t scalar_size) {
  const PathCounts counts = count_paths(net);
  require_memory(counts.paths, counts.nnz, net.num_params(),
                 estimate_bytes(counts.paths, counts.nnz, net.num_params(),
                                PathObject::dense_jacobian, scalar_size),
                 engine.max_memory, "the dense output (--dense)");
}

template <class T>
void run_lift_t(const LiftOptions& opts) {
  const LiftInput<T> in(opts);
  const Network& net = in.net();
  const EngineOptions engine = engine_options(opts.compute, "Phi");
  output_format(opts.output, Content::vector);  // a bad extension is refused before the work
  require_lifting_fits<T>(net, in.given.theta, false, "Phi", k_log_hint);
  const auto start = std::chrono::steady_clock::now();
  const Buffer<T> phi = path_lifting<T>(net, std::span<const T>(in.theta), engine);
  const double elapsed = seconds_since(start);
  write_vector<T>(opts.output, std::span<const T>(phi.data(), phi.size()));
  report_written(fmt::format("Phi ({} paths of {})", phi.size(), in.loaded.description),
                 opts.output, elapsed);
}

/// The output file's format against --dense, refused before the work with the way out.
void check_matrix_output(const LiftOptions& opts) {
  output_format(opts.output, opts.dense ? Content::dense : Content::sparse,
                opts.dense ? " (or drop --dense)" : " (or add --dense for a dense .npy)");
}

void run_skeleton(const LiftOptions& opts) {
  const LoadedNetwork loaded = load_network(opts.network, opts.compute);
  const Network& net = *loaded.dag;
  const std::string& description = loaded.description;
  const EngineOptions engine = engine_options(opts.compute, "B");
  check_matrix_output(opts);  // before the work
  if (opts.dense) {
    require_dense(net, engine, sizeof(double));
  }
  const auto start = std::chrono::steady_clock::now();
  const CsrPattern b = skeleton(net, engine);
  const double elapsed = seconds_since(start);
  if (opts.dense) {
    const auto m = to_dense(b, engine);
    write_dense<double>(opts.output, m.data(), m.rows(), m.cols());
  } else {
    write_pattern(opts.output, b);
  }
  report_written(fmt::format("B ({} x {}, nnz = {}) of {}", b.rows, b.cols, b.nnz(), description),
                 opts.output, elapsed);
}

template <class T>
void run_jacobian_t(const LiftOptions& opts) {
  const LiftInput<T> in(opts);
  const Network& net = in.net();
  const EngineOptions engine = engine_options(opts.compute, "dPhi");
  check_matrix_output(opts);  // before the work
  require_lifting_fits<T>(net, in.given.theta, true, "dPhi", k_log_hint);
  if (opts.paper_formula) {
    require_lifting_fits<T>(net, in.given.theta, false, "Phi (for the paper's formula)",
                            k_log_hint);
  }
  if (opts.dense) {
    require_dense(net, engine, sizeof(T));
  }
  const auto start = std::chrono::steady_clock::now();
  CsrMatrix<T> j;
  if (opts.paper_formula) {
    const PathSet paths = enumerate_paths(net, engine);
    const Buffer<T> phi = path_lifting<T>(paths, std::span<const T>(in.theta), engine);
    j = jacobian_paper_formula<T>(paths, std::span<const T>(phi.data(), phi.size()),
                                  std::span<const T>(in.theta), engine);
  } else {
    j = jacobian<T>(net, std::span<const T>(in.theta), engine);
  }
  const double elapsed = seconds_since(start);
  if (opts.dense) {
    const auto m = to_dense(j, engine);
    write_dense<T>(opts.output, m.data(), m.rows(), m.cols());
  } else {
    write_csr<T>(opts.output, j);
  }
  report_written(fmt::format("dPhi ({} x {}, nnz = {}{}) of {}", j.rows(), j.cols(), j.nnz(),
                             opts.paper_formula ? ", paper's formula" : "", in.loaded.description),
                 opts.output, elapsed);
}

CLI::App* common(CLI::App& app, const char* name, const char* help,
                 const std::shared_ptr<LiftOptions>& opts, bool theta) {
  auto* cmd = app.add_subcommand(name, help);
  add_network_options(*cmd, opts->network);
  if (theta) {
    add_theta_options(*cmd, opts->compute);
    cmd->add_flag("--float32", opts->float32, "Compute in float32 (default float64)");
  }
  add_engine_options(*cmd, opts->compute);
  cmd->add_option("-o,--output", opts->output,
                  "Output file: .npz (sparse, scipy.sparse.load_npz), .mtx (Matrix Market), .npy "
                  "(dense), .txt or .csv; - for stdout")
      ->required();
  return cmd;
}

void add_lift_commands(CLI::App& app) {
  {
    auto opts = std::make_shared<LiftOptions>();
    auto* cmd = common(app, "lift", "Write the path-lifting Phi(theta) (P values, canonical order)",
                       opts, true);
    cmd->add_flag("--log", opts->log,
                  "Write sign and log10|Phi_p| (P x 2, dense: .npy, .txt, .csv), exact at any "
                  "magnitude (Phi beyond float64 is refused with exit 4 otherwise)");
    cmd->callback([opts] {
      opts->log       ? run_log(*opts, false)
      : opts->float32 ? run_lift_t<float>(*opts)
                      : run_lift_t<double>(*opts);
    });
  }
  {
    auto opts = std::make_shared<LiftOptions>();
    auto* cmd = common(app, "skeleton", "Write the skeleton B (P x d, 0/1, sparse unless --dense)",
                       opts, false);
    cmd->add_flag("--dense", opts->dense, "Write a dense P x d matrix (refused when too large)");
    cmd->callback([opts] { run_skeleton(*opts); });
  }
  {
    auto opts = std::make_shared<LiftOptions>();
    auto* cmd =
        common(app, "jacobian",
               "Write the Jacobian dPhi (P x d, B's sparsity; sparse unless --dense)", opts, true);
    cmd->add_flag("--dense", opts->dense, "Write a dense P x d matrix (refused when too large)");
    cmd->add_flag("--paper-formula", opts->paper_formula,
                  "Use the paper's diag(Phi) B diag(1/theta) (inf/NaN where a weight is 0)");
    cmd->add_flag("--log", opts->log,
                  "Write row, column, sign and log10|dPhi| of each entry (nnz x 4, dense: .npy, "
                  ".txt, .csv), exact at any magnitude (dPhi beyond float64 is refused with exit 4 "
                  "otherwise)");
    cmd->callback([opts] {
      opts->log       ? run_log(*opts, true)
      : opts->float32 ? run_jacobian_t<float>(*opts)
                      : run_jacobian_t<double>(*opts);
    });
  }
}

const CommandRegistration lift_registration{22, add_lift_commands};

}  // namespace

}  // namespace pathlift::cli
