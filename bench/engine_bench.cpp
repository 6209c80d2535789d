// Path engine throughput: Phi, B + dPhi (one walk), path enumeration, Phi and dPhi from a path
// set (float64 and float32), on the paper's largest setting, ff:5,64,64,64,2 and a random DAG,
// with 1 and 2 threads; and the machine's write bandwidth (BM_WriteBandwidth), the ceiling of
// Phi on ff:5,64,64,64,2.
//   build/bench/engine_bench --benchmark_counters_tabular=true
// Counters: paths/s and nnz/s (entries of B / dPhi per second), bytes/s.

#include <benchmark/benchmark.h>
#include <omp.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <span>
#include <type_traits>
#include <vector>

#include "pathlift/builtins.hpp"
#include "pathlift/lifting.hpp"
#include "pathlift/paths.hpp"
#include "pathlift/types.hpp"

namespace {

using namespace pathlift;

const char* const k_networks[] = {"ff:5,8,8,8,2", "ff:5,64,64,64,2", "random-dag:40,0.4,1"};

struct Fixture {
  Network net;
  std::vector<double> theta;
  std::vector<float> theta32;  // theta rounded to float32 (the paper's experiment's dtype)
  PathSet paths;

  template <class T>
  [[nodiscard]] std::span<const T> weights() const {
    if constexpr (std::is_same_v<T, float>) {
      return theta32;
    } else {
      return theta;
    }
  }
};

const Fixture& fixture(int which) {
  static std::vector<std::unique_ptr<Fixture>> cache(std::size(k_networks));
  auto& slot = cache[static_cast<std::size_t>(which)];
  if (!slot) {
    Network net = builtin_network(k_networks[which]);
    auto theta = normal_weights(net.num_edges(), 1);
    PathSet paths = enumerate_paths(net);
    std::vector<float> theta32(theta.begin(), theta.end());
    slot = std::make_unique<Fixture>(
        Fixture{std::move(net), std::move(theta), std::move(theta32), std::move(paths)});
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

template <class T>
void BM_JacobianFromPathSet(benchmark::State& state) {
  const Fixture& f = fixture(static_cast<int>(state.range(0)));
  const EngineOptions o = options(state);
  for (auto _ : state) {
    auto j = jacobian<T>(f.paths, f.weights<T>(), o);
    benchmark::DoNotOptimize(j.values.data());
  }
  set_counters(state, f);
}

template <class T>
void BM_PhiFromPathSet(benchmark::State& state) {
  const Fixture& f = fixture(static_cast<int>(state.range(0)));
  const EngineOptions o = options(state);
  for (auto _ : state) {
    auto phi = path_lifting<T>(f.paths, f.weights<T>(), o);
    benchmark::DoNotOptimize(phi.data());
  }
  set_counters(state, f);
}

/// The machine's ceiling for BM_Phi on ff:5,64,64,64,2: writing as many doubles as it has paths
/// (25 MB), split between the threads like the walk's tasks, with plain stores (mode 0) or
/// non-temporal ones (mode 1, as PhiSink does for results of 8 MiB or more). Args: mode, threads.
/// When two threads write no faster than one, no Phi can be 2x faster on two threads either.
void BM_WriteBandwidth(benchmark::State& state) {
  const bool stream = state.range(0) == 1;
  const int threads = static_cast<int>(state.range(1));
  const Index n = fixture(1).paths.size();
  Buffer<double> out(static_cast<std::size_t>(n));
  double* dst = out.data();
  double value = 0.0;
  for (auto _ : state) {
    value += 1.0;
#pragma omp parallel num_threads(threads)
    {
      const Index nt = omp_get_num_threads();
      const Index id = omp_get_thread_num();
      const Index first = n / nt * id / 8 * 8;  // 64-byte aligned shares
      const Index last = id == nt - 1 ? n : n / nt * (id + 1) / 8 * 8;
      Index i = first;
#if defined(__SSE2__)
      if (stream) {
        const __m128d v = _mm_set1_pd(value);
        for (; i + 2 <= last; i += 2) {
          _mm_stream_pd(dst + i, v);
        }
        _mm_sfence();
      }
#endif
      for (; i < last; ++i) {
        dst[i] = value + static_cast<double>(i);
      }
    }
    benchmark::DoNotOptimize(dst);
    benchmark::ClobberMemory();
  }
  state.SetLabel(stream ? "streaming stores" : "plain stores");
  state.counters["threads"] = threads;
  state.counters["bytes/s"] = benchmark::Counter(static_cast<double>(n) * sizeof(double),
                                                 benchmark::Counter::kIsIterationInvariantRate);
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
BENCHMARK_TEMPLATE(BM_JacobianFromPathSet, double)->Apply(args);
BENCHMARK_TEMPLATE(BM_JacobianFromPathSet, float)->Apply(args);
BENCHMARK_TEMPLATE(BM_PhiFromPathSet, double)->Apply(args);
BENCHMARK_TEMPLATE(BM_PhiFromPathSet, float)->Apply(args);
BENCHMARK(BM_WriteBandwidth)
    ->ArgsProduct({{0, 1}, {1, 2}})
    ->ArgNames({"stream", "threads"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
