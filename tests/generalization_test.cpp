// The generalization bound of the path-norm toolkit (generalization.hpp): its constants against
// the unrolled network's enumerated paths (D, M), its max nodes (P, K) and its inputs and
// outputs; C and the coefficient against Theorem 3.1's formula recomputed here; the bound
// against the L1 path-norm.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "pathlift/builtins.hpp"
#include "pathlift/counting.hpp"
#include "pathlift/generalization.hpp"
#include "pathlift/model.hpp"
#include "pathlift/path_free.hpp"
#include "pathlift/paths.hpp"
#include "src/layer_dp/detail/layer_depth.hpp"
#include "src/layers/layers_unroll.hpp"
#include "tests/layer_zoo.hpp"

namespace pathlift {
namespace {

/// D, M, P, K, d_in, d_out of a DAG by brute force, every path enumerated: a report with only
/// those constants filled in.
GeneralizationBound brute_force(const Network& net) {
  GeneralizationBound b;
  const PathSet paths = enumerate_paths(net);
  for (Index p = 0; p < paths.size(); ++p) {
    const auto edges = paths.path(p);
    b.depth = std::max(b.depth, static_cast<Index>(edges.size()));
    Index maxes = 0;
    for (const EdgeId e : edges) {
      maxes += net.activation(net.target(e)).kind == ActivationKind::max ? 1 : 0;
    }
    b.max_pools_on_a_path = std::max(b.max_pools_on_a_path, maxes);
  }
  std::vector<Index> orders;  // the k of each k-max-pooling neuron
  for (NodeId v = 0; v < net.num_nodes(); ++v) {
    if (net.activation(v).kind == ActivationKind::max && !net.is_input(v)) {
      orders.push_back(net.activation(v).order);
      b.max_pool_kernel = std::max(b.max_pool_kernel, static_cast<Index>(net.in_edges(v).size()));
    }
  }
  std::sort(orders.begin(), orders.end());
  b.max_pool_types = std::unique(orders.begin(), orders.end()) - orders.begin();
  b.inputs = static_cast<Index>(net.data_inputs().size());
  b.outputs = static_cast<Index>(net.outputs().size());
  return b;
}

/// A report's constants D, M, P, K, d_in, d_out (gtest prints the two tuples on a mismatch).
auto constants(const GeneralizationBound& r) {
  return std::tuple{r.depth,  r.max_pools_on_a_path, r.max_pool_types, r.max_pool_kernel, r.inputs,
                    r.outputs};
}

/// Theorem 3.1's C and Remark 3.1's, recomputed from the report's own constants.
void expect_theorem(const GeneralizationBound& r) {
  const auto D = static_cast<double>(r.depth);
  const auto P = static_cast<double>(r.max_pool_types);
  const auto K = static_cast<double>(r.max_pool_kernel);
  const auto M = static_cast<double>(r.max_pools_on_a_path);
  const double io = (static_cast<double>(r.inputs) + 1) * static_cast<double>(r.outputs);
  const double C = std::sqrt(D * std::log((3 + 2 * P) * K) + std::log((3 + 2 * P) / (1 + P) * io));
  const double Cs = std::sqrt(D * std::log(3.0) + M * std::log(K) + std::log(io));
  EXPECT_NEAR(r.constant, C, 1e-12 * C);
  EXPECT_NEAR(r.sharp_constant, Cs, 1e-12 * Cs);
  const double scale = 4 * std::max(r.input_bound, 1.0) / std::sqrt(r.samples);
  EXPECT_NEAR(r.coefficient, scale * C, 1e-12 * scale * C);
  EXPECT_NEAR(r.bound.log10(), std::log10(r.coefficient) + r.path_norm.log10(), 1e-12);
  EXPECT_NEAR(r.sharp_bound.log10(), std::log10(r.sharp_coefficient) + r.path_norm.log10(), 1e-12);
}

GeneralizationBoundOptions options(double n = 1000, double b = 2.5) {
  GeneralizationBoundOptions o;
  o.samples = n;
  o.input_bound = b;
  return o;
}

bool has_leaky(const LayerGraph& g) {
  return std::any_of(g.layers.begin(), g.layers.end(), [](const Layer& l) {
    return l.kind == LayerKind::activation && l.activation.kind == ActivationKind::leaky_relu;
  });
}

/// Two max-pooling layers on one path (padded, strided, ceil_mode) and a residual branch.
LayerGraph pooled_cnn() {
  testing::GraphBuilder b({2, 7, 7});
  Index x = b.act("r1", b.conv("c1", 0, 3, {3, 3}, {1, 1}, {1, 1}));
  x = b.pool(LayerKind::max_pool, "mp1", x, {3, 3}, {2, 2}, {1, 1});
  const Index y = b.act("r2", b.conv("c2", x, 3, {3, 3}, {1, 1}, {1, 1}));
  x = b.op(LayerKind::add, "skip", {x, y});
  x = b.pool(LayerKind::max_pool, "mp2", x, {2, 2}, {}, {}, {}, true, true);
  x = b.op(LayerKind::flatten, "flat", {x});
  return b.graph({b.linear("fc", x, 2)});
}

TEST(GeneralizationBound, TheLayerGraphsConstantsAreTheEnumeratedPathsOnes) {
  int checked = 0;
  std::vector<LayerGraph> graphs = testing::layer_zoo();
  graphs.push_back(pooled_cnn());
  for (const LayerGraph& graph : graphs) {
    const Model model(graph);
    const std::vector<double> theta = normal_weights(model.num_params(), 3);
    if (has_leaky(graph)) {
      EXPECT_THROW((void)generalization_bound(model, theta, options()), std::invalid_argument);
      continue;
    }
    // On every graph, the layer-level depth is the counted longest path (no enumeration).
    const PathCounts counts = count_paths(model);
    ASSERT_GE(counts.max_path_length, 0);
    const detail::LayerDepths all =
        detail::layer_depths(graph, detail::Unroller(graph).node_entries());
    Index longest = 0;
    for (const Index o : graph.outputs) {
      longest = std::max(longest, all.depth[static_cast<std::size_t>(o)] + 1);
    }
    EXPECT_EQ(longest, counts.max_path_length) << graph.layers.back().name;
    const Network& net = *model.unrolled();
    if (counts.paths.approx() > 2e6) {
      continue;
    }
    const GeneralizationBound b = brute_force(net);
    const GeneralizationBound r = generalization_bound(model, theta, options());
    SCOPED_TRACE(graph.layers.back().name);
    EXPECT_TRUE(r.depth_exact);
    EXPECT_EQ(constants(r), constants(b));
    // The layer-level depths (used when the path lengths are not counted) are the same here.
    const detail::LayerDepths d =
        detail::layer_depths(graph, detail::Unroller(graph).node_entries());
    Index depth = 0;
    Index pools = 0;
    for (const Index o : graph.outputs) {
      depth = std::max(depth, d.depth[static_cast<std::size_t>(o)] + 1);  // into y
      pools = std::max(pools, d.max_pools[static_cast<std::size_t>(o)]);
    }
    EXPECT_EQ(depth, b.depth);
    EXPECT_EQ(pools, b.max_pools_on_a_path);
    expect_theorem(r);
    // The DAG's report is the layer graph's.
    const GeneralizationBound u = generalization_bound(Model(net), theta, options());
    EXPECT_EQ(constants(u), constants(r));
    EXPECT_NEAR(u.bound.log10(), r.bound.log10(), 1e-12);
    ++checked;
  }
  EXPECT_GE(checked, 4);
  // The pooled CNN: 3 x 3 windows (K = 9) and two max pools on a path.
  const GeneralizationBound r = generalization_bound(
      Model(pooled_cnn()), normal_weights(Model(pooled_cnn()).num_params(), 0), options());
  EXPECT_EQ(r.max_pool_kernel, 9);
  EXPECT_EQ(r.max_pools_on_a_path, 2);
  EXPECT_EQ(r.max_pool_types, 1);
}

TEST(GeneralizationBound, RandomDagsAndMlps) {
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    const Network net = random_dag(12, 0.3, seed);
    const GeneralizationBound b = brute_force(net);
    const std::vector<double> theta = normal_weights(net.num_params(), seed);
    const GeneralizationBound r = generalization_bound(Model(net), theta, options(50, 0.3));
    EXPECT_EQ(constants(r), constants(b));
    expect_theorem(r);
    // B < 1 enters as 1.
    EXPECT_NEAR(r.coefficient, 4 * r.constant / std::sqrt(50.0), 1e-12);
  }
  // An MLP with 3 weight layers: D = 3, no max-pooling neuron (P = 0, K = 1, M = 0).
  const Network mlp = feed_forward(4, {6, 5}, 3);
  const std::vector<double> theta = normal_weights(mlp.num_params(), 1);
  const GeneralizationBound r = generalization_bound(Model(mlp), theta, options());
  EXPECT_EQ(r.depth, 3);
  EXPECT_EQ(r.max_pool_types, 0);
  EXPECT_EQ(r.max_pool_kernel, 1);
  EXPECT_EQ(r.max_pools_on_a_path, 0);
  EXPECT_EQ(r.inputs, 4);
  EXPECT_EQ(r.outputs, 3);
  EXPECT_NEAR(r.path_norm.log10(), path_norm(mlp, theta, 1.0).norm.log10(), 1e-14);
  expect_theorem(r);
}

TEST(GeneralizationBound, BadArgumentsAreRefusedByName) {
  const Network net = feed_forward(2, {3}, 1);
  const std::vector<double> theta = normal_weights(net.num_params(), 0);
  const Model m(net);
  const auto message = [&](double n, double b) {
    try {
      (void)generalization_bound(m, theta, options(n, b));
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message(0, 1).find("samples n must be finite and > 0 (got 0)"), std::string::npos);
  EXPECT_NE(message(std::nan(""), 1).find("samples n"), std::string::npos);
  EXPECT_NE(message(10, -1).find("input bound B must be finite and >= 0 (got -1)"),
            std::string::npos);
  EXPECT_NE(message(10, std::numeric_limits<double>::infinity()).find("input bound B"),
            std::string::npos);
  EXPECT_THROW((void)generalization_bound(m, std::vector<double>(3, 1.0), options()),
               std::invalid_argument);
  // A leaky ReLU is outside the theorem: the layer is named.
  try {
    (void)generalization_bound(Model(testing::zoo_relu_chains()),
                               normal_weights(Model(testing::zoo_relu_chains()).num_params(), 0),
                               options());
    ADD_FAILURE() << "a leaky ReLU was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("layer 'lk' has activation leaky_relu"), std::string::npos)
        << e.what();
  }
}

TEST(GeneralizationBound, TheJsonFormHoldsEveryIngredient) {
  const Network net = feed_forward(2, {3}, 1);
  const GeneralizationBound r =
      generalization_bound(Model(net), normal_weights(net.num_params(), 0), options(100, 2));
  const auto j = nlohmann::json::parse(to_json(r));
  EXPECT_EQ(j["D"].get<Index>(), 2);
  EXPECT_EQ(j["C"].get<double>(), r.constant);
  EXPECT_EQ(j["coefficient"].get<double>(), r.coefficient);
  EXPECT_NEAR(j["bound"].get<double>(), r.bound.value(), 0);
  EXPECT_NEAR(j["log10_l1_path_norm"].get<double>(), r.path_norm.log10(), 0);
  EXPECT_EQ(j["assumptions"].size(), generalization_assumptions().size());
}

}  // namespace
}  // namespace pathlift
