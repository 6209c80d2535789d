// The conservation laws of gradient flow (conservation.hpp, docs/dynamics.md), against:
// - the definition on DAGs with one parameter per edge: each hidden node's sum of squared
//   incoming weights minus outgoing ones, read from the edges;
// - the rank theorem: as many laws as d - rank(B), rank(B) certified from the enumerated skeleton
//   (not from the symmetries), on random DAGs with shared parameters and fixed edges;
// - Noether: along any direction v in the row space of dPhi (v = dPhi^T w, the gradient of the
//   loss <w, Phi>) or along the gradient of a path-norm, each law's derivative is 0;
// - the unrolled DAG: a layer graph's laws, never unrolled, are its unrolled DAG's.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "pathlift/builtins.hpp"
#include "pathlift/certificate.hpp"
#include "pathlift/conservation.hpp"
#include "pathlift/error.hpp"
#include "pathlift/layers.hpp"
#include "pathlift/lifting.hpp"
#include "pathlift/model.hpp"
#include "pathlift/path_free.hpp"
#include "pathlift/symmetry.hpp"
#include "reference.hpp"
#include "src/core/random.hpp"
#include "src/layers/param_layout.hpp"
#include "support.hpp"
#include "tests/layers_builder.hpp"
#include "tests/random_layer_graph.hpp"

