// Path-free computations by dynamic programming (issue 8): path-norms and the diagonal of the
// path kernel on ff:784,2048,2048,2048,10 (d = 10,020,874 edges, one core, the network already
// built), K v against forming dPhi and multiplying on ff:5,64,64,64,2, B^T B mod p on the rank
// certificate network ff:4,8x12,2 (P = 706,828,903,570, d = 850), and the top eigenvalues.
//
//   cmake --build build --target dp_bench && build/bench/dp_bench
//   build/bench/dp_bench --benchmark_filter=PathNorm

#include <benchmark/benchmark.h>

#include <Eigen/Core>
#include <algorithm>
#include <span>
#include <vector>

#include "pathlift/builtins.hpp"
#include "pathlift/kernel.hpp"
#include "pathlift/lifting.hpp"
#include "pathlift/norms.hpp"

namespace {

using pathlift::Index;
using pathlift::Network;

struct Fixture {
  Network net;
  std::vector<double> theta;
  explicit Fixture(const char* name)
      : net(pathlift::builtin_network(name)), theta(pathlift::normal_weights(net.num_edges(), 0)) {}
};

const Fixture& big() {
  static const Fixture f("ff:784,2048,2048,2048,10");
  return f;
}

const Fixture& small() {
  static const Fixture f("ff:5,64,64,64,2");
  return f;
}

const Fixture& deep() {
  static const Fixture f("ff:4,8,8,8,8,8,8,8,8,8,8,8,8,2");
  return f;
}

void set_edges(benchmark::State& state, Index d) {
  state.counters["d"] = static_cast<double>(d);
  state.counters["edges/s"] =
      benchmark::Counter(static_cast<double>(d) * state.iterations(), benchmark::Counter::kIsRate);
}

// The network and theta are built before timing starts; each iteration is one call.
void BM_PathNorm(benchmark::State& state) {
  const Fixture& f = big();
  const double s = static_cast<double>(state.range(0)) / 2;  // range = 2 s
  for (auto _ : state) {
    benchmark::DoNotOptimize(pathlift::path_norm(f.net, f.theta, s));
  }
  set_edges(state, f.net.num_edges());
  state.SetLabel("ff:784,2048,2048,2048,10 s=" + std::to_string(s).substr(0, 3));
}
BENCHMARK(BM_PathNorm)
    ->Arg(2)
    ->Arg(4)
    ->Arg(1)
    ->Arg(0)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_PathNormPerInput(benchmark::State& state) {
  const Fixture& f = big();
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        pathlift::path_norm(f.net, f.theta, 1.0, pathlift::PathNormDetail::inputs_and_outputs));
  }
  set_edges(state, f.net.num_edges());
  state.SetLabel("ff:784,2048,2048,2048,10 s=1, forward + backward");
}
BENCHMARK(BM_PathNormPerInput)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_KernelDiagonal(benchmark::State& state) {
  const Fixture& f = big();
  for (auto _ : state) {
    benchmark::DoNotOptimize(pathlift::kernel_diagonal(f.net, f.theta));
  }
  set_edges(state, f.net.num_edges());
  state.SetLabel("ff:784,2048,2048,2048,10");
}
BENCHMARK(BM_KernelDiagonal)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_KernelMatvecBig(benchmark::State& state) {
  const Fixture& f = big();
  const pathlift::KernelOperator op(f.net, f.theta);
  const std::vector<double> v = pathlift::normal_weights(f.net.num_edges(), 1);
  Eigen::VectorXd out(f.net.num_edges());
  for (auto _ : state) {
    op.apply(v.data(), out.data());
    benchmark::DoNotOptimize(out.data());
  }
  set_edges(state, f.net.num_edges());
  state.SetLabel("ff:784,2048,2048,2048,10");
}
BENCHMARK(BM_KernelMatvecBig)->Unit(benchmark::kMillisecond)->UseRealTime();

// K v on ff:5,64,64,64,2: matrix-free against forming dPhi (P = 2,662,400 paths) and
// computing dPhi^T (dPhi v).
void BM_KernelMatvec(benchmark::State& state) {
  const Fixture& f = small();
  const std::vector<double> v = pathlift::normal_weights(f.net.num_edges(), 1);
  for (auto _ : state) {
    benchmark::DoNotOptimize(pathlift::kernel_matvec(f.net, f.theta, v));
  }
  set_edges(state, f.net.num_edges());
  state.SetLabel("ff:5,64,64,64,2 matrix-free (DP)");
}
BENCHMARK(BM_KernelMatvec)->Unit(benchmark::kMicrosecond)->UseRealTime();

