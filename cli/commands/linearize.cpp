// pathlift linearize: the sparse map L of Proposition 1 ({f_theta(x_i)} = L Phi(theta)) on a
// batch of data, verified against the forward pass and its finite differences.

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <stdexcept>

#include "../common.hpp"
#include "../matrix_io.hpp"
#include "../registry.hpp"
#include "pathlift/error.hpp"
#include "pathlift/lifting.hpp"
#include "pathlift/limits.hpp"
#include "pathlift/linearize.hpp"
#include "pathlift/magnitude.hpp"
#include "pathlift/path_memory.hpp"

namespace pathlift::cli {

namespace {

struct LinearizeOptions {
  NetworkOptions network;
  ComputeOptions compute;
  std::string data;
  std::string output;
  bool json = false;
  Index grad_samples = 8;
  Index grad_params = 16;
  std::uint64_t check_seed = 0;
};

/// After the report: a mismatch is a failed check (exit 1), or, when Phi and dPhi at theta
/// leave float64 (`range_problems`), no counterexample (exit 4); another status than ok a
/// warning.
void exit_by_status(const LinearizationCheck& check, const std::string& range_problems) {
  std::fflush(stdout);
  switch (check.status) {
    case LinearizationStatus::ok:
      return;
    case LinearizationStatus::mismatch:
      if (!range_problems.empty()) {
        throw RangeError(
            fmt::format("{}: not a counterexample, the magnitudes at theta are "
                        "beyond float64: {}",
                        check.message, range_problems));
      }
      throw CheckFailed(check.message);
    default:
      fmt::print(stderr, "warning: {}\n", check.message);
  }
}

void run_linearize(const LinearizeOptions& opts) {
  const auto start = std::chrono::steady_clock::now();
  require_one_stdout_result(opts.json, opts.output);
  if (!opts.output.empty()) {
    output_format(opts.output, Content::sparse);  // refused before the work
  }
  const LoadedNetwork loaded = load_network(opts.network, opts.compute);
  const Network& net = *loaded.dag;
  const std::string& description = loaded.description;
  const LoadedTheta theta = load_theta(net, opts.compute);
  const Eigen::MatrixXd X = read_data(opts.data, net, description, opts.compute);
  const Linearization lin = linearize(net, theta.theta, X, engine_options(opts.compute, "L"));
  // Phi and dPhi are held beside L for the check: refused on the sum, before either is built.
  require_bytes(static_cast<double>(lin.map.rows() + 1) * sizeof(Index) +
                    static_cast<double>(lin.map.nnz()) * (sizeof(EdgeId) + sizeof(double)) +
                    static_cast<double>(
                        estimate_bytes(net, {PathObject::path_lifting, PathObject::jacobian})),
                work_memory(opts.compute),
                fmt::format("checking L ({} x {}, nnz = {}): L, Phi and dPhi held together",
                            lin.map.rows(), lin.map.cols(), lin.map.nnz()));
  if (!opts.output.empty()) {
    write_csr(opts.output, lin.map);
  }
  const Buffer<double> phi =
      path_lifting<double>(net, theta.theta, engine_options(opts.compute, "Phi"));
  const CsrMatrix<double> dphi =
      jacobian<double>(net, theta.theta, engine_options(opts.compute, "dPhi"));
  LinearizationCheckOptions check_options;
  check_options.grad_samples = opts.grad_samples;
  check_options.grad_params = opts.grad_params;
  check_options.seed = opts.check_seed;
  check_options.engine = engine_options(opts.compute, "verifying f = L Phi");
  const LinearizationCheck check =
      verify_linearization(net, theta.theta, X, lin, phi, dphi, check_options);

  if (opts.json) {
    print_json(json_header("linearize", 1, description, theta.source), to_json(check));
  } else {
    // The report is the result without -o; with -o it describes the file, on stderr.
    std::FILE* out = text_stream(opts.output);
    const double entries = static_cast<double>(check.n * check.q) * static_cast<double>(check.P);
    fmt::print(out, "network      {} (theta: {})\n", description, theta.source);
    fmt::print(out, "data         {}: n = {} samples x r = {} inputs\n", opts.data, check.n,
               X.cols());
    fmt::print(out, "L            (n q) x P = {} x {}, nnz {} ({:.3g}% of the entries)\n",
               check.n * check.q, check.P, check.nnz_L,
               entries > 0 ? 100.0 * static_cast<double>(check.nnz_L) / entries : 0.0);
    if (std::isfinite(check.margin)) {
      fmt::print(out,
                 "margin       {:.6g} (min |pre-activation| over samples and ReLU nodes: node {}, "
                 "sample {})\n",
                 check.margin, net.node_name(lin.pattern.margin_node), lin.pattern.margin_sample);
    } else {
      fmt::print(out, "margin       none (no ReLU node)\n");
    }
    fmt::print(out, "f = L Phi    max relative error {:.3g} over {} entries\n", check.max_err_f,
               check.n * check.q);
    fmt::print(out,
               "df = L dPhi  max relative error {:.3g} over {} entries (central finite "
               "differences; {} skipped)\n",
               check.max_err_grad, check.grad_entries, check.grad_skipped);
    fmt::print(out, "status       {}\n", to_string(check.status));
    if (!opts.output.empty()) {
      fmt::print(out, "written      {}\n", opts.output);
    }
    fmt::print(out, "time         {:.3f} s\n", seconds_since(start));
  }
  exit_by_status(check, describe_problems<double>(lifting_range(net, theta.theta)));
}

void add_linearize_command(CLI::App& app) {
  auto opts = std::make_shared<LinearizeOptions>();
  auto* cmd = add_network_command(
      app, "linearize",
      "The sparse map L ((n q) x P) with f_theta(X) = L Phi(theta) (Proposition 1), verified "
      "against the forward pass and its finite differences (df/dtheta = L dPhi)",
      opts->network, opts->compute, TakesTheta::yes);
  add_data_option(*cmd, opts->data);
  cmd->add_option("-o,--output", opts->output,
                  "Write L (row i q + j = sample i, output j; column p = path p in canonical "
                  "order): .npz, .mtx, .txt or .csv, or - for stdout; the report then goes to "
                  "stderr");
  add_json_flag(*cmd, opts->json, "n, q, P, nnz_L, margin, max_err_f, max_err_grad, status");
  cmd->add_option("--grad-samples", opts->grad_samples,
                  "Samples whose gradient rows are checked against finite differences")
      ->capture_default_str()
      ->check(non_negative_number);
  cmd->add_option("--grad-params", opts->grad_params,
                  "Parameters whose gradient columns are checked")
      ->capture_default_str()
      ->check(non_negative_number);
  cmd->add_option("--check-seed", opts->check_seed,
                  "Seed of the samples and parameters the gradient check picks")
      ->capture_default_str();
  cmd->callback([opts] { run_linearize(*opts); });
}

const CommandRegistration linearize_registration{55, add_linearize_command};

}  // namespace

}  // namespace pathlift::cli
