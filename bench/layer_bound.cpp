// The layer DP beside the machine's float64 GEMM (issue 33): how close pathlift's passes on an
// ImageNet CNN come to the arithmetic they need.
//
//   layer_bound MODEL.onnx [--input-shape 3,224,224] [--threads 2] [--repeat 3] [--per-layer]
//               [--kv-only N] [--diag-only N]
//
// Prints, in one process, with --threads threads (pathlift's and Eigen's):
//   - an Eigen float64 GEMM of 1.8 G multiply-adds (1216^3, resnet18's forward at 224) built
//     as this program is (-march=native by default), its time and GFLOP/s: the bound;
//   - the L1 and L2 path-norm passes (on position classes, docs/layers.md#position-classes; the
//     L2 pass also on full tensors, and the convolutions' multiply-adds both ways), the kernel
//     diagonal, one K v (kernel_matvec: the kept
//     sums included), K v and K V for 8 vectors on a kept LayerKernelOperator, and each one's
//     ratio to the GEMM or to the L2 pass, the acceptance lines of issue 33;
//   - with --kv-only N, only N products K v on a kept operator (for a profiler);
//   - with --diag-only N, only N kernel diagonals (for a profiler);
//   - with --per-layer, a table: each convolution or linear layer's forward map in the L2 pass
//     on full tensors (im2col, the transformed weights, the GEMM, the bias and renormalisation)
//     beside an Eigen GEMM of its own shape, and what the layers without parameters cost.
// The model: an ONNX export, e.g. torchvision's resnet18 (random init, eval mode):
//   /usr/bin/python3 -c "import torch, torchvision; torch.onnx.export(
//       torchvision.models.resnet18().eval(), torch.zeros(1, 3, 224, 224), 'resnet18.onnx')"
//   build/bench/layer_bound resnet18.onnx --threads 2 --per-layer

#include <fmt/format.h>

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "pathlift/builtins.hpp"
#include "pathlift/kernel.hpp"
#include "pathlift/layer_dp.hpp"
#include "pathlift/layers.hpp"
#include "pathlift/model.hpp"
#include "pathlift/norms.hpp"
#include "src/layer_dp/detail/layer_classes.hpp"
#include "src/layer_dp/detail/layer_dp_engine.hpp"
#include "src/layers/layers_geometry.hpp"

