// Path-norms by dynamic programming (issue 8, item 1): against explicit enumeration (brute-force
// paths of reference.hpp, sums in long double) on 1,200 random DAGs and feed-forward shapes for
// s in {0, 0.5, 1, 2, 3}, with zero weights, with weights far outside double's range, and
// against the closed form of constant-weight feed-forward networks whose L1 norm is 10^443.

#include "pathlift/norms.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "pathlift/builtins.hpp"
#include "pathlift/counting.hpp"
#include "pathlift/paths.hpp"
#include "reference.hpp"
#include "src/core/random.hpp"
#include "support.hpp"

namespace pathlift {
namespace {

constexpr double k_tol = 1e-10;
const std::vector<double> k_exponents{0.0, 0.5, 1.0, 2.0, 3.0};

/// Reference sums of |Phi_p|^s over all paths, per output and per input, in long double
/// (range 1e4932: the wild-weight tests stay inside it).
struct RefNorm {
  long double total = 0;
  std::vector<long double> per_output, per_input;
};

RefNorm reference_norm(const Network& net, const std::vector<testing::RefPath>& paths,
                       const std::vector<double>& theta, double s) {
  RefNorm r;
  r.per_output.assign(net.outputs().size(), 0);
  r.per_input.assign(net.inputs().size(), 0);
  for (const auto& p : paths) {
    long double phi = 1;
    for (EdgeId e : p.edges) {
      phi *= static_cast<long double>(theta[static_cast<std::size_t>(e)]);
    }
    const long double term = s == 0 ? 1.0L : std::pow(std::fabs(phi), static_cast<long double>(s));
    r.total += term;
    for (std::size_t j = 0; j < net.outputs().size(); ++j) {
      if (net.outputs()[j] == p.end) {
        r.per_output[j] += term;
      }
    }
    for (std::size_t i = 0; i < net.inputs().size(); ++i) {
      if (net.inputs()[i] == p.start) {
        r.per_input[i] += term;
      }
    }
  }
  return r;
}

/// log10 of the norm from a reference sum (sum^(1/s); s = 0: the sum).
double ref_log10_norm(long double sum, double s) {
  if (sum == 0) {
    return -std::numeric_limits<double>::infinity();
  }
  const auto l = static_cast<double>(std::log10(sum));
  return s == 0 ? l : l / s;
}

/// x and the reference agree to k_tol relative (compared through log10 when beyond double).
void expect_scaled_near(const ScaledReal& x, long double ref_sum, double s,
                        const std::string& what) {
  const double want = ref_log10_norm(ref_sum, s);
  if (std::isinf(want)) {
    EXPECT_TRUE(x.is_zero()) << what << ": expected 0, got 10^" << x.log10();
    return;
  }
  ASSERT_FALSE(x.is_zero()) << what << ": expected 10^" << want;
  // Relative error r in the value is an absolute error r / ln 10 in log10.
  EXPECT_NEAR(x.log10(), want, k_tol / std::log(10.0)) << what;
  if (std::fabs(want) < 300) {
    const double v = std::pow(10.0, want);
    EXPECT_TRUE(testing::close(x.value(), v, k_tol)) << what << ": " << x.value() << " vs " << v;
  }
}

void expect_norms_match(const Network& net, const std::vector<double>& theta,
                        const std::string& label) {
  const auto paths = testing::ref_paths(net);
  for (double s : k_exponents) {
    const RefNorm ref = reference_norm(net, paths, theta, s);
    const PathNorm n = path_norm(net, theta, s, PathNormDetail::inputs_and_outputs);
    const std::string what = label + " s=" + std::to_string(s);
    EXPECT_EQ(n.s, s);
    expect_scaled_near(n.norm, ref.total, s, what + " norm");
    expect_scaled_near(n.sum, ref.total, 0.0, what + " sum");
    ASSERT_EQ(n.per_output.size(), net.outputs().size());
    ASSERT_EQ(n.per_input.size(), net.inputs().size());
    for (std::size_t j = 0; j < n.per_output.size(); ++j) {
      expect_scaled_near(n.per_output[j], ref.per_output[j], s,
                         what + " output " + net.node_name(net.outputs()[j]));
    }
    for (std::size_t i = 0; i < n.per_input.size(); ++i) {
      expect_scaled_near(n.per_input[i], ref.per_input[i], s,
                         what + " input " + net.node_name(net.inputs()[i]));
    }
  }
}

std::vector<double> normal(Index d, std::uint64_t seed) {
  return normal_weights(d, seed);
}

/// Weights 10^(a z) * N(0,1): a = 0 gives plain normals; a = 150 gives |theta| up to ~1e450,
/// far outside double's range once multiplied along a path.
std::vector<double> wild_weights(Index d, std::uint64_t seed, double spread) {
  detail::SplitMix64 rng(seed);
  std::vector<double> w(static_cast<std::size_t>(d));
  for (double& x : w) {
    const double z = 2 * rng.uniform() - 1;
    x = rng.normal() * std::pow(10.0, spread * z);
  }
  return w;
}

// ---------------------------------------------------------------------------------------------

TEST(PathNorm, Fig1ByHand) {
  // Phi = (t0 t4, t1 t5, t2 t4, t3 t5, t6): every path-norm by hand.
  const Network net = fig1();
  const std::vector<double> t{1, -2, 3, 0.5, 2, -1, 4};
  const double phi[] = {2, 2, 6, -0.5, 4};
  double l1 = 0;
  double l2 = 0;
  for (double p : phi) {
    l1 += std::fabs(p);
    l2 += p * p;
  }
  EXPECT_DOUBLE_EQ(path_norm(net, t, 1).norm.value(), l1);
  EXPECT_DOUBLE_EQ(path_norm(net, t, 2).norm.value(), std::sqrt(l2));
  EXPECT_DOUBLE_EQ(path_norm(net, t, 2).sum.value(), l2);
  EXPECT_DOUBLE_EQ(path_norm(net, t, 0).norm.value(), 5);
}

TEST(PathNorm, RandomDagsAgainstEnumeration) {
  // 1,200 small random DAGs (every feature of the model: parallel edges, designated outputs
  // feeding other nodes, bias nodes), normal weights, some with zeros.
  const std::uint64_t checked = testing::until_first_failure(1200, [](std::uint64_t seed) {
    const auto [net, name] = testing::small_random_dag(seed);
    std::vector<double> theta = normal(net.num_edges(), seed + 7);
    if (seed % 3 == 1) {
      theta[seed % theta.size()] = 0;  // one zero weight
    }
    if (seed % 5 == 2) {
      // Every incoming weight of one non-input node is 0.
      for (NodeId v = 0; v < net.num_nodes(); ++v) {
        if (!net.is_input(v)) {
          for (EdgeId e : net.in_edges(v)) {
            theta[static_cast<std::size_t>(e)] = 0;
          }
          break;
        }
      }
    }
    expect_norms_match(net, theta, name);
  });
  EXPECT_EQ(checked, 1200U);
}

TEST(PathNorm, WildWeightsAgainstLongDouble) {
  // Path products up to ~1e1000 and down to ~1e-1000: node exponents differ within a layer,
  // w(theta) over- and underflows in double; the result must match long double enumeration.
  testing::until_first_failure(200, [](std::uint64_t seed) {
    const Network net = random_dag(3 + static_cast<Index>(seed % 6), 0.6, seed + 5000);
    // Spread 200: theta^2 overflows; long double still holds |Phi|^3 (< 1e4200).
    const auto theta = wild_weights(net.num_edges(), seed, seed % 3 == 0 ? 200.0 : 60.0);
    expect_norms_match(net, theta, "wild random-dag seed " + std::to_string(seed));
  });
}

TEST(PathNorm, FeedForwardShapes) {
  for (const char* name : {"ff:3,4,2", "ff:2,3,3,2", "ff-nobias:2,4,3,1", "ff:1,1,1",
                           "ff:4,2,3,2,3", "sketch-h0", "sketch-h1", "fig1"}) {
    const Network net = builtin_network(name);
    expect_norms_match(net, normal(net.num_edges(), 11), name);
    expect_norms_match(net, wild_weights(net.num_edges(), 12, 100.0), std::string(name) + " wild");
  }
}

TEST(PathNorm, CountAtZeroIsP) {
  for (std::uint64_t seed = 0; seed < 50; ++seed) {
    const Network net = random_dag(8, 0.6, seed);
    std::vector<double> theta(static_cast<std::size_t>(net.num_edges()), 0.0);
    const PathNorm n = path_norm(net, theta, 0);  // zero weights still count at s = 0
    EXPECT_EQ(n.norm.value(), static_cast<double>(count_paths_total(net).value()));
    const PathNorm one = path_norm(net, theta, 1);
    EXPECT_TRUE(one.norm.is_zero());
    EXPECT_EQ(one.norm.value(), 0.0);
    EXPECT_TRUE(one.norm.fits_double());
  }
}

TEST(PathNorm, TotalEqualsSumOverInputsAndOutputs) {
  const Network net = builtin_network("ff:5,7,6,3");
  const auto theta = normal(net.num_edges(), 3);
  for (double s : {0.25, 1.0, 1.5, 2.0, 4.0}) {
    const PathNorm n = path_norm(net, theta, s, PathNormDetail::inputs_and_outputs);
    double by_out = 0;
    double by_in = 0;
    for (const auto& x : n.per_output) {
      by_out += std::pow(x.value(), s);
    }
    for (const auto& x : n.per_input) {
      by_in += std::pow(x.value(), s);
    }
    EXPECT_TRUE(testing::close(by_out, n.sum.value(), 1e-12));
    EXPECT_TRUE(testing::close(by_in, n.sum.value(), 1e-12));
    // Default detail: one forward pass, no per-input norms.
    EXPECT_TRUE(path_norm(net, theta, s).per_input.empty());
    EXPECT_EQ(path_norm(net, theta, s).norm.value(), n.norm.value());
  }
}

// ---------------------------------------------------------------------------------------------
// Beyond double's range: closed forms on constant-weight feed-forward networks

/// ff-nobias r, w x L, q with every weight c: every path has L + 1 edges and there are
/// r w^L q of them, so sum_p |Phi_p|^s = r w^L q |c|^(s (L + 1)).
double closed_form_log10_sum(double r, double w, int layers, double q, double c, double s) {
  return std::log10(r) + layers * std::log10(w) + std::log10(q) +
         s * (layers + 1) * std::log10(std::fabs(c));
}

TEST(PathNorm, ConstantWeightsBeyondDouble) {
  const Index r = 2;
  const Index w = 10;
  const int layers = 300;
  const Index q = 1;
  const Network net = feed_forward(r, std::vector<Index>(layers, w), q, false);
  for (double c : {3.0, -3.0, 1e-3}) {
    const std::vector<double> theta(static_cast<std::size_t>(net.num_edges()), c);
    for (double s : {0.5, 1.0, 2.0, 3.0}) {
      const PathNorm n = path_norm(net, theta, s, PathNormDetail::inputs_and_outputs);
      const double want = closed_form_log10_sum(r, w, layers, q, c, s);
      EXPECT_NEAR(n.sum.log10(), want, 1e-10) << "c = " << c << " s = " << s;
      EXPECT_NEAR(n.norm.log10(), want / s, 1e-10) << "c = " << c << " s = " << s;
      EXPECT_EQ(n.norm.fits_double(), std::fabs(want / s) < 307) << want / s;
      if (c == 3.0 && s == 1.0) {
        EXPECT_GT(n.norm.log10(), 400);  // the 10^400 (here 10^443.7)
        EXPECT_EQ(n.norm.value(), std::numeric_limits<double>::infinity());
      }
      if (c == 1e-3 && s == 1.0) {
        EXPECT_LT(n.norm.log10(), -600);
        EXPECT_EQ(n.norm.value(), 0.0);  // far below double's range, yet log10 is right
      }
      // Per input: w^L q paths each; per output: r w^L paths.
      const double per_in =
          (layers * std::log10(w) + std::log10(q) + s * (layers + 1) * std::log10(std::fabs(c))) /
          s;
      for (const auto& x : n.per_input) {
        EXPECT_NEAR(x.log10(), per_in, 1e-10);
      }
      ASSERT_EQ(n.per_output.size(), 1U);
      EXPECT_NEAR(n.per_output[0].log10(), want / s, 1e-10);
    }
  }
}

TEST(PathNorm, LayerScalesBeyondDouble) {
  // Each Linear layer has its own constant weight, from 1e-250 to 1e250: weights whose square
  // over- or underflows, nodes renormalised in the middle of the network. Closed form: the
  // sum is P prod_l |c_l|^s.
  const std::vector<double> scales{1e200, 1e-250, 3e150, 1e250, 2.5, 1e-300, 7e-10, 1e180};
  const std::vector<Index> widths{3, 4, 2, 5, 3, 2, 3};
  const Network net = feed_forward(2, widths, 2, false);
  std::vector<double> theta;
  std::vector<Index> sizes{2};
  sizes.insert(sizes.end(), widths.begin(), widths.end());
  sizes.push_back(2);
  double log_p = 0;
  for (std::size_t l = 0; l + 1 < sizes.size(); ++l) {
    theta.insert(theta.end(), static_cast<std::size_t>(sizes[l] * sizes[l + 1]),
                 l % 2 == 0 ? scales[l] : -scales[l]);
  }
  for (Index sz : sizes) {
    log_p += std::log10(static_cast<double>(sz));
  }
  for (double s : {0.5, 1.0, 2.0, 3.0}) {
    double want = log_p;
    for (double c : scales) {
      want += s * std::log10(c);
    }
    const PathNorm n = path_norm(net, theta, s);
    EXPECT_NEAR(n.sum.log10(), want, 1e-10) << "s = " << s;
  }
}

// ---------------------------------------------------------------------------------------------
// ScaledReal

TEST(ScaledReal, ValueLog10Root) {
  const ScaledReal x{0.75, 4000};  // 0.75 * 2^4000
  EXPECT_EQ(x.value(), std::numeric_limits<double>::infinity());
  EXPECT_FALSE(x.fits_double());
  EXPECT_NEAR(x.log10(), std::log10(0.75) + 4000 * std::log10(2.0), 1e-12);
  const ScaledReal r = scaled_root(x, 2);
  EXPECT_NEAR(r.log10(), x.log10() / 2, 1e-12);
  const ScaledReal odd = scaled_root(ScaledReal{0.75, -4001}, 2);
  EXPECT_NEAR(odd.log10(), (std::log10(0.75) - 4001 * std::log10(2.0)) / 2, 1e-12);
  EXPECT_NEAR(scaled_root(x, 3).log10(), x.log10() / 3, 1e-12);
  EXPECT_NEAR(scaled_root(x, 0.5).log10(), x.log10() * 2, 1e-10);
  EXPECT_EQ(ScaledReal::from_double(6.0).value(), 6.0);
  EXPECT_TRUE(ScaledReal::from_double(0.0).is_zero());
  EXPECT_EQ(ScaledReal::from_double(0.0).log10(), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(scaled_root(ScaledReal::from_double(27.0), 3).value(), 3.0);
  // A tiny s sends the root beyond any scale without overflowing the exponent.
  EXPECT_EQ(scaled_root(ScaledReal::from_double(5.0), 1e-300).value(),
            std::numeric_limits<double>::infinity());
  EXPECT_EQ(scaled_root(ScaledReal::from_double(0.2), 1e-300).value(), 0.0);
  // Small s: 1^(1/s) = 1, 1.01^(1/s) by logs.
  EXPECT_NEAR(scaled_root(ScaledReal::from_double(1.0), 0.0005).value(), 1.0, 1e-12);
  EXPECT_NEAR(scaled_root(ScaledReal::from_double(1.01), 0.001).log10(), 1000 * std::log10(1.01),
              1e-9);
  EXPECT_NEAR(scaled_root(ScaledReal{0.7, -5000}, 0.01).log10(),
              100 * (std::log10(0.7) - 5000 * std::log10(2.0)), 1e-8);
}

// ---------------------------------------------------------------------------------------------
// Errors

TEST(PathNorm, Errors) {
  const Network net = fig1();
  std::vector<double> theta(7, 1.0);
  try {
    (void)path_norm(net, std::vector<double>(6, 1.0), 1);
    ADD_FAILURE() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find('6'), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find('7'), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)path_norm(net, theta, -1), std::invalid_argument);
  EXPECT_THROW((void)path_norm(net, theta, std::nan("")), std::invalid_argument);
  theta[4] = std::nan("");
  for (double s : {0.0, 0.5, 1.0, 2.0}) {
    try {
      (void)path_norm(net, theta, s, PathNormDetail::inputs_and_outputs);
      ADD_FAILURE() << "no throw for s = " << s;
    } catch (const std::invalid_argument& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("theta[4]"), std::string::npos) << msg;
      EXPECT_NE(msg.find("d -> h"), std::string::npos) << msg;
    }
  }
  theta[4] = std::numeric_limits<double>::infinity();
  EXPECT_THROW((void)path_norm(net, theta, 1), std::invalid_argument);
}

}  // namespace
}  // namespace pathlift
