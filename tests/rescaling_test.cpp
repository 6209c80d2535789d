// rescaling_matrix, rescale and path_magnitude against their definitions: the rescaling
// vectors, B Z = 0 by sparse products, Phi and the outputs unchanged under rescale (forward
// pass by its definition), path magnitudes by enumerating the paths (tests/reference.hpp).

#include "pathlift/rescaling.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "pathlift/builtins.hpp"
#include "pathlift/error.hpp"
#include "pathlift/forward.hpp"
#include "pathlift/layer_dp.hpp"
#include "pathlift/lifting.hpp"
#include "support.hpp"
#include "tests/layers_builder.hpp"
#include "tests/reference.hpp"

namespace pathlift {
namespace {

using testing::close;

std::vector<double> positive(std::size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(0.1, 10.0);
  std::vector<double> x(n);
  for (double& v : x) {
    v = dist(rng);
  }
  return x;
}

std::vector<double> normal(std::size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> dist;
  std::vector<double> x(n);
  for (double& v : x) {
    v = dist(rng);
  }
  return x;
}

/// sum over the enumerated paths through k of |Phi_p| (with multiplicity), Phi from the edge
/// weights.
std::vector<double> ref_magnitude(const Network& net, std::span<const double> theta) {
  const std::vector<double> w = net.edge_weights(theta);
  const auto paths = testing::ref_paths(net);
  const std::vector<double> phi = testing::ref_phi(paths, w);
  std::vector<double> out(static_cast<std::size_t>(net.num_params()), 0.0);
  for (std::size_t p = 0; p < paths.size(); ++p) {
    for (const EdgeId e : paths[p].edges) {
      const Index k = net.edge_param(e);
      if (k != kFixedEdge) {
        out[static_cast<std::size_t>(k)] += std::abs(phi[p]);
      }
    }
  }
  return out;
}

TEST(Rescaling, MatrixColumnsAreTheRescalingVectorsAndBZIsZero) {
  for (std::uint64_t seed = 0; seed < 40; ++seed) {
    SCOPED_TRACE(fmt::format("seed {}", seed));
    const Network net = testing::random_network(seed);
    const CsrMatrix<double> z = rescaling_matrix(net);
    ASSERT_EQ(z.rows(), net.num_edges());
    ASSERT_EQ(z.cols(), net.num_hidden());
    const auto dense = to_dense(z);
    for (Index j = 0; j < net.num_hidden(); ++j) {
      const std::vector<int> zv = rescaling_vector(net, net.hidden()[static_cast<std::size_t>(j)]);
      for (Index e = 0; e < net.num_edges(); ++e) {
        ASSERT_EQ(dense(e, j), zv[static_cast<std::size_t>(e)]);
      }
    }
    const auto b = to_eigen(skeleton(net));
    const Eigen::MatrixXd bz = b * dense;
    EXPECT_TRUE(bz.isZero(0.0));
  }
}

TEST(Rescaling, RescalePreservesPhiAndTheOutputs) {
  for (std::uint64_t seed = 0; seed < 40; ++seed) {
    SCOPED_TRACE(fmt::format("seed {}", seed));
    const Network net = testing::with_random_activations(testing::random_network(seed), seed);
    const std::vector<double> theta = normal(static_cast<std::size_t>(net.num_edges()), 3);
    const std::vector<double> lambdas = positive(static_cast<std::size_t>(net.num_hidden()), 5);
    const std::vector<double> rescaled = rescale(net, theta, lambdas);
    const auto phi0 = path_lifting<double>(net, std::span<const double>(theta));
    const auto phi1 = path_lifting<double>(net, std::span<const double>(rescaled));
    ASSERT_EQ(phi0.size(), phi1.size());
    for (std::size_t p = 0; p < phi0.size(); ++p) {
      EXPECT_TRUE(close(phi0[p], phi1[p], 1e-13)) << p << ": " << phi0[p] << " " << phi1[p];
    }
    const Eigen::MatrixXd x = random_data(net, 4, seed);
    for (Index i = 0; i < x.rows(); ++i) {
      const Eigen::VectorXd row = x.row(i);
      const auto a = testing::ref_forward(net, theta, row.data());
      const auto b = testing::ref_forward(net, rescaled, row.data());
      for (const NodeId o : net.outputs()) {
        EXPECT_TRUE(close(a.value[static_cast<std::size_t>(o)],
                          b.value[static_cast<std::size_t>(o)], 1e-12));
      }
    }
    // Not the identity when some hidden node has edges (a check that would catch a no-op).
    if (net.num_hidden() > 0) {
      EXPECT_NE(rescaled, theta);
    }
  }
}

TEST(Rescaling, RescaleRefusesBadLambdasByName) {
  const Network net = fig1();
  const std::vector<double> theta = normal(static_cast<std::size_t>(net.num_edges()), 1);
  std::vector<double> lambdas(static_cast<std::size_t>(net.num_hidden()), 1.0);
  EXPECT_TRUE(testing::contains(
      testing::error_of<std::invalid_argument>(
          [&] { (void)rescale(net, theta, std::vector<double>{1.0}); }),
      fmt::format("lambdas has 1 entries but the network has {} hidden nodes", net.num_hidden())));
  lambdas[1] = -2.0;
  const std::string name = net.node_name(net.hidden()[1]);
  EXPECT_TRUE(testing::contains(
      testing::error_of<std::invalid_argument>([&] { (void)rescale(net, theta, lambdas); }),
      fmt::format("lambdas[1] (node {}) must be finite and > 0", name)));
  lambdas[1] = std::nan("");
  EXPECT_THROW((void)rescale(net, theta, lambdas), std::invalid_argument);
}

/// conv (1 -> 2 channels, 2x2) on 1x3x3, ReLU, average pool 2x2, flatten, linear -> 2.
LayerGraph small_cnn() {
  testing::GraphBuilder b({1, 3, 3});
  Index x = b.act("r", b.conv("c", 0, 2, {2, 2}));
  x = b.pool(LayerKind::avg_pool, "pool", x, {2, 2}, {1, 1});
  x = b.op(LayerKind::flatten, "flat", {x});
  return b.graph({b.linear("fc", x, 2)});
}

TEST(Rescaling, SharedParametersTakeOnlyPerChannelLambdas) {
  const LayerGraph g = small_cnn();
  const Network net = unroll(g);
  const std::vector<double> theta = normal(static_cast<std::size_t>(net.num_params()), 2);
  EXPECT_THROW((void)rescaling_matrix(net), NetworkError);
  // The channel of each hidden node: its in-edges carry channel c's conv parameters
  // (weights 4c..4c+3, bias 8 + c) or come from channel c's ReLU nodes by fixed pool edges.
  std::vector<int> channel(static_cast<std::size_t>(net.num_nodes()), -1);
  for (const NodeId v : net.topological_order()) {
    for (const EdgeId e : net.in_edges(v)) {
      const Index k = net.edge_param(e);
      if (k != kFixedEdge && k < 10) {
        channel[static_cast<std::size_t>(v)] = static_cast<int>(k < 8 ? k / 4 : k - 8);
      } else if (k == kFixedEdge) {
        channel[static_cast<std::size_t>(v)] = channel[static_cast<std::size_t>(net.source(e))];
      }
    }
  }
  const double per_channel[2] = {3.0, 0.25};
  std::vector<double> lambdas;
  for (const NodeId v : net.hidden()) {
    ASSERT_GE(channel[static_cast<std::size_t>(v)], 0) << net.node_name(v);
    lambdas.push_back(per_channel[channel[static_cast<std::size_t>(v)]]);
  }
  const std::vector<double> rescaled = rescale(net, theta, lambdas);
  EXPECT_EQ(rescaled[0], theta[0] * 3.0);   // channel 0's first weight
  EXPECT_EQ(rescaled[4], theta[4] * 0.25);  // channel 1's
  EXPECT_EQ(rescaled[8], theta[8] * 3.0);   // channel 0's bias
  const auto phi0 = path_lifting<double>(net, std::span<const double>(theta));
  const auto phi1 = path_lifting<double>(net, std::span<const double>(rescaled));
  for (std::size_t p = 0; p < phi0.size(); ++p) {
    ASSERT_TRUE(close(phi0[p], phi1[p], 1e-13)) << p;
  }
  // One node of channel 0 scaled differently: its conv parameters would need two factors.
  lambdas[0] = 2.0;
  EXPECT_TRUE(testing::contains(
      testing::error_of<std::invalid_argument>([&] { (void)rescale(net, theta, lambdas); }),
      "these lambdas are not a symmetry of the network"));
}

TEST(Rescaling, PathMagnitudeIsTheSumOfPathProductsThroughEachParameter) {
  for (std::uint64_t seed = 0; seed < 30; ++seed) {
    SCOPED_TRACE(fmt::format("seed {}", seed));
    const Network net = testing::random_network(seed);
    std::vector<double> theta = normal(static_cast<std::size_t>(net.num_edges()), 9);
    if (!theta.empty()) {
      theta[seed % theta.size()] = 0.0;  // a zero weight: its paths have |Phi_p| = 0
    }
    const std::vector<double> got = path_magnitude(net, theta);
    const std::vector<double> want = ref_magnitude(net, theta);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t k = 0; k < got.size(); ++k) {
      EXPECT_TRUE(close(got[k], want[k], 1e-12)) << k << ": " << got[k] << " vs " << want[k];
    }
    // Invariant under rescaling, like Phi.
    const auto lambdas = positive(static_cast<std::size_t>(net.num_hidden()), 11);
    const std::vector<double> again = path_magnitude(net, rescale(net, theta, lambdas));
    for (std::size_t k = 0; k < got.size(); ++k) {
      EXPECT_TRUE(close(got[k], again[k], 1e-12)) << k;
    }
  }
}

TEST(Rescaling, PathMagnitudeOnLayersEqualsTheUnrolledNetwork) {
  const LayerGraph g = small_cnn();
  const Network net = unroll(g);
  const std::vector<double> theta = normal(static_cast<std::size_t>(g.num_params), 4);
  const std::vector<double> layers = path_magnitude(g, theta);
  const std::vector<double> dag = path_magnitude(net, theta);
  const std::vector<double> want = ref_magnitude(net, theta);
  ASSERT_EQ(layers.size(), want.size());
  for (std::size_t k = 0; k < want.size(); ++k) {
    EXPECT_TRUE(close(layers[k], want[k], 1e-12)) << k;
    EXPECT_TRUE(close(dag[k], want[k], 1e-12)) << k;
  }
}

}  // namespace
}  // namespace pathlift