namespace pathlift {
namespace {

using testing::contains;
using testing::error_of;

/// Each law's directional derivative along v, (Q(theta + t v) - Q(theta - t v)) / 2t (exact for
/// a quadratic, up to rounding), against sum_k |theta_k v_k| (what a law missing a parameter,
/// or counting one with the wrong sign, would be off by).
void expect_conserved_along(const Model& model, const std::vector<double>& theta,
                            const std::vector<double>& v, const std::string& what) {
  double norm_theta = 0;
  double norm_v = 0;
  double scale = 0;
  for (std::size_t k = 0; k < theta.size(); ++k) {
    norm_theta = std::max(norm_theta, std::fabs(theta[k]));
    norm_v = std::max(norm_v, std::fabs(v[k]));
    scale += std::fabs(theta[k] * v[k]);
  }
  if (norm_v == 0) {
    return;
  }
  const double t = 1e-3 * norm_theta / norm_v;
  std::vector<double> plus(theta);
  std::vector<double> minus(theta);
  for (std::size_t k = 0; k < theta.size(); ++k) {
    plus[k] += t * v[k];
    minus[k] -= t * v[k];
  }
  const ConservationLaws a = conservation_laws(model, plus);
  const ConservationLaws b = conservation_laws(model, minus);
  ASSERT_EQ(a.values.size(), b.values.size());
  for (std::size_t i = 0; i < a.values.size(); ++i) {
    EXPECT_LE(std::fabs(a.values[i] - b.values[i]) / (2 * t), 1e-9 * scale)
        << what << ": " << a.descriptions[i];
  }
}

/// dPhi(theta)^T w for a random w.
std::vector<double> row_space_direction(const Network& net, const std::vector<double>& theta,
                                        std::uint64_t seed) {
  const CsrMatrix<double> j = jacobian<double>(net, theta);
  const std::vector<double> w = normal_weights(j.rows(), seed);
  std::vector<double> v(static_cast<std::size_t>(j.cols()), 0.0);
  const auto& offsets = j.pattern.offsets();
  const auto& cols = j.pattern.indices();
  for (Index p = 0; p < j.rows(); ++p) {
    for (auto i = offsets[static_cast<std::size_t>(p)];
         i < offsets[static_cast<std::size_t>(p) + 1]; ++i) {
      v[static_cast<std::size_t>(cols[static_cast<std::size_t>(i)])] +=
          w[static_cast<std::size_t>(p)] * j.values[static_cast<std::size_t>(i)];
    }
  }
  return v;
}

/// rank(B) certified by elimination of the enumerated skeleton (not by the symmetries);
/// NetworkError when a parameter is twice on a path.
RankCertificate skeleton_rank(const Network& net) {
  RankOptions o;
  o.method = RankMethod::skeleton;
  return certify_rank(net, o);
}

/// A copy of `net` whose edges carry parameters from a random map: about one edge in six
/// fixed, the others sharing d < edges parameters (some of which may carry no edge).
Network with_shared_parameters(const Network& net, std::uint64_t seed) {
  return testing::with_random_parameters(
      net, {.rng_seed = seed, .fixed_one_in = 6, .d_num = 3, .d_den = 4});
}

TEST(Conservation, EachHiddenNodeSquaresInMinusOut) {
  const Network net = feed_forward(3, {4, 5}, 2);
  const std::vector<double> theta = normal_weights(net.num_params(), 7);
  const ConservationLaws laws = conservation_laws(Model(net), theta);
  ASSERT_EQ(laws.independent, net.num_hidden());
  ASSERT_EQ(laws.classes, net.num_hidden());
  EXPECT_EQ(laws.unused, 0);
  std::map<std::string, double> expected;
  for (const NodeId v : net.hidden()) {
    double q = 0;
    for (const EdgeId e : net.in_edges(v)) {
      q += theta[static_cast<std::size_t>(e)] * theta[static_cast<std::size_t>(e)];
    }
    for (const EdgeId e : net.out_edges(v)) {
      q -= theta[static_cast<std::size_t>(e)] * theta[static_cast<std::size_t>(e)];
    }
    expected["node " + net.node_name(v)] = q;
  }
  for (std::size_t i = 0; i < laws.values.size(); ++i) {
    ASSERT_TRUE(expected.count(laws.descriptions[i])) << laws.descriptions[i];
    EXPECT_NEAR(laws.values[i], expected[laws.descriptions[i]], 1e-12) << laws.descriptions[i];
    EXPECT_GE(laws.squares[i], std::fabs(laws.values[i]));
  }
}

TEST(Conservation, AsManyLawsAsDMinusTheCertifiedRankOnRandomDags) {
  Index shared = 0;
  Index refused = 0;
  for (std::uint64_t seed = 0; seed < 150; ++seed) {
    const Network plain = testing::small_random_dag(seed).net;
    for (const Network& net : {plain, with_shared_parameters(plain, seed)}) {
      const Model model(net);
      const std::vector<double> theta = normal_weights(net.num_params(), seed + 1);
      if (parameter_classes(net).constraints > 0) {
        EXPECT_TRUE(contains(
            error_of<std::invalid_argument>([&] { (void)conservation_laws(model, theta); }),
            "constraints couple the rescaling classes"));
        ++refused;
        continue;
      }
      const ConservationLaws laws = conservation_laws(model, theta);
      EXPECT_EQ(laws.values.size(), static_cast<std::size_t>(laws.independent));
      try {
        const RankCertificate rank_b = skeleton_rank(net);
        ASSERT_TRUE(rank_b.certified()) << "seed " << seed;
        // No zero in theta: rank(dPhi) = rank(B).
        EXPECT_EQ(laws.independent, net.num_params() - *rank_b.rank()) << "seed " << seed;
        shared += net.one_parameter_per_edge() ? 0 : 1;
      } catch (const NetworkError&) {
        // a parameter twice on a path: B is not a 0/1 pattern (dPhi is, below)
      }
      expect_conserved_along(model, theta, row_space_direction(net, theta, seed),
                             "seed " + std::to_string(seed));
    }
  }
  EXPECT_GT(shared, 20);  // the sweep reaches shared parameters with independent classes
  EXPECT_GT(refused, 0);  // and coupled ones
}

TEST(Conservation, AParameterNoEdgeCarriesIsALawOfItsOwn) {
  NetworkSpec s;
  s.node_names = {"x", "a", "y"};
  s.edges = {{0, 1}, {1, 2}};
  s.edge_params = {0, 2};
  s.fixed_weights = {0, 0};
  s.num_params = 3;
  const Network net(std::move(s));
  const std::vector<double> theta{2.0, -5.0, 3.0};
  const ConservationLaws laws = conservation_laws(Model(net), theta);
  ASSERT_EQ(laws.values.size(), 2u);
  EXPECT_EQ(laws.classes, 1);
  EXPECT_EQ(laws.unused, 1);
  EXPECT_EQ(laws.descriptions[0], "node a");
  EXPECT_EQ(laws.values[0], 4.0 - 9.0);
  EXPECT_EQ(laws.squares[0], 4.0 + 9.0);
  EXPECT_EQ(laws.descriptions[1], "parameter 1, which no edge carries");
  EXPECT_EQ(laws.values[1], 25.0);
  const RankCertificate rank_b = skeleton_rank(net);
  EXPECT_EQ(laws.independent, net.num_params() - *rank_b.rank());
}

TEST(Conservation, ALayerGraphsLawsAreItsUnrolledDagsWithoutUnrolling) {
  Index compared = 0;
  for (std::uint64_t seed = 0; seed < 60; ++seed) {
    const LayerGraph graph = testing::random_layer_graph(seed);
    const Model layers(graph);
    const Model dag(unroll(graph));
    const std::vector<double> theta = normal_weights(graph.num_params, seed);
    ConservationLaws a;
    try {
      a = conservation_laws(layers, theta);
    } catch (const std::invalid_argument&) {
      EXPECT_THROW((void)conservation_laws(dag, theta), std::invalid_argument) << "seed " << seed;
      continue;
    }
    EXPECT_FALSE(layers.is_unrolled() && !a.unrolled) << "seed " << seed;  // never unrolled
    const ConservationLaws b = conservation_laws(dag, theta);
    ASSERT_EQ(a.independent, b.independent) << "seed " << seed;
    EXPECT_EQ(a.unused, b.unused) << "seed " << seed;
    std::vector<double> va = a.values;
    std::vector<double> vb = b.values;
    std::sort(va.begin(), va.end());
    std::sort(vb.begin(), vb.end());
    for (std::size_t i = 0; i < va.size(); ++i) {
      EXPECT_NEAR(va[i], vb[i], 1e-12 * (1 + std::fabs(vb[i]))) << "seed " << seed;
    }
    // Noether along the gradient of the path-norm, a function of Phi (layer DP, no unrolling).
    if (std::none_of(theta.begin(), theta.end(), [](double x) { return x == 0; })) {
      expect_conserved_along(layers, theta, path_norm_gradient(layers, theta, 2.0),
                             "seed " + std::to_string(seed));
    }
    ++compared;
  }
  EXPECT_GT(compared, 40);
}

TEST(Conservation, ALayerGraphsClassesAreNamedByChannelAndLayer) {
  testing::GraphBuilder b({2, 6, 6});
  const Index conv1 = b.conv("conv1", 0, 3, {3, 3}, {}, {1, 1});
  const Index relu1 = b.act("relu1", b.batch_norm("bn1", conv1));
  const Index conv2 = b.conv("conv2", relu1, 2, {1, 1}, {}, {}, {}, 1, false);
  const Index flat = b.op(LayerKind::flatten, "flat", {b.act("relu2", conv2)});
  const Index fc1 = b.act("relu3", b.linear("fc1", flat, 4));
  const LayerGraph g = b.graph({b.linear("fc2", fc1, 2)});
  const std::vector<double> theta = normal_weights(g.num_params, 3);
  const ConservationLaws laws = conservation_laws(Model(g), theta);
  for (const std::string name :
       {"channel 2 of 'conv1' (out: 'bn1')", "channel 2 of 'bn1' (out: 'conv2')",
        "channel 1 of 'conv2' (out: 'fc1')", "unit 3 of 'fc1' (out: 'fc2')"}) {
    EXPECT_NE(std::find(laws.descriptions.begin(), laws.descriptions.end(), name),
              laws.descriptions.end())
        << name;
  }
  EXPECT_EQ(laws.independent, 3 + 3 + 2 + 4);

  // A residual stream is one class per channel, entered by the stem's batch norm and each
  // block's last one.
  const LayerGraph resnet = testing::resnet18(16, 3, 2);
  const Model model(resnet);
  const ConservationLaws r = conservation_laws(model, normal_weights(resnet.num_params, 4));
  EXPECT_EQ(r.independent, rescaling_symmetry_dimension(model).h_sym);
  EXPECT_FALSE(model.is_unrolled());
  const std::string stream =
      "channel 1 of 'bn1', 'layer1.0.bn2' and 'layer1.1.bn2' (out: 'layer1.0.conv1', "
      "'layer1.1.conv1', 'layer2.0.conv1' and 1 more)";
  EXPECT_NE(std::find(r.descriptions.begin(), r.descriptions.end(), stream), r.descriptions.end());
}

TEST(Conservation, Refusals) {
  const Network net = feed_forward(2, {3}, 1);
  const Model model(net);
  std::vector<double> theta = normal_weights(net.num_params(), 1);
  EXPECT_TRUE(contains(error_of<std::invalid_argument>(
                           [&] { (void)conservation_laws(model, std::span(theta).first(4)); }),
                       "theta has 4 entries"));
  theta[5] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(contains(
      error_of<std::invalid_argument>([&] { (void)conservation_laws(model, theta); }), "theta[5]"));
  theta[5] = 1e160;  // its square overflows: named, with its edge
  const std::string m = error_of<RangeError>([&] { (void)conservation_laws(model, theta); });
  EXPECT_TRUE(contains(m, "theta[5] = 1e+160")) << m;
  EXPECT_TRUE(contains(m, net.param_label(5))) << m;
}

TEST(Conservation, TheJsonFormHoldsEveryLaw) {
  const Network net = feed_forward(2, {3}, 1);
  const std::vector<double> theta = normal_weights(net.num_params(), 2);
  const ConservationLaws laws = conservation_laws(Model(net), theta);
  const auto j = nlohmann::json::parse(to_json(laws));
  EXPECT_EQ(j["independent"], 3);
  EXPECT_EQ(j["classes"], 3);
  EXPECT_EQ(j["unused"], 0);
  EXPECT_EQ(j["unrolled"], false);
  ASSERT_EQ(j["laws"].size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(j["laws"][i]["description"], laws.descriptions[i]);
    EXPECT_EQ(j["laws"][i]["value"].get<double>(), laws.values[i]);
    EXPECT_EQ(j["laws"][i]["squares"].get<double>(), laws.squares[i]);
  }
}

// param_layout (src/layers/param_layout.hpp), which places each weight for the conservation laws
// and the symmetries, against PyTorch's weight layouts written out as nested loops: Linear
// (out, in), Conv2d (out, in / groups, kh, kw), ConvTranspose2d (in, out / groups, kh, kw),
// BatchNorm (C); the weight at each loop index is that of output channel co, input channel ci.
TEST(Conservation, ParamLayoutIsPyTorchs) {
  Layer conv;
  conv.kind = LayerKind::conv;
  conv.out_channels = 6;
  conv.groups = 2;
  conv.kernel = {2, 3};
  Layer transposed = conv;
  transposed.kind = LayerKind::conv_transpose;
  const std::vector<Index> input = {4, 5, 5};
  const Index taps = 6;
  for (const Layer& ly : {conv, transposed}) {
    const auto p = detail::param_layout(ly, input);
    ASSERT_TRUE(p.has_value());
    const bool t = ly.kind == LayerKind::conv_transpose;
    EXPECT_EQ(p->weight_shape,
              (t ? std::vector<Index>{4, 3, 2, 3} : std::vector<Index>{6, 2, 2, 3}));
    EXPECT_EQ(p->weights, 6 * 2 * taps);
    EXPECT_EQ(p->out, 6);
    Index index = 0;
    for (Index a = 0; a < p->weight_shape[0]; ++a) {
      for (Index b = 0; b < p->weight_shape[1]; ++b) {
        for (Index tap = 0; tap < taps; ++tap, ++index) {
          // conv: a = co, b = ci within co's group (2 of 4 inputs, 3 of 6 outputs per group);
          // transposed: a = ci, b = co within ci's group.
          const Index co = t ? (a / 2) * 3 + b : a;
          const Index ci = t ? a : (a / 3) * 2 + b;
          EXPECT_EQ(p->out_channel(index), co) << (t ? "transposed " : "conv ") << index;
          EXPECT_EQ(p->weight(co, ci, tap), index) << (t ? "transposed " : "conv ") << index;
        }
      }
    }
  }
  Layer linear;
  linear.kind = LayerKind::linear;
  linear.out_features = 3;
  const auto l = detail::param_layout(linear, {7});
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->weights, 21);
  EXPECT_EQ(l->weight(2, 5, 0), 2 * 7 + 5);
  EXPECT_EQ(l->out_channel(2 * 7 + 5), 2);
  Layer bn;
  bn.kind = LayerKind::batch_norm;
  const auto n = detail::param_layout(bn, {4, 3, 3});
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(n->weights, 4);
  EXPECT_EQ(n->out_channel(3), 3);
  EXPECT_EQ(n->weight(3, 3, 0), 3);
  Layer relu;
  relu.kind = LayerKind::activation;
  EXPECT_FALSE(detail::param_layout(relu, {4}).has_value());
}

}  // namespace
}  // namespace pathlift
