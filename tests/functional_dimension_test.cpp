// The certified functional dimension (functional_dimension.hpp, docs/functional-dimension.md),
// against:
// - J_X = L(X) dPhi, the paper's linearization (linearize.hpp) times the path engine's Jacobian,
//   a route that shares no code with the rows' backward pass; with small integer weights and
//   inputs every entry is an exact double, so the rank of every prefix of its rows, taken mod
//   a different prime by the sparse elimination, is exact with overwhelming probability;
// - linear networks (every unit active on every sample), whose functional dimension is known:
//   GL symmetries of each hidden layer, so a wrong kernel vector would push the certified upper
//   bound below the lower one;
// - the pattern certificate on an exact zero and on a pre-activation lost in rounding.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "pathlift/builtins.hpp"
#include "pathlift/error.hpp"
#include "pathlift/functional_dimension.hpp"
#include "pathlift/lifting.hpp"
#include "pathlift/linearize.hpp"
#include "pathlift/modular.hpp"
#include "src/core/random.hpp"
#include "support.hpp"

namespace pathlift {
namespace {

using testing::contains;
using testing::error_of;

/// The rows of J_X = L(X) dPhi, dense.
Eigen::MatrixXd reference_rows(const Network& net, const std::vector<double>& theta,
                               const Eigen::MatrixXd& X) {
  const Linearization lin = linearize(net, theta, X);
  const auto l = to_dense(lin.map);
  const auto j = to_dense(jacobian<double>(net, theta));
  return l * j;
}

/// The rank mod a prime other than the default of rows 0..count-1 of an integer matrix.
Index prefix_rank(const Eigen::MatrixXd& rows, Index count) {
  SparseIntMatrix m(count, rows.cols());
  for (Index r = 0; r < count; ++r) {
    for (Index c = 0; c < rows.cols(); ++c) {
      const double x = rows(r, c);
      EXPECT_EQ(x, std::round(x)) << "the reference must be an integer matrix";
      if (x != 0) {
        m.set(r, c, static_cast<std::int64_t>(x));
      }
    }
  }
  ModularRankOptions options;
  options.prime = 1'000'000'007;
  return modular_rank(m, options);
}

/// Small integers in [-k, k], reproducible.
std::vector<double> small_integers(Index count, int k, std::uint64_t seed) {
  detail::SplitMix64 rng(seed);
  std::vector<double> v(static_cast<std::size_t>(count));
  for (double& x : v) {
    x = static_cast<double>(static_cast<int>(rng.next() % static_cast<std::uint64_t>(2 * k + 1)) -
                            k);
  }
  return v;
}

TEST(FunctionalDimension, RankAndPivotRowsAreThoseOfLTimesDPhi) {
  int certified = 0;
  int below = 0;
  for (std::uint64_t seed = 0; seed < 24; ++seed) {
    const Index width = 2 + static_cast<Index>(seed % 4);
    const Network net = feed_forward(3, {width, width}, 2);
    const std::vector<double> theta = small_integers(net.num_params(), 2, seed);
    const Index n = 2 + static_cast<Index>(seed % 9);
    const std::vector<double> x = small_integers(n * 3, 3, seed + 100);
    Eigen::MatrixXd X(n, 3);
    for (Index i = 0; i < n; ++i) {
      for (Index c = 0; c < 3; ++c) {
        X(i, c) = x[static_cast<std::size_t>(i * 3 + c)];
      }
    }
    const FunctionalDimension fd = functional_dimension(Model(net), theta, X);
    const Eigen::MatrixXd j = reference_rows(net, theta, X);
    const Index rank = prefix_rank(j, j.rows());
    SCOPED_TRACE("seed " + std::to_string(seed));
    EXPECT_TRUE(fd.pattern_certified) << "integer networks are computed exactly";
    EXPECT_EQ(fd.lower, rank);
    EXPECT_LE(fd.lower, fd.upper);
    EXPECT_EQ(fd.certified(), fd.lower == fd.upper);
    // Row t is a pivot iff it raises the rank of the rows before it.
    std::vector<Index> profile;
    Index before = 0;
    for (Index t = 1; t <= j.rows(); ++t) {
      const Index r = prefix_rank(j, t);
      if (r > before) {
        profile.push_back(t - 1);
      }
      before = r;
    }
    EXPECT_EQ(fd.pivot_rows, profile);
    certified += fd.certified() ? 1 : 0;
    below += rank < std::min(fd.upper_rows, fd.upper_dphi) ? 1 : 0;
  }
  EXPECT_GE(certified, 12);
  EXPECT_GE(below, 3) << "some cases must drop below min(N q, d - h): dead units, ...";
}

TEST(FunctionalDimension, LinearNetworksAreCertifiedByTheirGLSymmetries) {
  // Positive weights and inputs: every unit is active on every sample, the network is linear
  // on the batch, f(x) = W3 W2 W1 x + ..., GL(width) acts on each hidden layer and the biases
  // translate: a kernel vector pathlift claims that is not one would push the upper bound
  // below the rank.
  for (const Index width : {1, 2, 3, 5}) {
    const Network net = feed_forward(4, {width, width}, 3);
    std::vector<double> theta = small_integers(net.num_params(), 3, 7 + width);
    for (double& t : theta) {
      t = std::abs(t) + 1;
    }
    Eigen::MatrixXd X = Eigen::MatrixXd::Zero(40, 4);
    const auto x = small_integers(160, 4, 3);
    for (Index k = 0; k < 160; ++k) {
      X(k / 4, k % 4) = std::abs(x[static_cast<std::size_t>(k)]) + 1;
    }
    const FunctionalDimension fd = functional_dimension(Model(net), theta, X);
    SCOPED_TRACE("width " + std::to_string(width));
    // The functions are the affine maps x -> M x + c with rank(M) <= w = min(width, 3): M has
    // w (3 + 4 - w) degrees of freedom, c has 3.
    const Index w = std::min<Index>(width, 3);
    EXPECT_EQ(fd.lower, w * (7 - w) + 3);
    EXPECT_TRUE(fd.certified()) << fd.explanation;
  }
}

TEST(FunctionalDimension, ThePatternIsCertifiedOnAnExactZeroAndNotWithinRounding) {
  // One hidden ReLU unit fed by three inputs; output = that unit.
  NetworkSpec spec;
  spec.node_names = {"a", "b", "c", "h", "y"};
  spec.edges = {{0, 3}, {1, 3}, {2, 3}, {3, 4}};
  spec.activations = {{3, Activation::relu()}, {4, Activation::identity()}};
  const Network net(spec);
  Eigen::MatrixXd X(1, 3);
  X << 1, 1, 1;
  {
    const std::vector<double> theta = {1, 2, -3, 1};  // pre-activation exactly 0
    const FunctionalDimension fd = functional_dimension(Model(net), theta, X);
    EXPECT_TRUE(fd.pattern_certified);
    EXPECT_TRUE(fd.on_kink);
    EXPECT_EQ(fd.lower, 0);  // ReLU'(0) = 0: the output does not see theta
    EXPECT_EQ(fd.status, FunctionalDimensionStatus::certified);
  }
  {
    const std::vector<double> theta = {0.1, 0.2, -0.3, 1};  // 5.6e-17 in floating point
    const FunctionalDimension fd = functional_dimension(Model(net), theta, X);
    EXPECT_FALSE(fd.pattern_certified);
    EXPECT_EQ(fd.status, FunctionalDimensionStatus::pattern_uncertain);
    EXPECT_TRUE(contains(fd.pattern_note, "node h"));
    EXPECT_TRUE(contains(fd.explanation, "not certain"));
  }
}

TEST(FunctionalDimension, JsonAndErrors) {
  const Network net = feed_forward(3, {4}, 2);
  const std::vector<double> theta = normal_weights(net.num_params(), 1);
  const Eigen::MatrixXd X = random_data(net, 20, 2);
  const FunctionalDimension fd = functional_dimension(Model(net), theta, X);
  ASSERT_TRUE(fd.numerical.has_value());
  EXPECT_EQ(fd.numerical->rank, fd.lower);
  const auto j = nlohmann::json::parse(to_json(fd));
  for (const char* key : {"n",
                          "q",
                          "d",
                          "rows",
                          "functional_dimension",
                          "lower",
                          "upper",
                          "status",
                          "explanation",
                          "upper_rows",
                          "upper_dphi",
                          "upper_kernel",
                          "distinct_samples",
                          "rows_to_rank",
                          "rows_used",
                          "pivot_rows",
                          "prime",
                          "prime_random",
                          "monte_carlo_rank",
                          "monte_carlo_error",
                          "margin",
                          "on_kink",
                          "pattern_certified",
                          "numerical_rank",
                          "smallest_singular_values",
                          "numerical_note"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["lower"], fd.lower);
  EXPECT_EQ(j["status"], fd.certified() ? "certified" : "bounds");
  EXPECT_EQ(j["functional_dimension"].is_null(), !fd.certified());
  EXPECT_EQ(j["prime"], fd.prime);
  EXPECT_TRUE(j["prime_random"]);
  EXPECT_EQ(j["monte_carlo_rank"], fd.lower);
  EXPECT_EQ(j["monte_carlo_error"], fd.certified() ? 0.0 : *fd.monte_carlo_error);
  FunctionalDimensionOptions given;
  given.prime = default_prime;
  const auto fixed =
      nlohmann::json::parse(to_json(functional_dimension(Model(net), theta, X, given)));
  EXPECT_EQ(fixed["prime"], default_prime);
  EXPECT_FALSE(fixed["prime_random"]);
  EXPECT_TRUE(fixed["monte_carlo_rank"].is_null());
  EXPECT_TRUE(fixed["monte_carlo_error"].is_null());
  EXPECT_EQ(fixed["lower"], fd.lower);

  FunctionalDimensionOptions two;
  two.prime = 2;
  EXPECT_TRUE(contains(error_of<std::invalid_argument>(
                           [&] { (void)functional_dimension(Model(net), theta, X, two); }),
                       "odd"));
  const Eigen::MatrixXd wrong = Eigen::MatrixXd::Zero(2, 4);
  EXPECT_TRUE(
      contains(error_of<FormatError>([&] { (void)functional_dimension(Model(net), theta, wrong); }),
               "4 columns"));
  // Duplicate samples do not add rows to the bound.
  Eigen::MatrixXd twice(40, 3);
  twice << X, X;
  const FunctionalDimension fd2 = functional_dimension(Model(net), theta, twice);
  EXPECT_EQ(fd2.distinct_samples, 20);
  EXPECT_EQ(fd2.upper_rows, 40);
  EXPECT_EQ(fd2.lower, fd.lower);
}

}  // namespace
}  // namespace pathlift
