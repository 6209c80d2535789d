// The paths themselves (heavy_paths.hpp, path_shares.hpp) against brute force: the k heaviest
// paths are the enumerated paths sorted by |Phi_p| (ties in canonical order), sampled paths are
// reproducible paths of non-zero weight whose frequencies follow |Phi_p|^s, and the shares are
// sums over the enumerated paths; on a layer graph with every toolkit kind, its channels' shares
// add up to its layers'.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <vector>

#include "pathlift/builtins.hpp"
#include "pathlift/error.hpp"
#include "pathlift/heavy_paths.hpp"
#include "pathlift/layers.hpp"
#include "pathlift/lifting.hpp"
#include "pathlift/model.hpp"
#include "pathlift/path_shares.hpp"
#include "pathlift/paths.hpp"
#include "support.hpp"
#include "tests/layer_zoo.hpp"

namespace pathlift {
namespace {

struct Enumerated {
  PathSet paths;
  std::vector<double> phi;
};

Enumerated enumerate(const Network& net, std::span<const double> theta) {
  Enumerated e{enumerate_paths(net), {}};
  const auto phi = path_lifting(e.paths, theta);
  e.phi.assign(phi.begin(), phi.end());
  return e;
}

TEST(HeavyPaths, TopPathsAreTheEnumeratedOnesSorted) {
  const Network net = feed_forward(3, {4, 3}, 2, true);
  const std::vector<double> theta = normal_weights(net.num_params(), 5);
  const Enumerated e = enumerate(net, theta);
  std::vector<Index> order(e.phi.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](Index a, Index b) {
    return std::fabs(e.phi[static_cast<std::size_t>(a)]) >
           std::fabs(e.phi[static_cast<std::size_t>(b)]);
  });
  const Model model(net);
  const std::vector<WeightedPath> top = top_paths(model, theta, 1000);
  ASSERT_EQ(top.size(), e.phi.size());
  for (std::size_t i = 0; i < top.size(); ++i) {
    const auto p = static_cast<Index>(order[i]);
    EXPECT_NEAR(top[i].value(), e.phi[static_cast<std::size_t>(p)],
                1e-13 * std::fabs(e.phi[static_cast<std::size_t>(p)]));
    const auto edges = e.paths.path(p);
    EXPECT_TRUE(std::equal(edges.begin(), edges.end(), top[i].edges.begin(), top[i].edges.end()))
        << "path " << i;
  }
  // s = 0: every path weighs 1, the canonical order.
  const std::vector<WeightedPath> first = top_paths(model, theta, 5, 0);
  for (Index p = 0; p < 5; ++p) {
    const auto edges = e.paths.path(p);
    EXPECT_TRUE(std::equal(edges.begin(), edges.end(),
                           first[static_cast<std::size_t>(p)].edges.begin(),
                           first[static_cast<std::size_t>(p)].edges.end()));
  }
  EXPECT_THROW((void)top_paths(model, theta, -1), std::invalid_argument);
}

TEST(HeavyPaths, SamplesAreReproducibleAndFollowTheWeights) {
  const Network net = feed_forward(2, {3}, 1, false);  // 6 paths
  std::vector<double> theta = normal_weights(net.num_params(), 2);
  theta[0] = 0;  // the paths through edge 0 weigh 0
  const Enumerated e = enumerate(net, theta);
  const Model model(net);
  const Index n = 60000;
  const auto a = sample_paths(model, theta, n, 1, 9, {.threads = 1});
  const auto b = sample_paths(model, theta, n, 1, 9, {.threads = 2});
  ASSERT_EQ(a.size(), b.size());
  std::map<std::vector<EdgeId>, Index> counts;
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].edges, b[i].edges);
    EXPECT_NE(a[i].value(), 0.0);
    ++counts[a[i].edges];
  }
  double total = 0;
  for (const double x : e.phi) {
    total += std::fabs(x);
  }
  for (Index p = 0; p < e.paths.size(); ++p) {
    const auto edges = e.paths.path(p);
    const double want = std::fabs(e.phi[static_cast<std::size_t>(p)]) / total;
    const double got =
        static_cast<double>(counts[std::vector<EdgeId>(edges.begin(), edges.end())]) / double(n);
    EXPECT_NEAR(got, want, 5 * std::sqrt(want * (1 - want) / double(n)) + 1e-12) << "path " << p;
  }
  std::fill(theta.begin(), theta.end(), 0.0);
  EXPECT_THROW((void)sample_paths(model, theta, 3), RangeError);
}