namespace {

using pathlift::Index;
using Clock = std::chrono::steady_clock;

double seconds(const std::function<void()>& f, int repeat) {
  double best = 1e300;
  for (int r = 0; r < repeat; ++r) {
    const auto t0 = Clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

/// The best time of a rows x inner x cols float64 GEMM (row-major operands, as the engine's).
double gemm_seconds(Index rows, Index inner, Index cols, int repeat) {
  using RowMat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const RowMat a = RowMat::Random(rows, inner);
  const RowMat b = RowMat::Random(inner, cols);
  RowMat c(rows, cols);
  return seconds([&] { c.noalias() = a * b; }, repeat);
}

struct Args {
  std::string model;
  std::vector<Index> shape;
  int threads = 2;
  int repeat = 3;
  bool per_layer = false;
  int kv_only = 0;    // --kv-only N: N products on a kept operator and nothing else (to profile)
  int diag_only = 0;  // --diag-only N: N kernel diagonals and nothing else (to profile)
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    if (s == "--input-shape" && i + 1 < argc) {
      a.shape = pathlift::parse_layer_sizes(argv[++i]);
    } else if (s == "--threads" && i + 1 < argc) {
      a.threads = std::atoi(argv[++i]);
    } else if (s == "--repeat" && i + 1 < argc) {
      a.repeat = std::max(1, std::atoi(argv[++i]));
    } else if (s == "--kv-only" && i + 1 < argc) {
      a.kv_only = std::max(1, std::atoi(argv[++i]));
    } else if (s == "--diag-only" && i + 1 < argc) {
      a.diag_only = std::max(1, std::atoi(argv[++i]));
    } else if (s == "--per-layer") {
      a.per_layer = true;
    } else if (a.model.empty() && !s.starts_with("-")) {
      a.model = s;
    } else {
      fmt::print(stderr,
                 "usage: layer_bound MODEL.onnx [--input-shape 3,224,224] [--threads N] "
                 "[--repeat R] [--per-layer] [--kv-only N] [--diag-only N]\n");
      std::exit(2);
    }
  }
  if (a.model.empty()) {
    fmt::print(stderr,
               "layer_bound: a model file is needed (see the comment of layer_bound.cpp)\n");
    std::exit(2);
  }
  return a;
}

void per_layer_table(const pathlift::LayerGraph& g, std::span<const double> theta,
                     const pathlift::EngineOptions& engine, int repeat, double full_l2) {
  using namespace pathlift::detail;
  const EigenSerial serial;
  const LayerPlan plan(g, engine);
  const WeightSpec sq{Mode::power, 2, theta, {}};
  const std::vector<TensorPtr> a = forward_pass(plan, sq, true, 1.0, nullptr, nullptr, {0, 1});
  fmt::print("\n{:<28} {:>6} {:>22} {:>8} {:>10} {:>10} {:>7}\n", "layer", "kind",
             "GEMM rows x inner x cols", "G madds", "pass ms", "GEMM ms", "ratio");
  double total = 0;
  double total_gemm = 0;
  for (std::size_t l = 1; l < plan.size(); ++l) {
    const pathlift::Layer& ly = plan.layer(l);
    if (ly.kind != pathlift::LayerKind::conv && ly.kind != pathlift::LayerKind::linear) {
      continue;
    }
    Index rows = 0;
    Index inner = 0;
    Index cols = 0;
    Index groups = 1;
    if (ly.kind == pathlift::LayerKind::conv) {
      const Window& w = plan.window(l);
      groups = w.groups;
      rows = w.channels_out / w.groups;
      inner = (w.channels_in / w.groups) * w.h.kernel * w.w.kernel;
      cols = w.h.out * w.w.out;
    } else {
      rows = plan.entries(l);
      inner = plan.entries(plan.input(l));
      cols = 1;
    }
    const Tensor& x = *a[plan.input(l)];
    const double t = seconds([&] { (void)param_forward(plan, l, x, sq, 1.0); }, repeat);
    double tg = 0;
    {
      Eigen::setNbThreads(engine.threads);
      tg = groups * gemm_seconds(rows, inner, cols, repeat);
      Eigen::setNbThreads(1);
    }
    total += t;
    total_gemm += tg;
    const double madds = static_cast<double>(groups * rows * inner * cols);
    fmt::print("{:<28} {:>6} {:>22} {:>8.3f} {:>10.2f} {:>10.2f} {:>7.2f}\n", ly.name.substr(0, 28),
               pathlift::to_string(ly.kind),
               fmt::format("{}{} x {} x {}", groups > 1 ? fmt::format("{} x ", groups) : "", rows,
                           inner, cols),
               madds / 1e9, t * 1e3, tg * 1e3, t / tg);
  }
  fmt::print("{:<28} {:>6} {:>22} {:>8} {:>10.2f} {:>10.2f} {:>7.2f}\n", "parameter layers", "", "",
             "", total * 1e3, total_gemm * 1e3, total / total_gemm);
  fmt::print("{:<28} {:>6} {:>22} {:>8} {:>10.2f}\n", "the rest of the full L2 pass", "", "", "",
             (full_l2 - total) * 1e3);
}

/// The L2 pass on full tensors (the position classes off), and the multiply-adds of its
/// convolutions and linear layers: full, and on the classes.
struct FullPass {
  double seconds = 0;
  double madds_full = 0;
  double madds_classes = 0;
};

FullPass full_pass(const pathlift::LayerGraph& g, std::span<const double> theta,
                   const pathlift::EngineOptions& engine, int repeat) {
  using namespace pathlift::detail;
  const EigenSerial serial;
  const LayerPlan plan(g, engine);
  const WeightSpec sq{Mode::power, 2, theta, {}};
  FullPass r;
  r.seconds = seconds(
      [&] {
        (void)forward_pass(plan, sq, false, 1.0, nullptr, nullptr, {0, 1});
      },
      repeat);
  const LayerClasses classes = forward_classes(plan);
  for (std::size_t l = 1; l < plan.size(); ++l) {
    const pathlift::Layer& ly = plan.layer(l);
    double per_position = 0;
    if (ly.kind == pathlift::LayerKind::conv) {
      const Window& w = plan.window(l);
      per_position = static_cast<double>(w.channels_out * (w.channels_in / w.groups) * w.h.kernel *
                                         w.w.kernel);
    } else if (ly.kind == pathlift::LayerKind::linear) {
      per_position = static_cast<double>(plan.entries(l) * plan.entries(plan.input(l)));
    } else {
      continue;
    }
    const Index positions =
        ly.kind == pathlift::LayerKind::conv ? plan.window(l).h.out * plan.window(l).w.out : 1;
    r.madds_full += per_position * static_cast<double>(positions);
    r.madds_classes +=
        per_position * static_cast<double>(classes[l] ? classes[l]->positions() : positions);
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  pathlift::ModelOptions mo;
  mo.input_shape = args.shape;
  const pathlift::Model model = pathlift::load_model(args.model, mo);
  const pathlift::LayerGraph* g = model.layer_graph();
  if (g == nullptr) {
    fmt::print(stderr, "layer_bound: {} is not a layer graph\n", args.model);
    return 2;
  }
  const Index d = g->num_params;
  const std::vector<double> theta =
      model.has_weights() ? std::vector<double>(model.weights().begin(), model.weights().end())
                          : pathlift::normal_weights(d, 0);
  pathlift::EngineOptions engine;
  engine.threads = args.threads;
  const int repeat = args.repeat;

  if (args.kv_only > 0) {
    const pathlift::LayerKernelOperator op(*g, theta, engine);
    const std::vector<double> v = pathlift::normal_weights(d, 1);
    Eigen::VectorXd out(d);
    fmt::print("K v on a kept operator: {:.4f} s (best of {})\n",
               seconds([&] { op.apply(v.data(), out.data(), 1); }, args.kv_only), args.kv_only);
    return 0;
  }
  if (args.diag_only > 0) {
    fmt::print("kernel diagonal: {:.4f} s (best of {})\n",
               seconds([&] { (void)pathlift::kernel_diagonal(*g, theta, engine); }, args.diag_only),
               args.diag_only);
    return 0;
  }
  Eigen::setNbThreads(args.threads);
  const double gemm = gemm_seconds(1216, 1216, 1216, repeat);
  Eigen::setNbThreads(1);
  const double madds = 1216.0 * 1216.0 * 1216.0;
  fmt::print("model {} (d = {}), {} thread(s), best of {}\n", args.model, d, args.threads, repeat);
  fmt::print("Eigen float64 GEMM, {:.2f} G multiply-adds: {:.4f} s ({:.1f} GFLOP/s){}\n",
             madds / 1e9, gemm, 2 * madds / gemm / 1e9,
#ifdef __AVX512F__
             ", AVX-512"
#elif defined(__AVX2__)
             ", AVX2"
#else
             ", SSE2 (a portable build)"
#endif
  );

  const double l1 = seconds([&] { (void)pathlift::path_norm(*g, theta, 1.0, engine); }, repeat);
  const double l2 = seconds([&] { (void)pathlift::path_norm(*g, theta, 2.0, engine); }, repeat);
  const FullPass full = full_pass(*g, theta, engine, repeat);
  const double diag = seconds([&] { (void)pathlift::kernel_diagonal(*g, theta, engine); }, repeat);
  const std::vector<double> v = pathlift::normal_weights(d, 1);
  const double kv_call =
      seconds([&] { (void)pathlift::kernel_matvec(*g, theta, v, engine); }, repeat);
  const pathlift::LayerKernelOperator op(*g, theta, engine);
  Eigen::VectorXd out(d);
  const double kv = seconds([&] { op.apply(v.data(), out.data(), 1); }, repeat);
  const std::vector<double> block = pathlift::normal_weights(d * 8, 2);
  Eigen::MatrixXd outs(d, 8);
  // Best of 2: the first run also faults in the 8 d-long outputs (a solver reuses its blocks).
  const double kv8 = seconds([&] { op.apply(block.data(), outs.data(), 8); }, 2);

  fmt::print("\n{:<44} {:>9} {:>14}\n", "quantity", "s", "ratio");
  fmt::print("{:<44} {:>9.4f} {:>14}\n", "GEMM of 1.8 G multiply-adds", gemm, "1");
  fmt::print("{:<44} {:>9.4f} {:>14}\n", "L1 path-norm pass", l1,
             fmt::format("{:.2f} x GEMM", l1 / gemm));
  fmt::print("{:<44} {:>9.4f} {:>14}\n", "L2 path-norm pass", l2,
             fmt::format("{:.2f} x GEMM", l2 / gemm));
  fmt::print("{:<44} {:>9.4f} {:>14}\n", "L2 pass on full tensors (no position classes)",
             full.seconds, fmt::format("{:.2f} x GEMM", full.seconds / gemm));
  fmt::print("{:<44} {:>9.3f} {:>14}\n", "  its G multiply-adds (conv and linear)",
             full.madds_full / 1e9, "");
  fmt::print("{:<44} {:>9.3f} {:>14}\n", "  the same on position classes", full.madds_classes / 1e9,
             fmt::format("{:.2f} x full", full.madds_classes / full.madds_full));
  fmt::print("{:<44} {:>9.4f} {:>14}\n", "kernel diagonal", diag,
             fmt::format("{:.2f} x L2", diag / l2));
  fmt::print("{:<44} {:>9.4f} {:>14}\n", "K v, one call (kept sums included)", kv_call,
             fmt::format("{:.2f} x L2", kv_call / l2));
  fmt::print("{:<44} {:>9.4f} {:>14}\n", "K v on a kept operator", kv,
             fmt::format("{:.2f} x L2", kv / l2));
  fmt::print("{:<44} {:>9.4f} {:>14}\n", "K V, 8 vectors, on a kept operator", kv8,
             fmt::format("{:.2f} x K v", kv8 / kv));
  if (args.per_layer) {
    per_layer_table(*g, theta, engine, repeat, full.seconds);
  }
  return 0;
}
