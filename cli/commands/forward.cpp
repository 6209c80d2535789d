// pathlift forward: f_theta(X) on a batch of data, and the activation pattern.

#include <fmt/format.h>

#include <memory>

#include "../common.hpp"
#include "../magnitudes.hpp"
#include "../matrix_io.hpp"
#include "../registry.hpp"
#include "pathlift/error.hpp"
#include "pathlift/forward.hpp"

namespace pathlift::cli {

namespace {

struct ForwardOptions {
  NetworkOptions network;
  ComputeOptions compute;
  std::string data;
  std::string output = "-";
  std::string pattern;
};

using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

void run_forward(const ForwardOptions& opts) {
  // Named, not a structured binding: lambdas capture net (clang 14 cannot capture a binding).
  const LoadedNetwork loaded = load_network(opts.network, opts.compute);
  const Network& net = *loaded.dag;
  const std::string& description = loaded.description;
  const LoadedTheta theta = load_theta(net, opts.compute);
  output_format(opts.output, Content::dense);  // a bad name is refused before the work
  if (!opts.pattern.empty()) {
    output_format(opts.pattern, Content::dense);
  }
  const Eigen::MatrixXd X = read_data(opts.data, net, description, opts.compute);
  const EngineOptions engine = engine_options(opts.compute, "forward");
  // forward() reports no fraction: the display shows the time elapsed.
  const ForwardResult fw =
      with_progress("forward pass", [&] { return forward(net, theta.theta, X, engine); });
  const ActivationPattern pattern = activation_pattern(net, fw);

  const RowMajor f = fw.outputs;
  require_representable(std::span<const double>(f.data(), static_cast<std::size_t>(f.size())),
                        "f(X)");
  // Paths whose |Phi_p| underflows contribute 0: exact only where they are negligible. An
  // output 0 next to them may be all underflow (refused); otherwise the outputs are finite and
  // normal and the loss is said.
  const double smallest = lifting_range(net, theta.theta).partial.min_log10;
  const std::string problem =
      range_problem<double>(LogRange{smallest, smallest}, "a product of weights along a path");
  if (!problem.empty()) {
    if ((f.array() == 0).any()) {
      throw RangeError(fmt::format(
          "f(X) has outputs 0 that may be underflows: {} (the path-lifting's magnitudes: `pathlift "
          "lift --log`)",
          problem));
    }
    std::fflush(stdout);
    fmt::print(stderr,
               "warning: {}; the paths below 2.2e-308 contribute 0 to f(X), which is exact only "
               "where they are negligible\n",
               problem);
  }
  write_dense(opts.output, f.data(), f.rows(), f.cols());
  if (!opts.pattern.empty()) {
    const RowMajor slopes = pattern.slopes;
    write_dense(opts.pattern, slopes.data(), slopes.rows(), slopes.cols());
  }
  if (opts.output != "-") {  // f(X) is the result: what was written is a status (stderr)
    fmt::print(stderr, "f(X): {} x {} ({} samples, outputs in output order) written to {}\n",
               f.rows(), f.cols(), f.rows(), opts.output);
    if (!opts.pattern.empty()) {
      fmt::print(stderr, "activation pattern: {} x {} slopes (nodes in node order) written to {}\n",
                 pattern.slopes.rows(), pattern.slopes.cols(), opts.pattern);
    }
    fmt::print(stderr, "margin: {}\n", pattern.margin);
  }
  if (pattern.on_kink) {
    std::fflush(stdout);
    fmt::print(stderr,
               "warning: margin 0: node {} has pre-activation exactly 0 on sample {} (a ReLU "
               "kink; theta lies in the null set Proposition 1 excludes)\n",
               printable(net.node_name(pattern.margin_node)), pattern.margin_sample);
  }
}

void add_forward_command(CLI::App& app) {
  auto opts = std::make_shared<ForwardOptions>();
  auto* cmd = add_network_command(
      app, "forward", "f_theta(X) on a batch: one row of outputs (output order) per row of X",
      opts->network, opts->compute, TakesTheta::yes);
  add_data_option(*cmd, opts->data);
  cmd->add_option("-o,--output", opts->output,
                  "Where f(X) (n x q) goes: .npy, .csv, .txt, .mtx, or - for stdout (default)");
  cmd->add_option("--pattern", opts->pattern,
                  "Also write the activation pattern: n x m slopes (1 active, 0 inactive ReLU, a "
                  "leaky ReLU on its negative side), nodes in node order");
  cmd->callback([opts] { run_forward(*opts); });
}

const CommandRegistration forward_registration{50, add_forward_command};

}  // namespace

}  // namespace pathlift::cli
