// The layer-by-layer dynamic programme (layer_dp.hpp) against the DAG functions on the
// unrolled network (an independent implementation: per-node sums over the unrolled edges), on a
// zoo of small layer graphs covering every layer kind and option; bit-identical results for
// any thread count; extreme scales; refusals.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "pathlift/counting.hpp"
#include "pathlift/error.hpp"
#include "pathlift/kernel.hpp"
#include "pathlift/layer_dp.hpp"
#include "pathlift/layers.hpp"
#include "pathlift/norms.hpp"
#include "src/layer_dp/detail/layer_dp_engine.hpp"
#include "src/layers/layers_unroll.hpp"
#include "support.hpp"
#include "tests/layer_zoo.hpp"
#include "tests/layers_builder.hpp"
#include "tests/random_layer_graph.hpp"

namespace pathlift {
namespace {

using testing::contains;
using testing::error_of;
using testing::GraphBuilder;

std::vector<double> normal(Index n, unsigned seed, double scale = 1.0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> dist(0.0, scale);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (double& x : v) {
    x = dist(rng);
  }
  return v;
}

void expect_close(double a, double b, double rel, const std::string& what) {
  EXPECT_LE(std::fabs(a - b), rel * std::max(std::fabs(a), std::fabs(b)) + 1e-300)
      << what << ": " << a << " vs " << b;
}

void expect_scaled(const ScaledReal& a, const ScaledReal& b, double rel, const std::string& what) {
  if (a.is_zero() || b.is_zero()) {
    EXPECT_TRUE(a.is_zero() && b.is_zero()) << what;
    return;
  }
  EXPECT_NEAR(a.log10(), b.log10(), rel) << what;
}

/// Equal when exact (below 2^53 for the layer count); log10 to 1e-12 beyond.
void expect_count(const Count& a, const Count& b) {
  if (a.exact()) {
    EXPECT_LT(a.value(), std::uint64_t{1} << 53) << "a layer count is exact only below 2^53";
  }
  if (a.exact() && b.exact()) {
    EXPECT_EQ(a.value(), b.value());
    return;
  }
  EXPECT_NEAR(a.log10(), b.log10(), 1e-12);
}

/// The L^s path-norms, the path counts (per output, nnz, the length histogram) and the
/// path-norm gradients of g layer by layer equal those of its unrolled DAG.
void expect_layer_dp_equals_dag(const LayerGraph& g) {
  const Network net = unroll(g);
  const std::vector<double> theta = normal(g.num_params, 7);
  for (const double s : {0.0, 0.5, 1.0, 2.0, 3.0}) {
    const PathNorm a = path_norm(g, theta, s);
    const PathNorm b = path_norm(net, theta, s);
    expect_scaled(a.norm, b.norm, 1e-12, fmt::format("norm s={}", s));
    expect_scaled(a.sum, b.sum, 1e-12, "sum");
    ASSERT_EQ(a.per_output.size(), b.per_output.size());
    for (std::size_t i = 0; i < a.per_output.size(); ++i) {
      expect_scaled(a.per_output[i], b.per_output[i], 1e-12, "per output");
    }
  }
  expect_count(count_paths_total(g), count_paths_total(net));
  const PathCounts pc = count_paths(g);
  const PathCounts pn = count_paths(net);
  expect_count(pc.paths, pn.paths);
  ASSERT_EQ(pc.per_output.size(), pn.per_output.size());
  for (std::size_t i = 0; i < pc.per_output.size(); ++i) {
    expect_count(pc.per_output[i], pn.per_output[i]);
  }
  EXPECT_EQ(pc.max_path_length, pn.max_path_length);
  expect_count(pc.nnz, pn.nnz);
  ASSERT_EQ(pc.length_histogram.size(), pn.length_histogram.size());
  for (std::size_t len = 0; len < pc.length_histogram.size(); ++len) {
    expect_count(pc.length_histogram[len], pn.length_histogram[len]);
  }
  // nnz from the pass in dual numbers (what count_paths gives where the histogram is skipped).
  {
    const EngineOptions options;  // the plan keeps a reference
    const detail::LayerPlan plan(g, options);
    const ScaledReal nnz =
        detail::total_path_length(plan, detail::Unroller(g, {}).node_entries(), {0, 1});
    expect_scaled(nnz, ScaledReal::from_double(pn.nnz.approx()), 1e-12, "nnz in dual numbers");
  }
  for (const double s : {1.0, 2.0, 1.5}) {
    const std::vector<double> ga = path_norm_gradient(g, theta, s);
    const std::vector<double> gb = path_norm_gradient(net, theta, s);
    ASSERT_EQ(ga.size(), gb.size());
    for (std::size_t k = 0; k < ga.size(); ++k) {
      expect_close(ga[k], gb[k], 1e-11, fmt::format("gradient entry {}", k));
    }
  }
}

TEST(LayerDp, NormsCountsAndGradientsEqualTheUnrolledNetwork) {
  int index = 0;
  for (const LayerGraph& g : testing::layer_zoo()) {
    SCOPED_TRACE(fmt::format("graph {}", index++));
    expect_layer_dp_equals_dag(g);
  }
}

TEST(LayerDp, NormsCountsAndGradientsEqualTheUnrolledNetworkOnRandomGraphs) {
  // Random layer graphs of every layer kind and option (random_layer_graph.hpp); stops at the
  // first failing graph.
  const std::uint64_t ran = testing::until_first_failure(200, [](std::uint64_t seed) {
    SCOPED_TRACE(fmt::format("random_layer_graph({})", seed));
    expect_layer_dp_equals_dag(testing::random_layer_graph(seed));
  });
  EXPECT_EQ(ran, 200U);
}

TEST(LayerDp, CountsAreExactOnlyBelow2To53) {
  // 1000 inputs, five hidden layers of 1000, one output: P = 1000^6 = 10^18, above 2^53 (where
  // a double stops holding every integer) and below 2^64 (where a DAG count is still exact).
  GraphBuilder b({1000});
  Index x = 0;
  for (int i = 0; i < 5; ++i) {
    x = b.act(fmt::format("r{}", i), b.linear(fmt::format("l{}", i), x, 1000, false));
  }
  const LayerGraph g = b.graph({b.linear("out", x, 1, false)});
  const Count p = count_paths_total(g);
  EXPECT_FALSE(p.exact());
  EXPECT_NEAR(p.log10(), 18.0, 1e-12);
  GraphBuilder small({100});
  const LayerGraph h =
      small.graph({small.linear("out", small.act("r", small.linear("l", 0, 90)), 3)});
  const Count q = count_paths_total(h);
  ASSERT_TRUE(q.exact());
  EXPECT_EQ(q.value(), 100u * 90u * 3u + 90u * 3u + 3u);  // weight paths and bias paths
}

TEST(LayerDp, KernelDiagonalTraceMatvecAndEigenvaluesEqualTheUnrolledNetwork) {
  int index = 0;
  for (const LayerGraph& g : testing::layer_zoo()) {
    SCOPED_TRACE(fmt::format("graph {}", index++));
    const Network net = unroll(g);
    const std::vector<double> theta = normal(g.num_params, 11);
    const std::vector<double> v = normal(g.num_params, 12);
    const Buffer<double> da = kernel_diagonal(g, theta);
    const Buffer<double> db = kernel_diagonal(net, theta);
    ASSERT_EQ(da.size(), db.size());
    for (std::size_t k = 0; k < da.size(); ++k) {
      expect_close(da[k], db[k], 1e-11, fmt::format("diagonal entry {}", k));
    }
    // The trace against the DAG's diagonal summed in extended precision; against the DAG's own
    // trace below 10^5 parameters (it adds them in double: 5e-12 off on zoo_wide_linear).
    long double sum = 0;
    for (const double x : db) {
      sum += x;
    }
    expect_scaled(kernel_trace(g, theta), ScaledReal::from_double(static_cast<double>(sum)), 1e-12,
                  "trace");
    if (g.num_params < 100000) {
      expect_scaled(kernel_trace(g, theta), kernel_trace(net, theta), 1e-12, "trace");
    }
    const Eigen::VectorXd ka = kernel_matvec(g, theta, v);
    const Eigen::VectorXd kb = kernel_matvec(net, theta, v);
    EXPECT_LE((ka - kb).norm(), 1e-11 * kb.norm());
    if (index == static_cast<int>(testing::layer_zoo().size())) {
      continue;  // the resnet (last): Lanczos on the DAG would dominate the test's time
    }
    EigenOptions lanczos;
    lanczos.method = EigenMethod::lanczos;
    const KernelEigenvalues ea = kernel_top_eigenvalues(g, theta, 2, lanczos);
    const KernelEigenvalues eb = kernel_top_eigenvalues(net, theta, 2, lanczos);
    ASSERT_EQ(ea.status, EigenStatus::converged);
    ASSERT_EQ(ea.values.size(), 2);
    for (Index i = 0; i < 2; ++i) {
      expect_close(ea.values(i), eb.values(i), 1e-8, "eigenvalue");
    }
  }
}

/// The L^s path-norm (1 and 3 threads), the kernel diagonal (1 and 2) and K v (1 and 3) of g
/// bit-identical.
void expect_same_for_any_thread_count(const LayerGraph& g, const std::vector<double>& theta,
                                      const std::vector<double>& v, double s) {
  EngineOptions one;
  one.threads = 1;
  EngineOptions two;
  two.threads = 2;
  EngineOptions three;
  three.threads = 3;
  const PathNorm n1 = path_norm(g, theta, s, one);
  const PathNorm n3 = path_norm(g, theta, s, three);
  EXPECT_EQ(n1.sum.mantissa, n3.sum.mantissa);
  EXPECT_EQ(n1.sum.exponent, n3.sum.exponent);
  const Buffer<double> d1 = kernel_diagonal(g, theta, one);
  const Buffer<double> d2 = kernel_diagonal(g, theta, two);
  EXPECT_TRUE(std::equal(d1.begin(), d1.end(), d2.begin()));
  EXPECT_EQ(kernel_matvec(g, theta, v, one), kernel_matvec(g, theta, v, three));
}

TEST(LayerDp, BitIdenticalForAnyThreadCount) {
  // Large enough (over 2^16 tensor entries) for the passes to use threads.
  const LayerGraph g = testing::resnet18(64, 7, 16);
  const std::vector<double> theta = normal(g.num_params, 3);
  const std::vector<double> v = normal(g.num_params, 4);
  expect_same_for_any_thread_count(g, theta, v, 1.0);
  // Linear layers by tiles: each tile's sums added in a fixed order.
  const LayerGraph w = testing::zoo_wide_linear(70000);
  expect_same_for_any_thread_count(w, normal(w.num_params, 5), normal(w.num_params, 6), 2.0);
}

TEST(LayerDp, ScalesFarBeyondDoubleRange) {
  // Every path crosses fc exactly once: fc's weights times 2^3000 multiply the L1 norm by
  // exactly 2^3000, the L2 norm too, and every kernel diagonal entry outside fc by 2^6000.
  LayerGraph g = testing::resnet18(20, 5, 4);
  const std::vector<double> theta = normal(g.num_params, 5);
  const Layer& fc = g.layers[static_cast<std::size_t>(g.outputs[0])];
  std::vector<double> big = theta;
  for (Index k = fc.weight_offset; k < g.num_params; ++k) {
    big[static_cast<std::size_t>(k)] *= 0x1p1000;  // fc weight and bias are the last block
  }
  // Bias paths of fc are multiplied too (they cross fc's bias edge): the whole norm scales.
  const PathNorm a = path_norm(g, theta, 1.0);
  const PathNorm b = path_norm(g, big, 1.0);
  EXPECT_NEAR(b.norm.log10() - a.norm.log10(), 1000 * std::log10(2.0), 1e-11);
  // Deep products: 60 layers of weights 1e30 on an MLP: a norm of ~1e1800.
  GraphBuilder mb({3});
  Index x = 0;
  for (int i = 0; i < 60; ++i) {
    x = mb.act(fmt::format("r{}", i), mb.linear(fmt::format("l{}", i), x, 3, false));
  }
  const LayerGraph deep = mb.graph({mb.linear("out", x, 1, false)});
  std::vector<double> huge(static_cast<std::size_t>(deep.num_params), 1e30);
  const Network net = unroll(deep);
  expect_scaled(path_norm(deep, huge, 2.0).norm, path_norm(net, huge, 2.0).norm, 1e-12, "deep");
  EXPECT_GT(path_norm(deep, huge, 1.0).norm.log10(), 1800);
  std::vector<double> tiny(huge.size(), 1e-30);
  expect_scaled(kernel_trace(deep, tiny), kernel_trace(net, tiny), 1e-12, "tiny trace");
}

TEST(LayerDp, RefusesWorkOverTheMemoryLimit) {
  const LayerGraph g = testing::resnet18(64, 10, 8);
  const std::vector<double> theta = normal(g.num_params, 1);
  EngineOptions small;
  small.max_memory = 100000;
  const std::string msg = error_of<TooLarge>([&] { (void)kernel_diagonal(g, theta, small); });
  EXPECT_TRUE(contains(msg, "the kernel diagonal on the layer graph")) << msg;
  EXPECT_TRUE(contains(msg, "tensor entries")) << msg;
}

TEST(LayerDp, RefusesWhatItCannotAnswer) {
  const LayerGraph g = testing::zoo_mlp();
  std::vector<double> theta = normal(g.num_params, 1);
  EXPECT_TRUE(contains(
      error_of<std::invalid_argument>([&] { (void)path_norm(g, std::vector<double>(3), 1.0); }),
      "theta has 3 entries but the layer graph has d = "));
  theta[40] = std::nan("");
  const std::string msg = error_of<std::invalid_argument>([&] { (void)kernel_diagonal(g, theta); });
  EXPECT_TRUE(contains(msg, "theta[40]")) << msg;
  EXPECT_TRUE(contains(msg, "layer 'l1'")) << msg;
  theta[40] = 0;
  EXPECT_TRUE(
      contains(error_of<std::invalid_argument>([&] { (void)path_norm_gradient(g, theta, 0.5); }),
               "not differentiable at theta[40] = 0"));
  EXPECT_TRUE(contains(error_of<std::invalid_argument>([&] { (void)path_norm(g, theta, -1.0); }),
                       "s = -1"));
  // A module applied twice in sequence: the diagonal is not a sum over edges, so the graph is
  // unrolled and the DAG answers.
  const LayerGraph twice = testing::zoo_twice_in_sequence();
  const std::vector<double> t2 = normal(twice.num_params, 2);
  const Network net = unroll(twice);
  const Buffer<double> da = kernel_diagonal(twice, t2);
  const Buffer<double> db = kernel_diagonal(net, t2);
  EXPECT_TRUE(std::equal(da.begin(), da.end(), db.begin()));
  // ... and the norm, the gradient and K v, which are sums over edges, agree layer by layer.
  expect_scaled(path_norm(twice, t2, 2.0).norm, path_norm(net, t2, 2.0).norm, 1e-12, "twice");
  const std::vector<double> v = normal(twice.num_params, 3);
  EXPECT_LE((kernel_matvec(twice, t2, v) - kernel_matvec(net, t2, v)).norm(),
            1e-11 * kernel_matvec(net, t2, v).norm());
  const std::vector<double> ga = path_norm_gradient(twice, t2, 1.0);
  const std::vector<double> gb = path_norm_gradient(net, t2, 1.0);
  for (std::size_t k = 0; k < ga.size(); ++k) {
    expect_close(ga[k], gb[k], 1e-11, "gradient twice");
  }
}

TEST(LayerDp, KernelProductsWithAConvolutionAppliedTwice) {
  // K v merges a convolution's weight sums once, starting them from v_k [A . B]_k, only where
  // no other layer shares its weights: a convolution applied twice adds both layers' terms
  // (and a convolution as the output layer, whose E is 0, still gets C . B).
  GraphBuilder b({2, 6, 5});
  const Index c1 = b.conv("c", 0, 2, {3, 3}, {1, 1}, {1, 1});
  const Index r1 = b.act("r", c1);
  LayerGraph g = b.graph({r1});
  Layer again = g.layers[static_cast<std::size_t>(c1)];
  again.name = "c_again";
  again.inputs = {r1};
  g.layers.push_back(again);
  g.outputs = {static_cast<Index>(g.layers.size() - 1)};
  // The same with two convolutions of their own, the second the output.
  GraphBuilder b2({2, 6, 5});
  const LayerGraph own =
      b2.graph({b2.conv("d", b2.act("r", b2.conv("c", 0, 2, {3, 3}, {1, 1}, {1, 1})), 3, {2, 2})});
  for (const LayerGraph* graph : std::vector<const LayerGraph*>{&g, &own}) {
    const std::vector<double> t = normal(graph->num_params, 4);
    const std::vector<double> v = normal(graph->num_params, 5);
    const Network net = unroll(*graph);
    const Eigen::VectorXd ka = kernel_matvec(*graph, t, v);
    const Eigen::VectorXd kb = kernel_matvec(net, t, v);
    EXPECT_LE((ka - kb).norm(), 1e-11 * kb.norm());
  }
  // A weight of 3e-308 in the first convolution: its product with the GEMM entries below 0.7
  // of its row leaves double's normal range, so that row's merge takes the exact split,
  // which must still start the sums from v_k [A . B]_k.
  std::vector<double> t = normal(own.num_params, 6);
  t[static_cast<std::size_t>(own.layers[1].weight_offset + 4)] = 3e-308;
  const std::vector<double> v = normal(own.num_params, 7);
  const Eigen::VectorXd ka = kernel_matvec(own, t, v);
  const Eigen::VectorXd kb = kernel_matvec(unroll(own), t, v);
  for (Index k = 0; k < own.num_params; ++k) {
    expect_close(ka(k), kb(k), 1e-11, fmt::format("K v entry {} beside a weight of 3e-308", k));
  }
}

}  // namespace
}  // namespace pathlift
