// pathlift kernel: the path kernel K = dPhi^T dPhi without enumerating paths: its diagonal,
// the full d x d matrix (while it fits in memory), its top eigenvalues (Lanczos on matrix-free
// products K v) and its trace. On a layer graph (--onnx, a pathlift-layers file) all but --full
// run layer by layer without unrolling; --full unrolls it.

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <stdexcept>
#include <string>

#include "../common.hpp"
#include "../magnitudes.hpp"
#include "../matrix_io.hpp"
#include "../registry.hpp"
#include "pathlift/error.hpp"
#include "pathlift/kernel.hpp"
#include "pathlift/limits.hpp"
#include "pathlift/norms.hpp"
#include "pathlift/path_free.hpp"

namespace pathlift::cli {

namespace {

/// The way out of a RangeError, ending its message.
constexpr std::string_view k_trace_hint =
    " (`pathlift kernel --trace` and `pathlift norm` work at any magnitude)";

/// f(), a RangeError (a result beyond float64) saying what works at any magnitude.
template <class F>
auto with_trace_hint(F&& f) {
  try {
    return f();
  } catch (const RangeError& e) {
    throw RangeError(fmt::format("{}{}", e.what(), k_trace_hint));
  }
}

struct KernelOptions {
  NetworkOptions network;
  ComputeOptions compute;
  bool diag = false;
  bool full = false;
  bool trace = false;
  Index top_eig = 0;
  std::string output;
  std::string method = "auto";
  EigenOptions eigen;  // --tol, --max-iterations, --subspace (run_kernel sets the rest)
  std::string vectors;
  bool json = false;
};

using Json = nlohmann::ordered_json;

/// trace(K) in `j`: "trace" (null beyond double's range) and "log10_trace" (null for 0).
void add_trace(Json& j, const ScaledReal& trace) {
  j["trace"] = scaled_value_json(trace);
  j["log10_trace"] = scaled_log10_json(trace);
}

/// trace(K) as text: the value, or 10^x beyond double's range.
std::string trace_text(const ScaledReal& t) {
  if (t.fits_double() || t.is_zero()) {
    return fmt::format("{:.10e}", t.value());
  }
  return fmt::format("10^{:.10f}", t.log10());
}

/// The kernel's path-free computations (path_free.hpp: a layer graph layer by layer, without
/// unrolling), each with a progress display.
class KernelSource {
 public:
  KernelSource(const Model& model, std::span<const double> theta, const ComputeOptions& compute)
      : m_model(model), m_theta(theta), m_compute(compute) {}

  /// f(options), with a progress display labelled `label` (the library reports it on either
  /// kind of model).
  template <class F>
  decltype(auto) shown(const char* label, F&& f) const {
    return f(engine_options(m_compute, label));
  }

  [[nodiscard]] ScaledReal trace() const {
    return shown("trace(K)",
                 [&](const EngineOptions& o) { return kernel_trace(m_model, m_theta, o); });
  }

  [[nodiscard]] Buffer<double> diagonal() const {
    return shown("diag(K)",
                 [&](const EngineOptions& o) { return kernel_diagonal(m_model, m_theta, o); });
  }

  [[nodiscard]] KernelEigenvalues top_eigenvalues(Index count, const EigenOptions& eo) const {
    return kernel_top_eigenvalues(m_model, m_theta, count, eo);
  }

