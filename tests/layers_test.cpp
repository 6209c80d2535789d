// The layer graph (layers.hpp): shapes and their validation, the unrolled DAG against a naive
// evaluation of the layers (PyTorch's definitions, tests/layers_reference.hpp), its structure
// (pending sums, node names, edge order, MLP == feed_forward), unrolled_size against the actual
// counts, the JSON form.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <numeric>
#include <tuple>

#include "pathlift/builtins.hpp"
#include "pathlift/error.hpp"
#include "pathlift/forward.hpp"
#include "pathlift/io.hpp"
#include "pathlift/layers.hpp"
#include "src/layers/layers_unroll.hpp"
#include "support.hpp"
#include "tests/layer_zoo.hpp"
#include "tests/layers_builder.hpp"
#include "tests/layers_reference.hpp"
#include "tests/random_layer_graph.hpp"

namespace pathlift {
namespace {

using testing::contains;
using testing::error_of;
using testing::expect_same_network;
using testing::GraphBuilder;
using testing::layer_zoo;
using testing::random_layer_graph;

/// Unrolls g and compares its outputs with the naive layer evaluation on a few random samples
/// (theta standard normal), with pathlift::forward too; checks unrolled_size against the
/// network. Returns the network.
Network check_against_reference(const LayerGraph& g, std::uint64_t seed = 1) {
  const Network net = unroll(g);
  const UnrolledSize size = unrolled_size(g);
  EXPECT_EQ(size.nodes, net.num_nodes());
  EXPECT_EQ(size.edges, net.num_edges());
  EXPECT_EQ(net.num_params(), g.num_params);
  const std::vector<double> theta = normal_weights(g.num_params, seed);
  const auto r = static_cast<Index>(net.data_inputs().size());
  Index entries = 1;
  for (const Index x : g.input_shape) {
    entries *= x;
  }
  EXPECT_EQ(r, entries);
  const int samples = 3;
  Eigen::MatrixXd X(samples, r);
  const std::vector<double> xs = normal_weights(samples * r, seed + 100);
  for (int i = 0; i < samples; ++i) {
    for (Index c = 0; c < r; ++c) {
      X(i, c) = xs[static_cast<std::size_t>(i * r + c)];
    }
  }
  const ForwardResult fw = forward(net, theta, X);
  for (int i = 0; i < samples; ++i) {
    std::vector<double> x(static_cast<std::size_t>(r));
    for (Index c = 0; c < r; ++c) {
      x[static_cast<std::size_t>(c)] = X(i, c);
    }
    const std::vector<double> want = testing::reference_layers(g, theta, x);
    const std::vector<double> got = testing::reference_network(net, theta, x);
    EXPECT_EQ(got.size(), want.size());
    EXPECT_EQ(fw.outputs.cols(), static_cast<Index>(want.size()));
    for (std::size_t j = 0; j < std::min(got.size(), want.size()); ++j) {
      const double tol = 1e-10 * (1.0 + std::abs(want[j]));
      EXPECT_NEAR(got[j], want[j], tol) << "sample " << i << " output " << j;
      EXPECT_NEAR(fw.outputs(i, static_cast<Index>(j)), want[j], tol)
          << "forward(), sample " << i << " output " << j;
    }
  }
  return net;
}

/// The incoming edges of the node named `name`, as (source name, parameter or -1, fixed weight).
struct InEdge {
  std::string src;
  Index param;
  double fixed;
  bool operator==(const InEdge&) const = default;
};
std::vector<InEdge> in_edges(const Network& net, const std::string& name) {
  std::vector<InEdge> out;
  const auto v = net.find_node(name);
  EXPECT_TRUE(v.has_value()) << name;
  if (v) {
    for (const EdgeId e : net.in_edges(*v)) {
      out.push_back({net.node_name(net.source(e)), net.edge_param(e), net.fixed_weight(e)});
    }
  }
  return out;
}

TEST(LayerKind, NamesRoundTrip) {
  // layer_kinds() holds every kind once, in declaration order; each name reads back.
  const std::vector<LayerKind> kinds = layer_kinds();
  ASSERT_EQ(kinds.size(), static_cast<std::size_t>(LayerKind::interpolate) + 1) << "the last kind";
  for (std::size_t k = 0; k < kinds.size(); ++k) {
    EXPECT_EQ(static_cast<std::size_t>(kinds[k]), k);
    EXPECT_EQ(parse_layer_kind(to_string(kinds[k])), kinds[k]);
  }
  const std::string msg = error_of<FormatError>([] { (void)parse_layer_kind("conv2d"); });
  EXPECT_TRUE(contains(msg, "'conv2d'"));
  EXPECT_TRUE(contains(msg, "max_pool"));
}

TEST(LayerKind, EveryKindIsDescribed) {
  for (const LayerKind k : layer_kinds()) {
    EXPECT_GT(describe(k).size(), 10U) << to_string(k);
  }
}

// A layer's fields are those layer_fields() lists for its kind: every other field keeps no
// influence on the unrolled network, whatever its value (the builder refuses ceil_mode on a
// window that has none). The test's own list of Layer's members: a field it does not know fails.
TEST(LayerKind, OnlyTheFieldsOfItsKindAreRead) {
  const auto perturb = [](Layer& ly, const std::string& key) {
    if (key == "out_features") {
      ly.out_features += 3;
    } else if (key == "out_channels") {
      ly.out_channels += 3;
    } else if (key == "groups") {
      ly.groups += 1;
    } else if (key == "kernel" || key == "stride" || key == "padding" || key == "dilation" ||
               key == "output_padding" || key == "output_size" || key == "indices") {
      std::vector<Index>& v = key == "kernel"           ? ly.kernel
                              : key == "stride"         ? ly.stride
                              : key == "padding"        ? ly.padding
                              : key == "dilation"       ? ly.dilation
                              : key == "output_padding" ? ly.output_padding
                              : key == "output_size"    ? ly.output_size
                                                        : ly.indices;
      v = {1, 2};
    } else if (key == "ceil_mode") {
      ly.ceil_mode = !ly.ceil_mode;
    } else if (key == "count_include_pad") {
      ly.count_include_pad = !ly.count_include_pad;
    } else if (key == "k") {
      ly.k += 2;
    } else if (key == "group_size") {
      ly.group_size += 3;
    } else if (key == "descending") {
      ly.descending = !ly.descending;
    } else if (key == "align_corners") {
      ly.align_corners = !ly.align_corners;
    } else if (key == "scales") {
      ly.scales = {0.5, 3.0};
    } else if (key == "axis") {
      ly.axis += 1;
    } else if (key == "factor") {
      ly.factor = -2.5;
    } else if (key == "activation") {
      ly.activation = Activation::leaky_relu(0.25);
    } else if (key == "weight_offset") {
      ly.weight_offset = 1;
    } else if (key == "bias_offset") {
      ly.bias_offset = 2;
    } else {
      return false;
    }
    return true;
  };
  std::vector<LayerGraph> graphs = layer_zoo();
  graphs.erase(graphs.begin() + 7, graphs.begin() + 9);  // the resnet and the wide linear: slow
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    graphs.push_back(random_layer_graph(seed));
  }
  const std::vector<LayerField> fields = layer_fields();
  std::size_t checked = 0;
  for (const LayerGraph& g : graphs) {
    const Network reference = unroll(g);
    for (std::size_t l = 1; l < g.layers.size(); ++l) {
      for (const LayerField& f : fields) {
        if (std::find(f.kinds.begin(), f.kinds.end(), g.layers[l].kind) != f.kinds.end()) {
          continue;
        }
        LayerGraph changed = g;
        ASSERT_TRUE(perturb(changed.layers[l], f.key))
            << "a field the test does not know: " << f.key;
        SCOPED_TRACE(fmt::format("layer '{}' ({}), field {}", g.layers[l].name,
                                 to_string(g.layers[l].kind), f.key));
        const bool window = g.layers[l].kind == LayerKind::conv ||
                            g.layers[l].kind == LayerKind::conv_transpose ||
                            g.layers[l].kind == LayerKind::adaptive_avg_pool;
        if (f.key == "ceil_mode" && changed.layers[l].ceil_mode && window) {
          EXPECT_TRUE(contains(error_of<NetworkError>([&] { (void)unroll(changed); }),
                               "ceil_mode applies to"));
          continue;
        }
        expect_same_network(unroll(changed), reference);
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 1000U);
}

TEST(Layers, MlpIsFeedForward) {
  GraphBuilder b({5});
  Index x = b.act("relu1", b.linear("fc1", 0, 4));
  x = b.act("relu2", b.linear("fc2", x, 3));
  const LayerGraph g = b.graph({b.linear("fc3", x, 2)});
  const Network net = check_against_reference(g);
  const Network ff = feed_forward(5, {4, 3}, 2, true);
  const NetworkSpec a = net.spec();
  const NetworkSpec f = ff.spec();
  EXPECT_EQ(a.edges, f.edges);
  EXPECT_EQ(a.bias, f.bias);
  EXPECT_EQ(a.activations, f.activations);
  EXPECT_EQ(testing::names_of(net, net.outputs()), testing::names_of(ff, ff.outputs()));
  ASSERT_EQ(net.num_params(), ff.num_params());
  for (EdgeId e = 0; e < net.num_edges(); ++e) {
    EXPECT_EQ(net.edge_param(e), e);
  }
  // Names: the layers' (feed_forward's x0, b1, h1_0 are x[0], fc1.bias, relu1[0] here).
  const std::vector<std::string> head(a.node_names.begin(), a.node_names.begin() + 8);
  EXPECT_EQ(head, (std::vector<std::string>{"x[0]", "x[1]", "x[2]", "x[3]", "x[4]", "fc1.bias",
                                            "relu1[0]", "relu1[1]"}));
  EXPECT_EQ(a.node_names.back(), "y1");
  // Without bias: feed_forward(.., false).
  GraphBuilder nb({3});
  const LayerGraph g2 =
      nb.graph({nb.linear("out", nb.act("r", nb.linear("hid", 0, 4, false)), 2, false)});
  EXPECT_EQ(unroll(g2).spec().edges, feed_forward(3, {4}, 2, false).spec().edges);
}

TEST(Layers, ActivationAbsorbsTheConvolution) {
  GraphBuilder b({1, 3, 3});
  const Index c = b.conv("conv", 0, 2, {2, 2});
  const LayerGraph g = b.graph({b.act("relu", c)});
  const Network net = check_against_reference(g);
  // 9 inputs, the bias node, 8 relu nodes, 8 outputs: no identity node for the convolution.
  EXPECT_EQ(net.num_nodes(), 9 + 1 + 8 + 8);
  EXPECT_FALSE(net.find_node("conv[0,0,0]").has_value());
  // relu[1,0,1]: weights (1, 0, kh, kw) = parameters 4..7 from x[0,0..1,1..2], then the bias.
  EXPECT_EQ(in_edges(net, "relu[1,0,1]"), (std::vector<InEdge>{{"x[0,0,1]", 4, 0.0},
                                                               {"x[0,0,2]", 5, 0.0},
                                                               {"x[0,1,1]", 6, 0.0},
                                                               {"x[0,1,2]", 7, 0.0},
                                                               {"conv.bias", 9, 0.0}}));
  // Edge order: all weight edges (by output entry), then all bias edges.
  EXPECT_EQ(net.edge_param(31), 7);
  EXPECT_EQ(net.node_name(net.source(32)), "conv.bias");
  // The relu nodes are outputs' sources: y<j> = relu entry j through a fixed edge 1.
  EXPECT_EQ(in_edges(net, "y5"), (std::vector<InEdge>{{"relu[1,0,1]", kFixedEdge, 1.0}}));
}

TEST(Layers, ResidualBlockKeepsSumsPending) {
  // relu(bn(conv(x)) + skip), the skip a relu of the input.
  GraphBuilder b({2, 3, 3});
  const Index skip = b.act("skip", 0);
  const Index conv = b.conv("conv", skip, 2, {3, 3}, {}, {1, 1}, {}, 1, false);
  const Index bn = b.batch_norm("bn", conv);
  const LayerGraph g = b.graph({b.act("out", b.op(LayerKind::add, "add", {bn, skip}))});
  const Network net = check_against_reference(g);
  // conv entries are identity nodes (bn needs their values); bn + add is one relu node each.
  EXPECT_EQ(net.activation(*net.find_node("conv[1,2,2]")).kind, ActivationKind::identity);
  EXPECT_EQ(in_edges(net, "out[1,2,2]"),
            (std::vector<InEdge>{
                {"conv[1,2,2]", 37, 0.0}, {"bn.bias", 39, 0.0}, {"skip[1,2,2]", kFixedEdge, 1.0}}));
  EXPECT_FALSE(net.find_node("bn[0,0,0]").has_value());
  EXPECT_FALSE(net.find_node("add[0,0,0]").has_value());
  // A relu of a node: a new node fed by a fixed edge 1 (skip[...] from the input x[...]).
  EXPECT_EQ(in_edges(net, "skip[0,1,2]"), (std::vector<InEdge>{{"x[0,1,2]", kFixedEdge, 1.0}}));
  // Node order: inputs, skip, conv, the bn bias, out, outputs.
  EXPECT_EQ(net.node_name(18), "skip[0,0,0]");
  EXPECT_EQ(net.node_name(36), "conv[0,0,0]");
  EXPECT_EQ(net.node_name(54), "bn.bias");
  EXPECT_EQ(net.node_name(55), "out[0,0,0]");
  EXPECT_EQ(net.node_name(73), "y0");
}

TEST(Layers, ReluOfReluReusesTheNode) {
  GraphBuilder b({4});
  const Index r1 = b.act("r1", b.linear("fc", 0, 3));
  const LayerGraph g = b.graph({b.act("r2", r1)});
  const Network net = check_against_reference(g);
  EXPECT_FALSE(net.find_node("r2[0]").has_value());
  EXPECT_EQ(net.num_nodes(), 4 + 1 + 3 + 3);
}

TEST(Layers, SharedSumBecomesANode) {
  // A pending sum used twice (two outputs) is one identity node, not two copies of its edges.
  GraphBuilder b({3});
  const Index fc = b.linear("fc", 0, 2);
  const LayerGraph g = b.graph({fc, b.act("r", fc)});
  const Network net = check_against_reference(g);
  EXPECT_EQ(net.num_edges(), 6 + 2 + 2 + 2 + 2);
  EXPECT_EQ(in_edges(net, "y0"), (std::vector<InEdge>{{"fc[0]", kFixedEdge, 1.0}}));
  EXPECT_EQ(in_edges(net, "y3"), (std::vector<InEdge>{{"r[1]", kFixedEdge, 1.0}}));
}

TEST(Layers, OutputAbsorbsAPendingSum) {
  GraphBuilder b({3});
  const LayerGraph g = b.graph({b.op(LayerKind::add, "add", {b.linear("a", 0, 2), 0, 0})});
  // add: invalid (shapes {2} and {3}); a valid one: linear + linear.
  GraphBuilder c({3});
  const LayerGraph h =
      c.graph({c.op(LayerKind::add, "add", {c.linear("a", 0, 2), c.linear("b", 0, 2)})});
  const Network net = check_against_reference(h);
  EXPECT_EQ(net.num_nodes(), 3 + 2 + 2);
  EXPECT_EQ(in_edges(net, "y1").size(), 3u + 1u + 3u + 1u);
  EXPECT_TRUE(contains(error_of<NetworkError>([&] { (void)unroll(g); }), "shape {3}"));
}

TEST(Layers, SubNegatesItsSecondOperand) {
  GraphBuilder b({3});
  const Index a = b.linear("a", 0, 2);
  const Index c = b.linear("c", 0, 2);
  const LayerGraph g = b.graph({b.act("r", b.op(LayerKind::sub, "sub", {a, c}))});
  const Network net = check_against_reference(g);
  const auto edges = in_edges(net, "r[1]");
  ASSERT_EQ(edges.size(), 5u);
  EXPECT_EQ(edges.back(), (InEdge{"c[1]", kFixedEdge, -1.0}));
}

TEST(Layers, Conv2dGeometryMatchesTheReference) {
  GraphBuilder b({4, 7, 6});
  Index x = b.conv("c1", 0, 6, {3, 2}, {2, 1}, {1, 2}, {1, 2}, 2);
  x = b.act("r1", x, Activation::leaky_relu(0.1));
  x = b.conv("c2", x, 4, {1, 3}, {1, 2}, {0, 1}, {}, 1, false);
  const LayerGraph g = b.graph({b.act("r2", x)});
  check_against_reference(g, 3);
}

TEST(Layers, Conv1dGeometryMatchesTheReference) {
  GraphBuilder b({4, 11});
  Index x = b.conv("c1", 0, 8, {3}, {2}, {2}, {3}, 4);
  x = b.pool(LayerKind::max_pool, "mp", b.act("r1", x), {2}, {1}, {1});
  x = b.pool(LayerKind::avg_pool, "ap", x, {3}, {2}, {1}, {}, false);
  const LayerGraph g = b.graph({b.linear("fc", b.op(LayerKind::flatten, "fl", {x}), 3)});
  check_against_reference(g, 4);
}

TEST(Layers, PoolsMatchTheReference) {
  for (const bool include_pad : {true, false}) {
    GraphBuilder b({2, 7, 5});
    const Index r = b.act("r", b.conv("c", 0, 3, {2, 2}, {}, {1, 1}));
    const Index mp = b.pool(LayerKind::max_pool, "mp", r, {3, 2}, {2, 2}, {1, 1}, {1, 2});
    const Index ap = b.pool(LayerKind::avg_pool, "ap", r, {3, 3}, {2, 1}, {1, 1}, {}, include_pad);
    const Index ad = b.adaptive("ad", r, {3, 4});
    const Index up = b.adaptive("up", r, {10, 2});  // larger than the input: overlapping windows
    const LayerGraph g = b.graph({mp, ap, ad, up});
    const Network net = check_against_reference(g, include_pad ? 5 : 6);
    EXPECT_EQ(net.activation(*net.find_node("mp[0,0,0]")).kind, ActivationKind::max);
  }
}

TEST(Layers, AvgPoolWeights) {
  GraphBuilder b({1, 3, 3});
  const LayerGraph g =
      b.graph({b.pool(LayerKind::avg_pool, "ap", 0, {2, 2}, {1, 1}, {1, 1}, {}, false)});
  const Network net = check_against_reference(g);
  // Corner window (0, 0) holds one input entry: weight 1 (count_include_pad false).
  EXPECT_EQ(in_edges(net, "y0"), (std::vector<InEdge>{{"x[0,0,0]", kFixedEdge, 1.0}}));
  GraphBuilder c({1, 3, 3});
  const Network with_pad =
      unroll(c.graph({c.pool(LayerKind::avg_pool, "ap", 0, {2, 2}, {1, 1}, {1, 1})}));
  EXPECT_EQ(in_edges(with_pad, "y0"), (std::vector<InEdge>{{"x[0,0,0]", kFixedEdge, 0.25}}));
}

TEST(Layers, AvgPoolOfAPendingSumMaterialisesIt) {
  GraphBuilder b({1, 4, 4});
  const LayerGraph g =
      b.graph({b.pool(LayerKind::avg_pool, "ap", b.conv("c", 0, 1, {1, 1}), {2, 2})});
  const Network net = check_against_reference(g);
  EXPECT_TRUE(net.find_node("c[0,3,3]").has_value());
}

TEST(Layers, ConcatAndFlattenKeepSumsPending) {
  GraphBuilder b({2, 3, 3});
  const Index c1 = b.conv("c1", 0, 2, {2, 2});
  const Index c2 = b.conv("c2", 0, 1, {2, 2}, {}, {}, {}, 1, false);
  const Index cat = b.op(LayerKind::concat, "cat", {c1, c2});
  const Index cat_w = b.op(LayerKind::concat, "cat_w", {cat, cat}, 2);
  const LayerGraph g = b.graph({b.act("r", b.op(LayerKind::flatten, "flat", {cat}))});
  const Network net = check_against_reference(g);
  EXPECT_EQ(net.num_nodes(), 18 + 1 + 12 + 12);
  EXPECT_EQ(in_edges(net, "r[11]").size(), 8u);  // c2 entry: 2 x 2 x 2 weights, no bias
  const LayerGraph g2 = b.graph({b.act("r2", cat_w)});
  check_against_reference(g2);
}

TEST(Layers, BatchNormOnVectors) {
  GraphBuilder b({6});
  const LayerGraph g = b.graph({b.batch_norm("bn", b.act("r", b.linear("fc", 0, 4)))});
  check_against_reference(g);
}

TEST(Layers, DeadEntriesAreDropped) {
  // The max pool (floor mode) never reads row and column 4 of r: those nodes are not made.
  GraphBuilder b({1, 5, 5});
  const Index r = b.act("r", b.conv("c", 0, 1, {3, 3}, {}, {1, 1}));
  const LayerGraph g = b.graph({b.pool(LayerKind::max_pool, "mp", r, {2, 2})});
  const Network net = check_against_reference(g);
  EXPECT_TRUE(net.find_node("r[0,3,3]").has_value());
  EXPECT_FALSE(net.find_node("r[0,4,0]").has_value());
  // An input entry no output depends on is an input node with no edge, designated as an input:
  // the input vector keeps its 25 entries, in order.
  GraphBuilder c({1, 5, 5});
  const LayerGraph h = c.graph({c.pool(LayerKind::max_pool, "mp", 0, {2, 2})});
  const Network unused = check_against_reference(h);
  EXPECT_EQ(unused.data_inputs().size(), 25U);
  EXPECT_EQ(unused.spec().inputs.size(), 9U);
  const NodeId x04 = *unused.find_node("x[0,0,4]");
  EXPECT_TRUE(unused.out_edges(x04).empty());
  EXPECT_EQ(unused.data_inputs()[4], x04);
  // Read back from the file format: "inputs" designates it.
  EXPECT_EQ(parse_network(network_to_json(unused)).spec().inputs, unused.spec().inputs);
}

TEST(Layers, RearrangingLayersTransposedConvolutionsAndCeilMode) {
  // Copies of entries (reflect and replicate padding, nearest upsampling: gathers that repeat
  // entries), ceil_mode pools whose last windows run past the end, a channel shuffle, strided
  // and grouped transposed convolutions with output_padding and dilation, a fixed scale.
  GraphBuilder b({2, 5, 6});
  Index x = b.gather("pad", 0, 1, {1, 0, 1, 2, 3, 4, 3});
  x = b.act("r", b.conv("c", x, 4, {3, 3}, {1, 1}, {0, 1}));
  const Index mp = b.pool(LayerKind::max_pool, "mp", x, {2, 2}, {}, {}, {}, true, true);
  const Index ap = b.pool(LayerKind::avg_pool, "ap", x, {3, 2}, {2, 2}, {1, 1}, {}, true, true);
  const Index ex = b.pool(LayerKind::avg_pool, "ex", x, {3, 3}, {2, 2}, {1, 0}, {}, false, true);
  Index t = b.conv_transpose("t", mp, 4, {3, 2}, {2, 3}, {1, 0}, {1, 2}, {1, 1}, 2);
  t = b.gather("shuffle", b.act("rt", t), 0, {0, 2, 1, 3});
  const Index u = b.gather("up", b.scale("s", ap, -1.5), 2, {0, 0, 1, 1, 2, 2, 3, 3});
  const Index d =
      b.conv_transpose("d", b.act("ru", u), 3, {2, 2}, {1, 1}, {}, {}, {2, 1}, 1, false);
  const LayerGraph g = b.graph({t, d, ex});
  check_against_reference(g, 11);
  // JSON round trip of every new field.
  EXPECT_EQ(parse_layer_graph(layer_graph_to_json(g)), g);
  // 1-D
  GraphBuilder c({3, 11});
  Index y = c.pool(LayerKind::max_pool, "mp", c.act("r", c.conv("c", 0, 4, {3}, {2})), {2}, {}, {},
                   {}, true, true);
  y = c.conv_transpose("t", y, 2, {4}, {3}, {1}, {2});
  check_against_reference(c.graph({c.gather("g", y, 1, {0, 5, 5, 2})}), 12);
}

TEST(Layers, RearrangingLayersAreCheckedByName) {
  GraphBuilder b({2, 4, 4});
  const Index c = b.conv("c", 0, 3, {1, 1});
  LayerGraph g = b.graph({b.gather("g", c, 0, {0, 3})});
  EXPECT_TRUE(contains(error_of<NetworkError>([&] { (void)layer_shapes(g); }),
                       "layer 2 'g' (gather): index 3 (entry 1 of indices) is out of range 0..2"));
  g.layers[2].indices = {};
  EXPECT_TRUE(contains(error_of<NetworkError>([&] { (void)layer_shapes(g); }), "has no indices"));
  g.layers[2].indices = {0};
  g.layers[2].axis = 3;
  EXPECT_TRUE(contains(error_of<NetworkError>([&] { (void)layer_shapes(g); }), "axis 3"));
  GraphBuilder t({2, 4});
  LayerGraph h = t.graph({t.conv_transpose("t", 0, 2, {2}, {2}, {}, {2})});
  EXPECT_TRUE(contains(error_of<NetworkError>([&] { (void)layer_shapes(h); }),
                       "output_padding 2 must be smaller than the stride 2"));
  GraphBuilder n({2, 4});
  // stride 3, kernel 1, no bias: positions 1 and 2 of each 3 are reached by no input.
  LayerGraph k = n.graph({n.conv_transpose("t", 0, 2, {1}, {3}, {}, {}, {}, 1, false)});
  EXPECT_TRUE(contains(error_of<NetworkError>([&] { (void)layer_shapes(k); }),
                       "output position 1 of a spatial dimension is reached by no input"));
  GraphBuilder s({3});
  LayerGraph f = s.graph({s.scale("s", 0, std::numeric_limits<double>::infinity())});
  EXPECT_TRUE(
      contains(error_of<NetworkError>([&] { (void)layer_shapes(f); }), "factor inf is not finite"));
  GraphBuilder p({2, 4});
  LayerGraph q = p.graph({p.conv("c", 0, 2, {2})});
  q.layers[1].ceil_mode = true;
  EXPECT_TRUE(contains(error_of<NetworkError>([&] { (void)layer_shapes(q); }),
                       "ceil_mode applies to max_pool, avg_pool and k_max_pool only"));
}

TEST(Layers, ErrorsNameTheLayer) {
  const auto err = [](const LayerGraph& g) {
    return error_of<NetworkError>([&] { (void)layer_shapes(g); });
  };
  {
    GraphBuilder b({1, 4, 4});
    LayerGraph g = b.graph({b.conv("conv", 0, 2, {3, 3})});
    g.layers[1].kernel = {5, 3};
    EXPECT_TRUE(contains(err(g),
                         "layer 1 'conv' (conv): kernel 5 (dilation 1, span 5) is "
                         "larger than the padded input 4 + 2 x 0 in spatial dimension 0"));
    g.layers[1].kernel = {3, 3};
    g.layers[1].inputs = {1};
    EXPECT_TRUE(contains(err(g), "input 0 refers to layer 1, not an earlier layer (0..0)"));
    g.layers[1].inputs = {0};
    g.layers[1].groups = 2;
    EXPECT_TRUE(contains(err(g), "groups 2 must divide the input channels 1 and out_channels 2"));
    g.layers[1].groups = 1;
    g.layers[1].padding = {3, 3};
    g.layers[1].bias_offset = -1;
    EXPECT_TRUE(contains(err(g), "output position 0 of spatial dimension 0 sees only padding"));
    g.layers[1].padding = {};
    g.layers[1].weight_offset = 5;
    EXPECT_TRUE(contains(err(g), "weight block [5, 23) (18 parameters) is outside theta"));
  }
  {
    GraphBuilder b({3});
    const Index a = b.linear("a", 0, 2);
    LayerGraph g = b.graph({b.op(LayerKind::add, "sum", {a, 0})});
    EXPECT_TRUE(contains(err(g),
                         "layer 2 'sum' (add): input 1 has shape {3} but input 0 has "
                         "shape {2}"));
    g.layers[2].kind = LayerKind::linear;
    EXPECT_TRUE(contains(err(g), "takes 1 input but has 2"));
    g.layers[2] = g.layers[1];
    EXPECT_TRUE(contains(err(g), "duplicate layer name 'a' (layers 1 and 2)"));
    g.layers[2].name = "x";
    EXPECT_TRUE(contains(err(g), "named 'x'"));
    g.layers.pop_back();
    g.outputs = {4};
    EXPECT_TRUE(contains(err(g), "outputs[0] refers to layer 4"));
    g.outputs = {1};
    g.weights = std::vector<double>(3, 0.0);
    EXPECT_TRUE(contains(err(g), "the weights have 3 entries but num_params is 8"));
  }
  {
    GraphBuilder b({2, 4});
    const LayerGraph g = b.graph({b.linear("fc", 0, 3)});
    EXPECT_TRUE(contains(err(g), "needs a vector input {F}, got shape {2, 4} (flatten first)"));
  }
}

TEST(Layers, TooLargeIsRefusedBeforeAllocating) {
  GraphBuilder b({100});
  const LayerGraph g = b.graph({b.linear("fc", b.act("r", b.linear("h", 0, 100)), 10)});
  // The network (about 0.8 MB) is refused with its exact counts once the plan (7 KB) has run.
  std::string msg = error_of<TooLarge>([&] { (void)unroll(g, {.max_memory = 100'000}); });
  EXPECT_TRUE(contains(msg, "unrolling the layer graph into 212 nodes and 11110 edges"));
  // Below the plan's own bytes, before any per-entry work: the bounds of unroll_bounds
  // (100 + 100 + 100 + 10 entries; 10000 + 100 + 100 + 1000 + 10 terms and biases, 100
  // fixed edges into the relu nodes and 10 into the outputs).
  msg = error_of<TooLarge>([&] { (void)unroll(g, {.max_memory = 1000}); });
  EXPECT_TRUE(contains(msg, "4 layers, 310 tensor entries: up to 322 nodes and 1.122e+04 edges"))
      << msg;
  EXPECT_TRUE(contains(msg, "its plan needs")) << msg;
  msg = error_of<TooLarge>([&] { (void)unrolled_size(g, {.max_memory = 1000}); });
  EXPECT_TRUE(contains(msg, "its plan needs")) << msg;
}

TEST(Layers, UnrollBoundsHoldOnEveryKind) {
  // The O(layers) bounds are upper bounds of the exact counts (the fuzz harness checks them on
  // random graphs too), and close: windows cut by the padding borders are what they overcount.
  for (const LayerGraph& g : {testing::resnet18(32, 10, 8), testing::resnet18(16, 3, 4)}) {
    const UnrolledSize exact = unrolled_size(g);
    const detail::UnrollBounds bounds = detail::unroll_bounds(g, layer_shapes(g));
    EXPECT_LE(static_cast<double>(exact.nodes), bounds.max_nodes);
    EXPECT_LE(static_cast<double>(exact.edges), bounds.max_edges);
    EXPECT_LE(bounds.max_edges, 1.5 * static_cast<double>(exact.edges));
  }
}

TEST(Layers, SameNetworkForAnyThreadCount) {
  const LayerGraph g = testing::resnet18(32, 10, 8);
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const Network one = unroll(g);
  omp_set_num_threads(std::max(2, threads));
  const Network many = unroll(g);
  omp_set_num_threads(threads);
  testing::expect_same_network(one, many);
  EXPECT_EQ(one.spec().edge_params, many.spec().edge_params);
  EXPECT_EQ(unrolled_size(g).edges, one.num_edges());
}

TEST(Layers, ResnetMatchesTheReference) {
  check_against_reference(testing::resnet18(32, 3, 4), 7);
}

TEST(LayersJson, RoundTrip) {
  GraphBuilder b({2, 5, 5});
  Index x = b.conv("c", 0, 4, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 2);
  x = b.act("r", b.batch_norm("bn", x), Activation::leaky_relu(0.25));
  x = b.pool(LayerKind::avg_pool, "ap", x, {2, 2}, {}, {}, {}, false);
  const Index m = b.pool(LayerKind::max_pool, "mp", x, {2, 2}, {1, 1});
  const Index cat = b.op(LayerKind::concat, "cat", {b.adaptive("ad", x, {1, 1}), m}, 0);
  LayerGraph g = b.graph({b.linear("fc", b.op(LayerKind::flatten, "fl", {cat}), 3)});
  g.weights = normal_weights(g.num_params, 2);
  for (const int indent : {-1, 1}) {
    const LayerGraph back = parse_layer_graph(layer_graph_to_json(g, indent));
    EXPECT_EQ(back, g);
  }
  g.weights.reset();
  EXPECT_EQ(parse_layer_graph(layer_graph_to_json(g)), g);
}

TEST(LayersJson, ErrorsNameTheKey) {
  const auto err = [](const std::string& text) {
    return error_of<FormatError>([&] { (void)parse_layer_graph(text); });
  };
  const std::string head =
      R"({"format": "pathlift-layers", "version": 1, "input_shape": [3], "num_params": 8, )";
  const std::string ok_layers =
      R"("layers": [{"name": "in", "kind": "input"}, {"name": "fc", "kind": "linear", )"
      R"("inputs": ["in"], "out_features": 2, "weight_offset": 0, "bias_offset": 6}], )";
  EXPECT_EQ(parse_layer_graph(head + ok_layers + R"("outputs": ["fc"]})").layers[1].inputs,
            std::vector<Index>{0});
  EXPECT_TRUE(
      contains(err(head + ok_layers + R"("outputs": [1], "extra": 1})"), "unknown key \"extra\""));
  EXPECT_TRUE(
      contains(err(head + R"("layers": [{"name": "in", "kind": "input"}, {"name": "fc", "kind": )"
                          R"("linear", "inputs": [0], "out_features": 2, "weight_offset": 0, )"
                          R"("kernel": [3]}], "outputs": [1]})"),
               "\"layers\"[1]: unknown key \"kernel\" (a linear layer has name, kind, inputs, "
               "out_features, weight_offset, bias_offset)"));
  EXPECT_TRUE(
      contains(err(head + R"("layers": [{"name": "in", "kind": "input"}, {"name": "fc", "kind": )"
                          R"("linear", "inputs": [0], "out_features": -2, "weight_offset": 0}], )"
                          R"("outputs": [1]})"),
               "\"layers\"[1][\"out_features\"]: expected an integer >= 1, got -2"));
  EXPECT_TRUE(
      contains(err(head + R"("layers": [{"name": "in", "kind": "input"}, {"name": "c", "kind": )"
                          R"("conv2d"}], "outputs": [1]})"),
               "\"layers\"[1][\"kind\"]: unknown layer kind 'conv2d'"));
  EXPECT_TRUE(contains(err(head + ok_layers + R"("outputs": ["nope"]})"),
                       "\"outputs\"[0]: no earlier layer is named \"nope\""));
  EXPECT_TRUE(contains(err(R"({"format": "pathlift-network", "version": 1})"),
                       "\"format\" must be \"pathlift-layers\""));
  // Shapes are validated too (NetworkError).
  const std::string msg = error_of<NetworkError>(
      [&] { (void)parse_layer_graph(head + ok_layers + R"("outputs": [2]})"); });
  EXPECT_TRUE(contains(msg, "outputs[0] refers to layer 2"));
}

/// Timings of the issue's sizes (run with --gtest_also_run_disabled_tests; no assertion on time).
/// k-max pooling, GroupSort / MaxMin and linear / bilinear interpolation against the naive
/// layers (PyTorch's definitions), with the k of each order-statistic node.
TEST(Layers, ToolkitKindsMatchTheReference) {
  for (const LayerGraph& g : {testing::zoo_toolkit_kinds(), testing::zoo_toolkit_1d()}) {
    check_against_reference(g, 3);
    EXPECT_EQ(parse_layer_graph(layer_graph_to_json(g)), g);
  }
  // (k, padded, ceil_mode): padded 3 x 3 windows hold at least 2 x 2 entries, ceil_mode ones 1.
  for (const auto& [k, padded, ceil] :
       {std::tuple{1, true, true}, std::tuple{2, true, false}, std::tuple{4, true, false},
        std::tuple{6, false, false}, std::tuple{9, false, false}}) {
    GraphBuilder b({2, 7, 6});
    const Index r = b.act("r", b.conv("c", 0, 3, {2, 2}, {}, {1, 1}));  // 3 x 8 x 7
    const Index p = b.k_max_pool("kp", r, k, {3, 3}, {2, 2},
                                 padded ? std::vector<Index>{1, 1} : std::vector<Index>{}, ceil);
    const Network net = check_against_reference(b.graph({p}), static_cast<std::uint64_t>(k));
    EXPECT_EQ(net.activation(*net.find_node("kp[0,1,1]")), Activation::max(k));
  }
  for (const bool descending : {false, true}) {
    for (const Index size : {1, 2, 3, 6}) {
      GraphBuilder b({6, 3, 2});
      const Index s = b.group_sort("gs", b.conv("c", 0, 6, {1, 1}), size, descending);
      const Network net = check_against_reference(b.graph({s}), 7);
      // Channel 1 holds the second smallest (ascending) or the second largest of its group.
      const Index order = size == 1 ? 1 : descending ? 2 : size - 1;
      EXPECT_EQ(net.activation(*net.find_node("gs[1,0,0]")), Activation::max(order));
    }
  }
  for (const bool corners : {false, true}) {
    GraphBuilder b({2, 5, 7});
    const Index c = b.conv("c", 0, 2, {1, 1});
    const Index twice = b.interpolate("twice", c, {10, 14}, corners, {2.0, 2.0});
    const Index thrice = b.interpolate("thrice", c, {15, 21}, corners, {3.0, 3.0});
    const Index odd = b.interpolate("odd", c, {8, 9}, corners);
    const Index down = b.interpolate("down", c, {3, 4}, corners);
    const Index uneven = b.interpolate("uneven", c, {12, 7}, corners, {2.5, 1.0});
    check_against_reference(b.graph({twice, thrice, odd, down, uneven}), corners ? 8 : 9);
    GraphBuilder b1({3, 7});
    const Index c1 = b1.conv("c", 0, 2, {1});
    check_against_reference(b1.graph({b1.interpolate("l", c1, {13}, corners),
                                      b1.interpolate("l3", c1, {21}, corners, {3.0})}),
                            10);
  }
}

/// Interpolation weights: a zero weight is no edge, a copied axis has weight 1.
TEST(Layers, InterpolationEdges) {
  GraphBuilder b({1, 1, 3});
  const LayerGraph g = b.graph({b.interpolate("up", 0, {1, 5}, true)});
  const Network net = unroll(g);
  // align_corners: sources 0, 0.5, 1, 1.5, 2: outputs 0, 2, 4 copy one input.
  EXPECT_EQ(in_edges(net, "y0"), (std::vector<InEdge>{{"x[0,0,0]", kFixedEdge, 1.0}}));
  EXPECT_EQ(in_edges(net, "y1"),
            (std::vector<InEdge>{{"x[0,0,0]", kFixedEdge, 0.5}, {"x[0,0,1]", kFixedEdge, 0.5}}));
  EXPECT_EQ(in_edges(net, "y4"), (std::vector<InEdge>{{"x[0,0,2]", kFixedEdge, 1.0}}));
}

TEST(Layers, ToolkitKindsAreCheckedByName) {
  const auto err = [](const LayerGraph& g) {
    return error_of<NetworkError>([&] { (void)layer_shapes(g); });
  };
  GraphBuilder b({3, 4, 4});
  LayerGraph g = b.graph({b.k_max_pool("kp", 0, 5, {2, 2}, {2, 2}, {1, 1})});
  EXPECT_TRUE(contains(err(g),
                       "layer 1 'kp' (k_max_pool): k = 5 but a window (kernel 2,2) holds "
                       "only 1 entries of the input {3, 4, 4}"));
  g.layers[1].k = 0;
  EXPECT_TRUE(contains(err(g), "k = 0 must be in 1.."));
  GraphBuilder s({3, 4, 4});
  g = s.graph({s.group_sort("gs", 0, 2, false)});
  EXPECT_TRUE(contains(err(g),
                       "layer 1 'gs' (group_sort): group_size 2 must divide the 3 "
                       "entries of axis 0 of the input {3, 4, 4}"));
  GraphBuilder i({3, 4, 4});
  g = i.graph({i.interpolate("up", 0, {8}, false)});
  EXPECT_TRUE(contains(err(g), "output_size has 1 entries but the input {3, 4, 4} has 2"));
  g.layers[1].output_size = {8, 8};
  g.layers[1].scales = {2.0, -1.0};
  EXPECT_TRUE(contains(err(g), "scales 2,-1 must be finite and > 0"));
  g.layers[1].scales = {2.0};
  EXPECT_TRUE(contains(err(g), "scales has 1 entries but the input {3, 4, 4} has 2"));
  GraphBuilder f({4});
  g = f.graph({f.interpolate("up", 0, {8}, false)});
  EXPECT_TRUE(contains(err(g), "needs a {C, L} or {C, H, W} input, got shape {4}"));
}

/// A k-max node names its k, is parsed back, and needs k incoming edges.
TEST(Layers, KMaxActivationNames) {
  EXPECT_EQ(Activation::max().name(), "max");
  EXPECT_EQ(Activation::max(3).name(), "max:3");
  EXPECT_EQ(Activation::parse("max:3"), Activation::max(3));
  EXPECT_EQ(Activation::parse("max:1"), Activation::max());
  EXPECT_TRUE(contains(error_of<FormatError>([] { (void)Activation::parse("max:0"); }),
                       "unknown activation 'max:0'"));
  GraphBuilder b({2, 1, 4});
  const Network net = unroll(b.graph({b.group_sort("gs", 0, 2, true)}));
  NetworkSpec spec = net.spec();
  for (auto& [v, a] : spec.activations) {
    if (v == *net.find_node("gs[0,0,0]")) {
      a = Activation::max(3);
    }
  }
  EXPECT_TRUE(contains(error_of<NetworkError>([&] { (void)Network(spec); }),
                       "max node 'gs[0,0,0]' takes the 3-th largest of its incoming edges but "
                       "has 2 of them"));
}

TEST(LayersTiming, DISABLED_PrintUnrollTimes) {
  const auto time = [](const char* what, const LayerGraph& g) {
    const auto t0 = std::chrono::steady_clock::now();
    const UnrolledSize size = unrolled_size(g);
    const auto t1 = std::chrono::steady_clock::now();
    const Network net = unroll(g);
    const auto t2 = std::chrono::steady_clock::now();
    std::printf("%s: %lld nodes, %lld edges; unrolled_size %.3f s, unroll %.3f s\n", what,
                static_cast<long long>(size.nodes), static_cast<long long>(net.num_edges()),
                std::chrono::duration<double>(t1 - t0).count(),
                std::chrono::duration<double>(t2 - t1).count());
  };
  time("resnet18 at 3x32x32", testing::resnet18(32));
  GraphBuilder b({784});
  Index x = 0;
  for (int l = 1; l <= 3; ++l) {
    x = b.act("relu" + std::to_string(l), b.linear("fc" + std::to_string(l), x, 2048));
  }
  time("MLP 784-2048-2048-2048-10", b.graph({b.linear("fc4", x, 10)}));
}

}  // namespace
}  // namespace pathlift
