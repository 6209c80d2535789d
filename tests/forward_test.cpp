// The forward pass and the activation pattern against the definition (docs/conventions.md#forward):
// a scalar, per-sample recursion over the edge list (testing::ref_forward), by hand on fig1, and
// matrix products on feed-forward networks in PyTorch parameter order.

#include "pathlift/forward.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "pathlift/builtins.hpp"
#include "pathlift/error.hpp"
#include "reference.hpp"
#include "support.hpp"

namespace pathlift {
namespace {

using testing::close;
using testing::ref_forward;
using testing::ref_negative_slope;
using testing::RefSample;
using testing::with_random_activations;

Eigen::MatrixXd row_of(const Eigen::MatrixXd& X, Index i) {
  return X.row(i);
}

// ---------------------------------------------------------------------------------------------

TEST(Forward, Fig1ByHand) {
  const Network net = fig1();
  const std::vector<double> t = {0.5, -1.0, 2.0, 0.25, 1.5, -0.5, 3.0};
  Eigen::MatrixXd X(3, 2);
  X << 1.0, 2.0,  //
      -1.0, 0.5,  //
      2.0, -4.0;
  const ForwardResult fw = forward(net, t, X);
  const NodeId a = *net.find_node("a");
  const NodeId c = *net.find_node("c");
  const NodeId g = *net.find_node("g");
  const NodeId d = *net.find_node("d");
  const NodeId f = *net.find_node("f");
  const NodeId h = *net.find_node("h");
  ASSERT_EQ(fw.outputs.rows(), 3);
  ASSERT_EQ(fw.outputs.cols(), 1);
  ASSERT_EQ(fw.values.cols(), 6);
  const ActivationPattern pat = activation_pattern(net, fw);
  for (Index i = 0; i < 3; ++i) {
    const double xa = X(i, 0);
    const double xc = X(i, 1);
    const double pd = t[0] * xa + t[2] * xc;
    const double pf = t[1] * xa + t[3] * xc;
    const double vd = std::max(pd, 0.0);
    const double vf = std::max(pf, 0.0);
    const double vh = t[4] * vd + t[5] * vf + t[6];
    EXPECT_EQ(fw.pre_activations(i, a), xa);
    EXPECT_EQ(fw.values(i, c), xc);
    EXPECT_EQ(fw.values(i, g), 1.0);
    EXPECT_DOUBLE_EQ(fw.pre_activations(i, d), pd);
    EXPECT_DOUBLE_EQ(fw.pre_activations(i, f), pf);
    EXPECT_DOUBLE_EQ(fw.values(i, d), vd);
    EXPECT_DOUBLE_EQ(fw.values(i, f), vf);
    EXPECT_DOUBLE_EQ(fw.outputs(i, 0), vh);
    EXPECT_EQ(fw.values(i, h), fw.outputs(i, 0));
    EXPECT_EQ(pat.slopes(i, d), pd > 0 ? 1.0 : 0.0);
    EXPECT_EQ(pat.slopes(i, f), pf > 0 ? 1.0 : 0.0);
    EXPECT_EQ(pat.slopes(i, h), 1.0);
    EXPECT_EQ(pat.slopes(i, a), 1.0);
  }
  // Sample 0: d = 0.5 + 4 = 4.5, f = -1 + 0.5 = -0.5 (off). Sample 1: d = -0.5 + 1 = 0.5,
  // f = 1.125. Sample 2: d = -7, f = -3. The margin 0.5 is first met at node d (node order
  // first, then samples).
  EXPECT_EQ(fw.values(0, f), 0.0);
  EXPECT_FALSE(std::signbit(fw.values(0, f)));  // +0, not -0
  EXPECT_EQ(pat.margin, 0.5);
  EXPECT_EQ(pat.margin_node, d);
  EXPECT_EQ(pat.margin_sample, 1);
  EXPECT_FALSE(pat.on_kink);
}

TEST(Forward, MatchesReferenceOnRandomDags) {
  int with_relu = 0;
  for (std::uint64_t seed = 0; seed < 500; ++seed) {
    const Index m = 2 + static_cast<Index>(seed % 9);
    const double p = 0.25 + 0.1 * static_cast<double>(seed % 5);
    Network net = random_dag(m, p, seed);
    if (seed % 2 == 1) {
      net = with_random_activations(net, seed);
    }
    const std::vector<double> theta = normal_weights(net.num_edges(), seed + 1000);
    Eigen::MatrixXd X = random_data(net, 5, seed + 2000);
    if (X.size() > 0) {
      X(0, 0) = 0.0;  // exact zeros are data too
    }
    const ForwardResult fw = forward(net, theta, X);
    const ActivationPattern pat = activation_pattern(net, fw);
    double margin = std::numeric_limits<double>::infinity();
    for (Index i = 0; i < X.rows(); ++i) {
      const Eigen::VectorXd x = X.row(i);
      const RefSample ref = ref_forward(net, theta, x.data());
      for (NodeId v = 0; v < net.num_nodes(); ++v) {
        const auto vi = static_cast<std::size_t>(v);
        ASSERT_TRUE(close(fw.pre_activations(i, v), ref.pre[vi], 1e-12))
            << "seed " << seed << " sample " << i << " node " << net.node_name(v);
        ASSERT_TRUE(close(fw.values(i, v), ref.value[vi], 1e-12))
            << "seed " << seed << " sample " << i << " node " << net.node_name(v);
        const double a = ref_negative_slope(net, v);
        ASSERT_EQ(pat.slopes(i, v), fw.pre_activations(i, v) > 0 ? 1.0 : a);
        if (!net.is_input(v) && a != 1.0) {
          margin = std::min(margin, std::abs(fw.pre_activations(i, v)));
        }
      }
      const auto outputs = net.outputs();
      for (std::size_t j = 0; j < outputs.size(); ++j) {
        ASSERT_EQ(fw.outputs(i, static_cast<Index>(j)), fw.values(i, outputs[j]));
      }
    }
    ASSERT_EQ(pat.margin, margin) << "seed " << seed;
    if (std::isfinite(margin)) {
      ++with_relu;
      ASSERT_EQ(std::abs(fw.pre_activations(pat.margin_sample, pat.margin_node)), margin);
    } else {
      ASSERT_EQ(pat.margin_node, -1);
    }
  }
  EXPECT_GT(with_relu, 250);
}

TEST(Forward, FeedForwardMatchesMatrixProducts) {
  // PyTorch order: per layer W (out x in, row-major) then b.
  const std::vector<Index> sizes = {3, 5, 4, 2};
  const Network net = feed_forward(3, {5, 4}, 2);
  const std::vector<double> theta = normal_weights(net.num_edges(), 7);
  const Eigen::MatrixXd X = random_data(net, 20, 8);
  const ForwardResult fw = forward(net, theta, X);
  std::size_t k = 0;
  Eigen::MatrixXd h = X.transpose();  // r x n
  for (std::size_t l = 0; l + 1 < sizes.size(); ++l) {
    const Index in = sizes[l];
    const Index out = sizes[l + 1];
    Eigen::MatrixXd W(out, in);
    for (Index o = 0; o < out; ++o) {
      for (Index i = 0; i < in; ++i) {
        W(o, i) = theta[k++];
      }
    }
    Eigen::VectorXd b(out);
    for (Index o = 0; o < out; ++o) {
      b(o) = theta[k++];
    }
    h = (W * h).colwise() + b;
    if (l + 2 < sizes.size()) {
      h = h.cwiseMax(0.0);
    }
  }
  ASSERT_EQ(k, theta.size());
  for (Index i = 0; i < X.rows(); ++i) {
    for (Index j = 0; j < 2; ++j) {
      EXPECT_TRUE(close(fw.outputs(i, j), h(j, i), 1e-12)) << i << "," << j;
    }
  }
}

TEST(Forward, InputOnAKinkGivesMarginZero) {
  const Network net = fig1();
  // pre(d) = theta_0 a + theta_2 c = 0.5 - 0.5 = 0 exactly on sample 1.
  const std::vector<double> t = {1.0, 2.0, -1.0, 1.0, 1.0, 1.0, 0.0};
  Eigen::MatrixXd X(2, 2);
  X << 1.0, 0.25,  //
      0.5, 0.5;
  const ForwardResult fw = forward(net, t, X);
  const ActivationPattern pat = activation_pattern(net, fw);
  EXPECT_EQ(pat.margin, 0.0);
  EXPECT_TRUE(pat.on_kink);
  EXPECT_EQ(pat.margin_sample, 1);
  EXPECT_EQ(pat.margin_node, *net.find_node("d"));
  EXPECT_EQ(pat.slopes(1, *net.find_node("d")), 0.0);  // ReLU'(0) = 0

  X(1, 1) = 0.5 - 1.0 / 1024;  // just off the kink
  const ActivationPattern off = activation_pattern(net, forward(net, t, X));
  EXPECT_FALSE(off.on_kink);
  EXPECT_EQ(off.margin, 1.0 / 1024);
}

TEST(Forward, LeakyRelu) {
  NetworkSpec spec = fig1().spec();
  spec.activations = {{3, Activation::leaky_relu(0.1)}, {4, Activation::leaky_relu(0.1)}};
  const Network net(std::move(spec));
  const std::vector<double> t = {1.0, -1.0, 0.0, 0.0, 1.0, 1.0, 0.0};
  Eigen::MatrixXd X(2, 2);
  X << 2.0, 0.0,  //
      -3.0, 0.0;
  const ForwardResult fw = forward(net, t, X);
  // Sample 0: d = 2, f = 0.1 * -2 = -0.2. Sample 1: d = 0.1 * -3, f = 3.
  EXPECT_DOUBLE_EQ(fw.outputs(0, 0), 2.0 - 0.2);
  EXPECT_DOUBLE_EQ(fw.outputs(1, 0), -0.3 + 3.0);
  const ActivationPattern pat = activation_pattern(net, fw);
  EXPECT_EQ(pat.slopes(0, 4), 0.1);
  EXPECT_EQ(pat.slopes(1, 3), 0.1);
  EXPECT_EQ(pat.slopes(1, 4), 1.0);
  EXPECT_EQ(pat.margin, 2.0);
}

TEST(Forward, BatchOfOneAndOfTenThousand) {
  const Network net = with_random_activations(random_dag(8, 0.5, 3), 3);
  const std::vector<double> theta = normal_weights(net.num_edges(), 4);
  const Eigen::MatrixXd X = random_data(net, 10000, 5);
  const ForwardResult big = forward(net, theta, X);
  ASSERT_EQ(big.outputs.rows(), 10000);
  ASSERT_EQ(big.values.rows(), 10000);
  for (Index i = 0; i < 10000; i += 37) {
    const ForwardResult one = forward(net, theta, row_of(X, i));
    ASSERT_EQ(one.outputs.rows(), 1);
    for (Index v = 0; v < net.num_nodes(); ++v) {
      ASSERT_EQ(one.values(0, v), big.values(i, v)) << i;  // same arithmetic per sample
    }
  }
  const ForwardResult none = forward(net, theta, Eigen::MatrixXd(0, X.cols()));
  EXPECT_EQ(none.outputs.rows(), 0);
  EXPECT_EQ(activation_pattern(net, none).margin, std::numeric_limits<double>::infinity());
}

TEST(Forward, ThreadCountDoesNotChangeResults) {
  const Network net = feed_forward(4, {16, 16}, 3);
  const std::vector<double> theta = normal_weights(net.num_edges(), 1);
  const Eigen::MatrixXd X = random_data(net, 3000, 2);
  const ForwardResult a = forward(net, theta, X, testing::with_threads(1));
  const ForwardResult b = forward(net, theta, X, testing::with_threads(4));
  EXPECT_TRUE(a.values == b.values);
  EXPECT_TRUE(a.pre_activations == b.pre_activations);
  EXPECT_TRUE(a.outputs == b.outputs);
}

TEST(Forward, RowMajorDataIsAccepted) {
  const Network net = fig1();
  const std::vector<double> theta = normal_weights(7, 0);
  const Eigen::MatrixXd X = random_data(net, 6, 1);
  const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> Xr = X;
  EXPECT_TRUE(forward(net, theta, Xr).outputs == forward(net, theta, X).outputs);
}

TEST(Forward, Errors) {
  const Network net = fig1();
  const std::vector<double> theta = normal_weights(7, 0);
  try {
    (void)forward(net, theta, Eigen::MatrixXd::Zero(4, 3));
    FAIL() << "wrong width accepted";
  } catch (const FormatError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("3 columns"), std::string::npos) << what;
    EXPECT_NE(what.find("2 data inputs"), std::string::npos) << what;
  }
  Eigen::MatrixXd X = Eigen::MatrixXd::Ones(3, 2);
  X(2, 1) = std::numeric_limits<double>::quiet_NaN();
  try {
    (void)forward(net, theta, X);
    FAIL() << "NaN accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("row 2, column 1"), std::string::npos) << e.what();
  }
  X(2, 1) = 1.0;
  EXPECT_THROW((void)forward(net, std::vector<double>(6, 1.0), X), std::invalid_argument);
  std::vector<double> bad = theta;
  bad[3] = std::numeric_limits<double>::infinity();
  EXPECT_THROW((void)forward(net, bad, X), std::invalid_argument);
  EngineOptions tiny;
  tiny.max_memory = 64;
  EXPECT_THROW((void)forward(net, theta, X, tiny), TooLarge);
  ForwardResult wrong = forward(net, theta, X);
  wrong.pre_activations.resize(3, 2);
  EXPECT_THROW((void)activation_pattern(net, wrong), std::invalid_argument);
}

TEST(Forward, RandomDataIsReproducible) {
  const Network net = feed_forward(5, {3}, 2);
  const Eigen::MatrixXd a = random_data(net, 10, 42);
  EXPECT_EQ(a.rows(), 10);
  EXPECT_EQ(a.cols(), 5);
  EXPECT_TRUE(a == random_data(net, 10, 42));
  EXPECT_TRUE(a.topRows(4) == random_data(net, 4, 42));
  EXPECT_FALSE(a == random_data(net, 10, 43));
}

}  // namespace
}  // namespace pathlift