TEST(HeavyPaths, SharesAreSumsOverThePaths) {
  const Network net = feed_forward(3, {4, 3}, 2, true);
  const std::vector<double> theta = normal_weights(net.num_params(), 7);
  const Enumerated e = enumerate(net, theta);
  const Model model(net);
  for (const double s : {1.0, 2.0}) {
    double total = 0;
    std::vector<double> param(static_cast<std::size_t>(net.num_params()), 0.0);
    std::vector<double> node(static_cast<std::size_t>(net.num_nodes()), 0.0);
    for (Index p = 0; p < e.paths.size(); ++p) {
      const double w = std::pow(std::fabs(e.phi[static_cast<std::size_t>(p)]), s);
      total += w;
      const auto edges = e.paths.path(p);
      node[static_cast<std::size_t>(net.source(edges[0]))] += w;
      for (const EdgeId x : edges) {
        param[static_cast<std::size_t>(x)] += w;  // one parameter per edge
        node[static_cast<std::size_t>(net.target(x))] += w;
      }
    }
    const PathNormShares by_param = path_norm_shares(model, theta, s, SharesBy::parameter);
    const PathNormShares by_node = path_norm_shares(model, theta, s, SharesBy::node);
    for (std::size_t k = 0; k < param.size(); ++k) {
      EXPECT_NEAR(by_param.shares[k], param[k] / total, 1e-13);
    }
    for (std::size_t v = 0; v < node.size(); ++v) {
      EXPECT_NEAR(by_node.shares[v], node[v] / total, 1e-13) << by_node.names[v];
    }
  }
  EXPECT_THROW((void)path_norm_shares(model, theta, 1, SharesBy::layer), std::invalid_argument);
  EXPECT_THROW((void)parse_shares_by("bogus"), std::invalid_argument);
}

TEST(HeavyPaths, ALayerGraphsChannelsAddUpToItsLayersAndItsTopPathsAreItsDags) {
  for (const LayerGraph& g : {testing::zoo_toolkit_kinds(), testing::zoo_cnn()}) {
    const std::vector<double> theta = normal_weights(g.num_params, 3);
    const Model model(g);
    const PathNormShares layers = path_norm_shares(model, theta, 1, SharesBy::layer);
    const PathNormShares channels = path_norm_shares(model, theta, 1, SharesBy::channel);
    const PathNormShares params = path_norm_shares(model, theta, 1, SharesBy::parameter);
    EXPECT_NEAR(std::accumulate(layers.shares.begin(), layers.shares.end(), 0.0),
                std::accumulate(params.shares.begin(), params.shares.end(), 0.0), 1e-12);
    EXPECT_NEAR(std::accumulate(channels.shares.begin(), channels.shares.end(), 0.0),
                std::accumulate(layers.shares.begin(), layers.shares.end(), 0.0), 1e-12);
    // The layer graph's search (never unrolled) and the unrolled DAG's give the same |Phi_p| in
    // the same order (ties may come in another order: by output entry there, by start node
    // here); each layer path is its entries, its value the product of its steps' weights.
    const Model dag(unroll(g));
    const auto a = top_paths(model, theta, 20);
    const auto b = top_paths(dag, theta, 20);
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_NEAR(std::fabs(a[i].value()), std::fabs(b[i].value()),
                  1e-12 * std::fabs(b[i].value()));
      EXPECT_TRUE(a[i].edges.empty() && a[i].nodes.empty());
      ASSERT_EQ(a[i].entries.size(), a[i].weights.size() + 1);
      const double product =
          std::accumulate(a[i].weights.begin(), a[i].weights.end(), 1.0, std::multiplies<>());
      EXPECT_NEAR(product, a[i].value(), 1e-12 * std::fabs(product));
      for (std::size_t j = 0; j < a[i].params.size(); ++j) {
        if (a[i].params[j] >= 0) {
          EXPECT_EQ(a[i].weights[j], theta[static_cast<std::size_t>(a[i].params[j])]);
        }
      }
    }
  }
}

TEST(HeavyPaths, ALayerGraphsSamplesArePathsOfTheirWeightsForAnyThreadCount) {
  for (const LayerGraph& g : {testing::zoo_toolkit_kinds(), testing::zoo_cnn()}) {
    const std::vector<double> theta = normal_weights(g.num_params, 5);
    const Model model(g);
    EngineOptions one;
    one.threads = 1;
    EngineOptions two;
    two.threads = 2;
    const auto a = sample_paths(model, theta, 500, 1.0, 7, one);
    const auto b = sample_paths(model, theta, 500, 1.0, 7, two);
    ASSERT_EQ(a.size(), 500U);
    ASSERT_EQ(b.size(), 500U);
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].entries, b[i].entries);
      EXPECT_EQ(a[i].params, b[i].params);
      ASSERT_EQ(a[i].entries.size(), a[i].weights.size() + 1);
      EXPECT_NE(a[i].sign, 0);  // s > 0: never a path of weight 0
      const double product =
          std::accumulate(a[i].weights.begin(), a[i].weights.end(), 1.0, std::multiplies<>());
      EXPECT_NEAR(product, a[i].value(), 1e-12 * std::fabs(product));
      EXPECT_EQ(a[i].entries.front().layer == 0, !a[i].entries.front().bias);
    }
  }
}

}  // namespace
}  // namespace pathlift
