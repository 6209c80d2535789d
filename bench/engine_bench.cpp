// Path engine throughput: Phi, B + dPhi (one walk), path enumeration, dPhi from a path set,
// on the paper's largest setting, ff:5,64,64,64,2 and a random DAG, with 1 and 2 threads.
//   build/bench/engine_bench --benchmark_counters_tabular=true
// Counters: paths/s and nnz/s (entries of B / dPhi per second).

#include <benchmark/benchmark.h>

#include "pathlift/builtins.hpp"
#include "pathlift/lifting.hpp"
#include "pathlift/paths.hpp"

namespace {

using namespace pathlift;

const char* const k_networks[] = {"ff:5,8,8,8,2", "ff:5,64,64,64,2", "random-dag:40,0.4,1"};

struct Fixture {
  Network net;
  std::vector<double> theta;
  PathSet paths;
};

const Fixture& fixture(int which) {
  static std::vector<std::unique_ptr<Fixture>> cache(std::size(k_networks));
  auto& slot = cache[static_cast<std::size_t>(which)];
  if (!slot) {
    Network net = builtin_network(k_networks[which]);
    auto theta = normal_weights(net.num_edges(), 1);
    PathSet paths = enumerate_paths(net);
    slot = std::make_unique<Fixture>(Fixture{std::move(net), std::move(theta), std::move(paths)});
  }
  return *slot;
}

void set_counters(benchmark::State& state, const Fixture& f) {
  state.SetLabel(k_networks[state.range(0)]);
  state.counters["threads"] = static_cast<double>(state.range(1));
  state.counters["paths/s"] = benchmark::Counter(static_cast<double>(f.paths.size()),
                                                 benchmark::Counter::kIsIterationInvariantRate);
  state.counters["nnz/s"] = benchmark::Counter(static_cast<double>(f.paths.nnz()),
                                               benchmark::Counter::kIsIterationInvariantRate);
}

EngineOptions options(const benchmark::State& state) {
  EngineOptions o;
  o.threads = static_cast<int>(state.range(1));
  return o;
}

void BM_Phi(benchmark::State& state) {
  const Fixture& f = fixture(static_cast<int>(state.range(0)));
  const EngineOptions o = options(state);
  for (auto _ : state) {
    auto phi = path_lifting<double>(f.net, std::span<const double>(f.theta), o);
    benchmark::DoNotOptimize(phi.data());
  }
  set_counters(state, f);
}

void BM_SkeletonAndJacobian(benchmark::State& state) {
  const Fixture& f = fixture(static_cast<int>(state.range(0)));
  const EngineOptions o = options(state);
  for (auto _ : state) {
    auto j = jacobian<double>(f.net, std::span<const double>(f.theta), o);  // pattern = B
    benchmark::DoNotOptimize(j.values.data());
  }
  set_counters(state, f);
}

void BM_Skeleton(benchmark::State& state) {
  const Fixture& f = fixture(static_cast<int>(state.range(0)));
  const EngineOptions o = options(state);
  for (auto _ : state) {
    auto b = skeleton(f.net, o);
    benchmark::DoNotOptimize(b.col_indices->data());
  }
  set_counters(state, f);
}

void BM_EnumeratePaths(benchmark::State& state) {
  const Fixture& f = fixture(static_cast<int>(state.range(0)));
  const EngineOptions o = options(state);
  for (auto _ : state) {
    auto p = enumerate_paths(f.net, o);
    benchmark::DoNotOptimize(p.edges->data());
  }
  set_counters(state, f);
}

void BM_JacobianFromPathSet(benchmark::State& state) {
  const Fixture& f = fixture(static_cast<int>(state.range(0)));
  const EngineOptions o = options(state);
  for (auto _ : state) {
    auto j = jacobian<double>(f.paths, std::span<const double>(f.theta), o);
    benchmark::DoNotOptimize(j.values.data());
  }
  set_counters(state, f);
}

void args(benchmark::internal::Benchmark* b) {
  for (int net = 0; net < static_cast<int>(std::size(k_networks)); ++net) {
    for (int threads : {1, 2}) {
      b->Args({net, threads});
    }
  }
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK(BM_Phi)->Apply(args);
BENCHMARK(BM_SkeletonAndJacobian)->Apply(args);
BENCHMARK(BM_Skeleton)->Apply(args);
BENCHMARK(BM_EnumeratePaths)->Apply(args);
BENCHMARK(BM_JacobianFromPathSet)->Apply(args);

}  // namespace
