// Speed of the rank certificates: ff:5,16,16,2 (P = 3,106, d = 402) and ff:5,32,32,32,2
// (P = 395,330, d = 2,370); the matrices the lower bound can eliminate (B with the structured
// pivot order, or the dense B^T B); the numerical rank of dPhi; the proof. And the certified
// ranks as `pathlift rank` computes them (BM_CertifiedRanks: rank(B) and rank(dPhi) certified,
// the paths enumerated; BM_CertifiedRanksPathFree: no path enumerated, the triangular path
// basis, or B^T B mod p by dynamic programming with FLINT's dense elimination):
//
//   build/bench/rank_bench --benchmark_filter=CertifiedRanks

#include <benchmark/benchmark.h>

#include <string>

#include "pathlift/builtins.hpp"
#include "pathlift/lifting.hpp"
#include "pathlift/paths.hpp"
#include "pathlift/proof.hpp"
#include "pathlift/rank.hpp"

namespace {

using namespace pathlift;

void set_counters(benchmark::State& state, const Network& net, const CsrPattern& b) {
  state.counters["P"] = static_cast<double>(b.rows);
  state.counters["d"] = static_cast<double>(net.num_edges());
  state.counters["h"] = static_cast<double>(net.num_hidden());
}

// rank(B) certified from an enumerated skeleton (lower bound: sparse elimination of B mod p;
// upper bound: B z_v = 0 on every row).
void BM_CertifyRank(benchmark::State& state, const std::string& name) {
  const Network net = builtin_network(name);
  const CsrPattern b = skeleton(net);
  RankOptions o;
  o.method = RankMethod::skeleton;
  for (auto _ : state) {
    const RankCertificate c = certify_rank(net, b, o);
    if (!c.certified() || c.lower != net.num_edges() - net.num_hidden()) {
      state.SkipWithError("rank not certified");
    }
    benchmark::DoNotOptimize(c.lower);
  }
  set_counters(state, net, b);
}

// The same including the enumeration of the paths and the skeleton.
void BM_CertifyRankWithEnumeration(benchmark::State& state, const std::string& name) {
  const Network net = builtin_network(name);
  for (auto _ : state) {
    const RankCertificate c = certify_rank(net);
    benchmark::DoNotOptimize(c.lower);
  }
  set_counters(state, net, skeleton(net));
}

// The alternative lower bound: B^T B built from B, then dense elimination mod p.
void BM_CertifyRankGram(benchmark::State& state, const std::string& name) {
  const Network net = builtin_network(name);
  const CsrPattern b = skeleton(net);
  RankOptions o;
  o.method = RankMethod::gram;
  for (auto _ : state) {
    const RankCertificate c = certify_rank(net, b, o);
    if (!c.certified()) {
      state.SkipWithError("rank not certified");
    }
    benchmark::DoNotOptimize(c.lower);
  }
  set_counters(state, net, b);
}

// certify_rank_from_gram() on a given B^T B (the --no-enumerate route).
void BM_CertifyRankFromGram(benchmark::State& state, const std::string& name) {
  const Network net = builtin_network(name);
  const CsrPattern b = skeleton(net);
  const ModMatrix g = skeleton_gram_mod(b);
  for (auto _ : state) {
    const RankCertificate c = certify_rank_from_gram(net, g);
    benchmark::DoNotOptimize(c.lower);
  }
  set_counters(state, net, b);
}

// Numerical rank of dPhi at a standard normal theta (automatic method).
void BM_NumericalRank(benchmark::State& state, const std::string& name) {
  const Network net = builtin_network(name);
  const auto theta = normal_weights(net.num_edges(), 1);
  const CsrMatrix<double> j = jacobian<double>(net, std::span<const double>(theta));
  for (auto _ : state) {
    const NumericalRank r = numerical_rank(j);
    benchmark::DoNotOptimize(r.rank);
  }
  set_counters(state, net, j.pattern);
}

// The paper's induction, every claim checked.
void BM_ProveRank(benchmark::State& state, const std::string& name) {
  const Network net = builtin_network(name);
  for (auto _ : state) {
    const ProofCertificate c = prove_rank(net);
    if (!c.proved()) {
      state.SkipWithError("not proved");
    }
    benchmark::DoNotOptimize(c.rank);
  }
  set_counters(state, net, skeleton(net));
}

// check_rank_theorem() on the enumerate route with the numerical rank skipped above its work
// limit (what `pathlift rank --json` does): enumeration, B, rank(B) and rank(dPhi) certified.
void BM_CertifiedRanks(benchmark::State& state, const std::string& name) {
  const Network net = builtin_network(name);
  const auto theta = normal_weights(net.num_edges(), 0);
  for (auto _ : state) {
    const RankReport rep = check_rank_theorem(net, theta, {}, {}, RankRoute::enumerate);
    if (!rep.rank_J_exact || !rep.rank_J_exact->certified() || !rep.rank_B.certified() ||
        rep.status != RankStatus::verified) {
      state.SkipWithError("ranks not certified");
    }
    benchmark::DoNotOptimize(rep.rank_B.lower);
  }
  state.counters["d"] = static_cast<double>(net.num_edges());
  state.counters["h"] = static_cast<double>(net.num_hidden());
}

// check_rank_theorem() on the path-free route (`pathlift rank --no-enumerate`), the network
// built once outside the timing: method path_basis (the default) or gram.
void BM_CertifiedRanksPathFree(benchmark::State& state, const std::string& name,
                               RankMethod method) {
  const Network net = builtin_network(name);
  const auto theta = normal_weights(net.num_edges(), 0);
  RankOptions o;
  o.method = method;
  for (auto _ : state) {
    const RankReport rep = check_rank_theorem(net, theta, o, {}, RankRoute::path_free);
    if (!rep.rank_J_exact || !rep.rank_J_exact->certified() || !rep.rank_B.certified()) {
      state.SkipWithError("ranks not certified");
    }
    benchmark::DoNotOptimize(rep.rank_B.lower);
  }
  state.counters["d"] = static_cast<double>(net.num_edges());
  state.counters["h"] = static_cast<double>(net.num_hidden());
}

BENCHMARK_CAPTURE(BM_CertifiedRanks, ff_5_32_32_32_2, std::string("ff:5,32,32,32,2"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CertifiedRanks, ff_5_64_64_64_2, std::string("ff:5,64,64,64,2"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CertifiedRanksPathFree, ff_4_8x12_2_path_basis,
                  std::string("ff:4,8,8,8,8,8,8,8,8,8,8,8,8,2"), RankMethod::path_basis)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CertifiedRanksPathFree, ff_4_8x12_2_gram,
                  std::string("ff:4,8,8,8,8,8,8,8,8,8,8,8,8,2"), RankMethod::gram)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CertifiedRanksPathFree, ff_784_2048x3_10_path_basis,
                  std::string("ff:784,2048,2048,2048,10"), RankMethod::path_basis)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

BENCHMARK_CAPTURE(BM_CertifyRank, ff_5_16_16_2, std::string("ff:5,16,16,2"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CertifyRank, ff_5_32_32_32_2, std::string("ff:5,32,32,32,2"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CertifyRankWithEnumeration, ff_5_16_16_2, std::string("ff:5,16,16,2"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CertifyRankWithEnumeration, ff_5_32_32_32_2, std::string("ff:5,32,32,32,2"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CertifyRankGram, ff_5_16_16_2, std::string("ff:5,16,16,2"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CertifyRankGram, ff_5_32_32_32_2, std::string("ff:5,32,32,32,2"))
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_CertifyRankFromGram, ff_5_16_16_2, std::string("ff:5,16,16,2"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_NumericalRank, ff_5_16_16_2, std::string("ff:5,16,16,2"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_NumericalRank, ff_5_32_32_32_2, std::string("ff:5,32,32,32,2"))
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_ProveRank, ff_5_16_16_2, std::string("ff:5,16,16,2"))
    ->Unit(benchmark::kMillisecond);

}  // namespace