// The same product through a KernelOperator built once (what Lanczos iterates).
void BM_KernelOperatorApply(benchmark::State& state) {
  const Fixture& f = small();
  const pathlift::KernelOperator op(f.net, f.theta);
  const std::vector<double> v = pathlift::normal_weights(f.net.num_edges(), 1);
  std::vector<double> out(static_cast<std::size_t>(f.net.num_edges()));
  for (auto _ : state) {
    op.apply(v.data(), out.data());
    benchmark::DoNotOptimize(out.data());
  }
  set_edges(state, f.net.num_edges());
  state.SetLabel("ff:5,64,64,64,2 KernelOperator::apply");
}
BENCHMARK(BM_KernelOperatorApply)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_KernelMatvecViaJacobian(benchmark::State& state) {
  const Fixture& f = small();
  const std::vector<double> v = pathlift::normal_weights(f.net.num_edges(), 1);
  pathlift::EngineOptions one;
  one.threads = 1;
  std::vector<double> out(static_cast<std::size_t>(f.net.num_edges()));
  for (auto _ : state) {
    const auto j = pathlift::jacobian<double>(f.net, std::span<const double>(f.theta), one);
    // out = dPhi^T (dPhi v), one pass over the CSR rows.
    const auto off = j.pattern.offsets();
    const auto cols = j.pattern.indices();
    const double* val = j.values.data();
    std::fill(out.begin(), out.end(), 0.0);
    for (Index p = 0; p < j.rows(); ++p) {
      double y = 0;
      for (Index k = off[static_cast<std::size_t>(p)]; k < off[static_cast<std::size_t>(p) + 1];
           ++k) {
        y += val[k] * v[static_cast<std::size_t>(cols[static_cast<std::size_t>(k)])];
      }
      for (Index k = off[static_cast<std::size_t>(p)]; k < off[static_cast<std::size_t>(p) + 1];
           ++k) {
        out[static_cast<std::size_t>(cols[static_cast<std::size_t>(k)])] += val[k] * y;
      }
    }
    benchmark::DoNotOptimize(out.data());
  }
  set_edges(state, f.net.num_edges());
  state.SetLabel("ff:5,64,64,64,2 via dPhi (jacobian<double>, 1 thread, then dPhi^T (dPhi v))");
}
BENCHMARK(BM_KernelMatvecViaJacobian)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_TopEigenvalues(benchmark::State& state) {
  const Fixture& f = small();
  pathlift::EigenOptions opt;
  opt.method = pathlift::EigenMethod::lanczos;
  Index products = 0;
  for (auto _ : state) {
    const auto r = pathlift::kernel_top_eigenvalues(f.net, f.theta, state.range(0), opt);
    products = r.products;
    benchmark::DoNotOptimize(r.values.data());
  }
  state.counters["products"] = static_cast<double>(products);
  state.SetLabel("ff:5,64,64,64,2 Lanczos");
}
BENCHMARK(BM_TopEigenvalues)->Arg(5)->Unit(benchmark::kMillisecond)->UseRealTime();

// B^T B mod p for the rank certificate of ff:4,8x12,2 (the lead's rank --no-enumerate).
void BM_SkeletonGramMod(benchmark::State& state) {
  const Fixture& f = deep();
  pathlift::EngineOptions opt;
  opt.threads = static_cast<int>(state.range(0));
  for (auto _ : state) {
    benchmark::DoNotOptimize(pathlift::skeleton_gram_mod(f.net, pathlift::default_prime, opt));
  }
  set_edges(state, f.net.num_edges());
  state.SetLabel("ff:4,8x12,2 (d = 850) threads=" + std::to_string(state.range(0)));
}
BENCHMARK(BM_SkeletonGramMod)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_KernelFull(benchmark::State& state) {
  const Fixture& f = deep();
  pathlift::EngineOptions opt;
  opt.threads = 1;
  for (auto _ : state) {
    benchmark::DoNotOptimize(pathlift::kernel(f.net, f.theta, opt));
  }
  set_edges(state, f.net.num_edges());
  state.SetLabel("ff:4,8x12,2 (d = 850) 1 thread");
}
BENCHMARK(BM_KernelFull)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
