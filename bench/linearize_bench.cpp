// Linearization (Proposition 1) on the case: ff:5,64,64,64,2 (P = 3,154,050 paths)
// with n = 100 samples, so L is 200 x 3,154,050 before sparsity.
//
// Counters: nnz_L, L_MiB (the output's own size: row offsets + column indices + values),
// peak_MiB (the rise of the process's peak resident set over one call: VmHWM after the call
// minus VmRSS before it, with the peak reset through /proc/self/clear_refs), and
// peak_over_L = peak_MiB / L_MiB, the number the issue bounds by 2.
//
//   build-lin/bench/linearize_bench --benchmark_counters_tabular=true

#include <benchmark/benchmark.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "pathlift/builtins.hpp"
#include "pathlift/forward.hpp"
#include "pathlift/lifting.hpp"
#include "pathlift/linearize.hpp"
#include "pathlift/types.hpp"

namespace {

/// A field of /proc/self/status in KiB ("VmRSS", "VmHWM"); -1 when unavailable.
double status_kib(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) {
      return std::stod(line.substr(field.size() + 1));
    }
  }
  return -1;
}

/// Resets the peak resident set (VmHWM) to the current one; false when the kernel refuses.
bool reset_peak() {
  std::FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (f == nullptr) {
    return false;
  }
  const bool ok = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && ok;
}

struct Case {
  pathlift::Network net = pathlift::feed_forward(5, {64, 64, 64}, 2);
  std::vector<double> theta = pathlift::normal_weights(net.num_edges(), 0);
  Eigen::MatrixXd X = pathlift::random_data(net, 100, 1);
};

const Case& the_case() {
  static const Case c;
  return c;
}

double l_bytes(const pathlift::CsrMatrix<double>& L) {
  return static_cast<double>(L.rows() + 1) * sizeof(pathlift::Index) +
         static_cast<double>(L.nnz()) * (sizeof(pathlift::EdgeId) + sizeof(double));
}

/// Runs `work` (returning the bytes of L) once per iteration, measuring the peak rise.
template <class Work>
void measure(benchmark::State& state, Work&& work) {
  double peak = 0;
  double out = 0;
  double nnz = 0;
  bool have_peak = true;
  for (auto _ : state) {
    state.PauseTiming();
    // Fresh memory for every call: blocks recycled from the previous one would hide its peak.
    (void)pathlift::release_cached_buffers();
    have_peak = reset_peak() && have_peak;
    const double before = status_kib("VmRSS");
    state.ResumeTiming();
    const auto [bytes, entries] = work();
    state.PauseTiming();
    peak = std::max(peak, (status_kib("VmHWM") - before) / 1024.0);
    out = bytes / (1024.0 * 1024.0);
    nnz = entries;
    state.ResumeTiming();
  }
  state.counters["nnz_L"] = nnz;
  state.counters["L_MiB"] = out;
  if (have_peak) {
    state.counters["peak_MiB"] = peak;
    state.counters["peak_over_L"] = out > 0 ? peak / out : 0;
  }
}

void BM_Forward(benchmark::State& state) {
  const Case& c = the_case();
  for (auto _ : state) {
    const pathlift::ForwardResult fw = pathlift::forward(c.net, c.theta, c.X);
    benchmark::DoNotOptimize(fw.outputs.data());
  }
}

/// forward + activation pattern + L: what `linearize` computes before verifying.
void BM_Linearize(benchmark::State& state) {
  const Case& c = the_case();
  pathlift::EngineOptions options;
  options.threads = static_cast<int>(state.range(0));
  measure(state, [&] {
    const pathlift::Linearization lin = pathlift::linearize(c.net, c.theta, c.X, options);
    return std::pair<double, double>(l_bytes(lin.map), static_cast<double>(lin.map.nnz()));
  });
}

/// L, Phi, dPhi and the verification (f = L Phi on all 200 rows, L dPhi against finite
/// differences on 8 samples x 2 outputs x 16 parameters): `pathlift linearize` without -o.
void BM_CheckLinearization(benchmark::State& state) {
  const Case& c = the_case();
  pathlift::LinearizationCheckOptions options;
  options.engine.threads = static_cast<int>(state.range(0));
  pathlift::LinearizationCheck check;
  measure(state, [&] {
    check = pathlift::check_linearization(c.net, c.theta, c.X, options);
    const double bytes =
        static_cast<double>(2 * check.n + 1) * sizeof(pathlift::Index) +
        static_cast<double>(check.nnz_L) * (sizeof(pathlift::EdgeId) + sizeof(double));
    return std::pair<double, double>(bytes, static_cast<double>(check.nnz_L));
  });
  state.counters["max_err_f"] = check.max_err_f;
  state.counters["max_err_grad"] = check.max_err_grad;
  state.counters["ok"] = check.status == pathlift::LinearizationStatus::ok ? 1 : 0;
}

BENCHMARK(BM_Forward)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Linearize)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CheckLinearization)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
