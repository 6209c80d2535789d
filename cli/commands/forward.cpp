// pathlift forward: f_theta(X) on a batch of data, and the activation pattern.

#include <fmt/format.h>

#include <memory>

#include "../common.hpp"
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
  const auto [net, description] = load_network(opts.network, opts.compute);
  const LoadedTheta theta = load_theta(net, opts.compute);
  const Eigen::MatrixXd X = read_data(opts.data, net, description);
  const EngineOptions engine = engine_options(opts.compute, "forward");
  // forward() reports no fraction: the display shows the time elapsed.
  const ForwardResult fw =
      with_progress("forward pass", [&] { return forward(net, theta.theta, X, engine); });
  const ActivationPattern pattern = activation_pattern(net, fw);

  const RowMajor f = fw.outputs;
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
               net.node_name(pattern.margin_node), pattern.margin_sample);
  }
}

void add_forward_command(CLI::App& app) {
  auto opts = std::make_shared<ForwardOptions>();
  auto* cmd = app.add_subcommand(
      "forward", "f_theta(X) on a batch: one row of outputs (output order) per row of X");
  add_network_options(*cmd, opts->network);
  add_theta_options(*cmd, opts->compute);
  add_data_option(*cmd, opts->data);
  cmd->add_option("-o,--output", opts->output,
                  "Where f(X) (n x q) goes: .npy, .csv, .txt, .mtx, or - for stdout (default)");
  cmd->add_option("--pattern", opts->pattern,
                  "Also write the activation pattern: n x m slopes (1 active, 0 inactive ReLU, a "
                  "leaky ReLU on its negative side), nodes in node order");
  add_engine_options(*cmd, opts->compute);
  cmd->callback([opts] { run_forward(*opts); });
}

const CommandRegistration registration{50, add_forward_command};

}  // namespace

}  // namespace pathlift::cli