 private:
  const Model& m_model;
  std::span<const double> m_theta;
  const ComputeOptions& m_compute;
};

/// The text form of --top-eig (d parameters): the eigenvalues, their residuals, where the
/// vectors went, and trace(K).
void print_eigenvalues(std::FILE* text, const KernelEigenvalues& r, const KernelOptions& opts,
                       Index d, const ScaledReal& trace) {
  const char* how = r.method == EigenMethod::dense    ? "dense eigensolver"
                    : r.method == EigenMethod::lobpcg ? "LOBPCG on matrix-free block products K V"
                                                      : "block Lanczos on matrix-free K v";
  fmt::print(text, "top {} eigenvalues of K ({} x {}), largest first ({}, {}{}):\n", opts.top_eig,
             d, d, how, to_string(r.status),
             r.dense ? "" : fmt::format(", {} products K v", r.products));
  const bool residuals = r.residuals.size() == r.values.size() && r.values.size() > 0;
  if (residuals) {
    fmt::print(text, "  {:>4}  {:>18}  {}\n", "", "eigenvalue", "||K v - lambda v|| / lambda");
  }
  for (Index i = 0; i < r.values.size(); ++i) {
    fmt::print(text, "  {:>4}  {:.12e}{}\n", i + 1, r.values(i),
               residuals ? fmt::format("  {:.2e}", r.residuals(i)) : "");
  }
  if (!opts.vectors.empty()) {
    fmt::print(text, "eigenvectors ({} x {}, column j for eigenvalue j) written to {}\n", d,
               r.vectors.cols(), opts.vectors);
  }
  fmt::print(text, "trace(K)  {}\n", trace_text(trace));
}

void run_kernel(const KernelOptions& opts) {
  require_one_stdout_result(opts.json, opts.output);
  if (!opts.vectors.empty() && opts.top_eig == 0) {
    throw std::invalid_argument("--vectors writes the eigenvectors of --top-eig N");
  }
  if (opts.vectors == "-") {
    throw std::invalid_argument("--vectors needs a file (.npy, .txt, .csv, .mtx), not stdout");
  }
  if (opts.trace && !opts.output.empty()) {
    throw std::invalid_argument("--trace prints one number: -o is for --diag, --full, --top-eig");
  }
  const LoadedModel model = load_model(opts.network, opts.compute);
  const std::string& description = model.description;
  const LoadedTheta theta = load_theta(model, opts.compute);
  const EngineOptions engine = engine_options(opts.compute, "kernel");
  const KernelSource source(model.model, theta.theta, opts.compute);
  const Index d = model.model.num_params();
  const auto start = std::chrono::steady_clock::now();
  Json j = json_header("kernel", 1, description, theta.source);
  j["d"] = d;
  // The text is the result when no -o is given, else a report on stderr (docs/cli.md#streams).
  std::FILE* text = text_stream(opts.output);

  if (opts.diag || opts.full) {
    if (opts.output.empty()) {
      throw std::invalid_argument(
          fmt::format("--{} needs -o FILE (.npy, .txt, .csv, .mtx; - for stdout)",
                      opts.diag ? "diag" : "full"));
    }
    output_format(opts.output, opts.diag ? Content::vector : Content::dense);  // before the work
    const ScaledReal trace = source.trace();
    if (opts.diag) {
      // The library refuses a diagonal beyond float64 (overflow, or 0s that are underflows).
      const Buffer<double> diag = with_trace_hint([&] { return source.diagonal(); });
      write_vector(opts.output, std::span<const double>(diag.data(), diag.size()));
    } else {
      // The full d x d kernel is assembled on the DAG: a layer graph is unrolled for it (with
      // its progress line, and the commands that need no unrolling named if it does not fit),
      // once d x d doubles are known to fit.
      require_kernel_fits(d, engine.max_memory);
      (void)model.network(opts.compute);
      const DenseMatrix k = with_trace_hint(
          [&] { return kernel(model.model, theta.theta, engine_options(opts.compute, "K")); });
      write_dense(opts.output, k.data(), k.rows(), k.cols());
    }
    const double seconds = seconds_since(start);
    if (opts.json) {
      j["what"] = opts.diag ? "diagonal" : "full";
      j["output"] = opts.output;
      add_trace(j, trace);
      j["seconds"] = seconds;
      print_json(j);
      return;
    }
    if (opts.diag) {
      fmt::print(text,
                 "diagonal of K ({} entries, K[k,k] = sum over paths through k of the product of "
                 "their other weights squared) written to {}\n",
                 d, opts.output);
    } else {
      fmt::print(text, "K ({} x {}, float64, symmetric) written to {}\n", d, d, opts.output);
    }
    fmt::print(text, "trace(K)  {}\n", trace_text(trace));
    fmt::print(text, "time      {:.3f} s\n", seconds);
    return;
  }

  if (opts.trace) {
    const ScaledReal trace = source.trace();
    if (opts.json) {
      add_trace(j, trace);
      print_json(j);
    } else {
      fmt::print("trace(K)  {}\n", trace_text(trace));
    }
    return;
  }

  if (!opts.output.empty()) {
    output_format(opts.output, Content::vector);  // before the work
  }
  if (!opts.vectors.empty()) {
    output_format(opts.vectors, Content::dense);
  }
  EigenOptions eo = opts.eigen;
  eo.method = parse_eigen_method(opts.method);
  eo.vectors = !opts.vectors.empty();
  eo.engine = engine_options(opts.compute, "top eigenvalues of K");
  const ScaledReal trace = source.trace();
  if (trace.log10() > max_log10_of<double>() - 1) {  // the entries of K and K v overflow
    throw RangeError(fmt::format(
        "the eigenvalues of K are computed in float64, and trace(K) = 10^{:.1f} overflows it (the "
        "largest float64 is 1.8e308){}",
        trace.log10(), k_trace_hint));
  }
  const KernelEigenvalues r = source.top_eigenvalues(opts.top_eig, eo);
  const double seconds = seconds_since(start);
  if (!opts.output.empty()) {
    write_vector(opts.output, std::span<const double>(r.values.data(),
                                                      static_cast<std::size_t>(r.values.size())));
  }
  if (!opts.vectors.empty()) {
    // d x k, row-major as the writers take it: row i holds entry i of each eigenvector.
    const DenseMatrix v = r.vectors;
    write_dense(opts.vectors, v.data(), v.rows(), v.cols());
  }
  if (opts.json) {
    j.update(Json::parse(to_json(r, -1)));
    add_trace(j, trace);
    j["seconds"] = seconds;
    print_json(j);
  } else {
    print_eigenvalues(text, r, opts, d, trace);
    fmt::print(text, "time      {:.3f} s\n", seconds);
  }
  if (r.status != EigenStatus::converged) {
    std::fflush(stdout);
    fmt::print(stderr, "warning: {} of {} eigenvalues converged ({}); {}\n", r.values.size(),
               opts.top_eig, to_string(r.status),
               r.status == EigenStatus::not_converged
                   ? "raise --max-iterations or --tol"
                   : "the iteration failed (typically rank(K) < N): try --method dense");
  }
}

void add_kernel_command(CLI::App& app) {
  auto opts = std::make_shared<KernelOptions>();
  auto* cmd = add_network_command(
      app, "kernel",
      "The path kernel K = dPhi^T dPhi by dynamic programming (no path enumerated): --diag, "
      "--full, --top-eig N or --trace. On an ONNX model or a pathlift-layers file, --diag, "
      "--trace and --top-eig run layer by layer without unrolling; --full unrolls it",
      opts->network, opts->compute, TakesTheta::yes);
  auto* mode = cmd->add_option_group("mode", "What to compute (exactly one)");
  mode->add_flag("--diag", opts->diag,
                 "The diagonal K[k,k] (d numbers, one forward and one backward pass) to -o");
  mode->add_flag("--full", opts->full,
                 "The full d x d kernel (float64) to -o; refused when d x d exceeds --max-memory "
                 "(a layer graph is unrolled for it, within --max-memory)");
  mode->add_option(
          "--top-eig", opts->top_eig,
          "The N largest eigenvalues (block Lanczos on matrix-free products K V; dense "
          "for small d, which unrolls a layer graph); --vectors FILE for the "
          "eigenvectors. resnet18 at 3x224x224 on 2 cores: 0.17-0.2 s per product (about 0.3 s "
          "a step with the solver's own work), 21 s to 1.2 minutes for N = 3 at --tol 1e-6 "
          "(the spectrum decides how many products)")
      ->check(positive_integer);
  mode->add_flag("--trace", opts->trace, "trace(K) = sum of the diagonal");
  mode->require_option(1);
  cmd->add_option("-o,--output", opts->output,
                  "Output file: .npy, .txt, .csv, .mtx, or - for stdout (--diag and --full need "
                  "it; with --top-eig it receives the eigenvalues; the text report then goes to "
                  "stderr)");
  cmd->add_option("--vectors", opts->vectors,
                  "With --top-eig: the eigenvectors (d x N, column j for eigenvalue j, float64) "
                  "to this file (.npy, .txt, .csv, .mtx); their residuals are printed");
  cmd->add_option(
         "--method", opts->method,
         "Eigenvalues: auto (dense for d <= 256 or N > d/2, else block Lanczos), "
         "lanczos (a block of 1 vector and a check for the copies of repeated eigenvalues, "
         "a block of N where twin units repeat them), "
         "lobpcg, dense")
      ->check(CLI::IsMember({"auto", "lobpcg", "lanczos", "dense"}));
  cmd->add_option("--tol", opts->eigen.tolerance,
                  "Relative tolerance: Lanczos and LOBPCG stop when ||K v - lambda v|| <= tol x "
                  "lambda for each pair")
      ->capture_default_str()
      ->check(positive_number);
  cmd->add_option("--max-iterations,--max-iter", opts->eigen.max_iterations,
                  "The iteration cap of every method: LOBPCG iterations or Lanczos restarts "
                  "(Python's max_iterations)")
      ->capture_default_str()
      ->check(positive_number);
  cmd->add_option("--subspace", opts->eigen.subspace,
                  "Lanczos's basis size (default max(2N + 1, N + 20), narrowed to --max-memory) "
                  "or LOBPCG's block size (default N + max(2, N/2)); Python's subspace")
      ->check(positive_integer);
  add_json_flag(*cmd, opts->json, "d and what was computed");
  cmd->callback([opts] { run_kernel(*opts); });
}

const CommandRegistration kernel_registration{65, add_kernel_command};

}  // namespace

}  // namespace pathlift::cli
