// LayerGraphBuilder (layer_graph_builder.hpp): shapes against PyTorch's formulas written out
// here, one naming rule, every problem collected, parameter tensors checked, checked sizes, the
// batch-norm folding against its definition, and the pathlift-layers reader built on it
// (names resolved by hash, deep nesting refused).

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "pathlift/error.hpp"
#include "pathlift/layer_graph_builder.hpp"
#include "pathlift/layers.hpp"
#include "support.hpp"
#include "tests/layers_builder.hpp"

namespace pathlift {
namespace {

using testing::contains;
using testing::error_of;

Layer layer(LayerKind kind, std::string name, std::vector<Index> inputs) {
  Layer l;
  l.kind = kind;
  l.name = std::move(name);
  l.inputs = std::move(inputs);
  return l;
}

/// A convolution whose weight block starts at theta[0].
Layer conv(const std::string& name, Index in, Index out, std::vector<Index> kernel,
           std::vector<Index> stride, std::vector<Index> padding, std::vector<Index> dilation,
           Index groups = 1) {
  Layer l = testing::GraphBuilder::convolution(LayerKind::conv, name, in, out, std::move(kernel),
                                               std::move(stride), std::move(padding),
                                               std::move(dilation), groups);
  l.weight_offset = 0;
  return l;
}

/// A linear layer "fc" of 3 outputs on an input {4}: weight block [0, 12), bias block [12, 15).
Layer fc_4_to_3() {
  Layer fc = layer(LayerKind::linear, "fc", {0});
  fc.out_features = 3;
  fc.weight_offset = 0;
  fc.bias_offset = 12;
  return fc;
}

/// PyTorch's Conv2d / MaxPool2d output size: floor((in + 2p - d (k - 1) - 1) / s) + 1.
Index torch_out(Index in, Index k, Index s, Index p, Index d) {
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

TEST(LayerGraphBuilder, ReturnsEachLayersShapeByPyTorchsFormulas) {
  LayerGraphBuilder b({3, 17, 23});
  const LayerOutput c = b.add(conv("c", 0, 8, {3, 5}, {2, 3}, {1, 2}, {2, 1}));
  ASSERT_TRUE(c.ok);
  EXPECT_EQ(c.shape, (std::vector<Index>{8, torch_out(17, 3, 2, 1, 2), torch_out(23, 5, 3, 2, 1)}));
  Layer pool = layer(LayerKind::max_pool, "p", {c.layer});
  pool.kernel = {2, 2};
  const LayerOutput p = b.add(pool);
  EXPECT_EQ(p.shape, (std::vector<Index>{8, c.shape[1] / 2, c.shape[2] / 2}));
  const LayerOutput f = b.add(layer(LayerKind::flatten, "f", {p.layer}));
  EXPECT_EQ(f.shape, (std::vector<Index>{8 * p.shape[1] * p.shape[2]}));
  const LayerOutput cat = b.add([&] {
    Layer l = layer(LayerKind::concat, "cat", {c.layer, c.layer});
    l.axis = 0;
    return l;
  }());
  EXPECT_EQ(cat.shape, (std::vector<Index>{16, c.shape[1], c.shape[2]}));
  EXPECT_EQ(b.shape(c.layer), c.shape);
  EXPECT_TRUE(b.problems().empty());
}

TEST(LayerGraphBuilder, OneNamingRuleForDuplicates) {
  LayerGraphBuilder b({4}, "x");
  Layer relu = layer(LayerKind::activation, "relu", {0});
  relu.activation = Activation::relu();
  EXPECT_EQ(b.layers()[static_cast<std::size_t>(b.add(relu).layer)].name, "relu");
  EXPECT_EQ(b.layers()[static_cast<std::size_t>(b.add(relu).layer)].name, "relu_2");
  relu.name = "relu_2";  // taken (by the rule itself): the same rule, on this name
  EXPECT_EQ(b.layers()[static_cast<std::size_t>(b.add(relu).layer)].name, "relu_2_2");
  relu.name = "x";  // the input entries' name
  EXPECT_EQ(b.layers()[static_cast<std::size_t>(b.add(relu).layer)].name, "x_2");
  relu.name = "";
  EXPECT_EQ(b.layers()[static_cast<std::size_t>(b.add(relu).layer)].name, "activation_2");
  EXPECT_EQ(b.find("relu_2_2"), 3);
  EXPECT_EQ(b.find("nothing"), -1);
  EXPECT_TRUE(b.problems().empty());

  LayerGraphBuilder strict({4}, "x", LayerNames::strict);
  relu.name = "a";
  strict.add(relu);
  EXPECT_FALSE(strict.add(relu).ok);
  EXPECT_TRUE(contains(strict.problems().at(0), "duplicate layer name 'a' (layers 1 and 2)"));
}

TEST(LayerGraphBuilder, CollectsEveryProblemAndStaysQuietDownstream) {
  LayerGraphBuilder b({3, 8, 8});
  const LayerOutput bad = b.add(conv("big", 0, 4, {9, 9}, {}, {}, {}));  // kernel > input
  EXPECT_FALSE(bad.ok);
  EXPECT_EQ(bad.layer, 1);  // appended all the same: later indices do not move
  Layer relu = layer(LayerKind::activation, "after", {bad.layer});
  relu.activation = Activation::relu();
  EXPECT_FALSE(b.add(relu).ok);  // reads a failed layer: no problem of its own
  const LayerOutput groups = b.add(conv("groups", 0, 4, {3, 3}, {}, {}, {}, 2));  // 3 % 2
  EXPECT_FALSE(groups.ok);
  b.problem("operation torch.sigmoid (node 'sigmoid'): not supported");
  b.output(2);
  ASSERT_EQ(b.problems().size(), 3U);
  const std::string msg = error_of<UnsupportedModel>([&] { (void)b.finish(1000); });
  EXPECT_TRUE(contains(msg, "3 problems"));
  EXPECT_TRUE(contains(msg, "layer 1 'big' (conv): kernel 9"));
  EXPECT_TRUE(contains(msg, "layer 3 'groups' (conv): groups 2 must divide"));
  EXPECT_TRUE(contains(msg, "torch.sigmoid"));
  EXPECT_FALSE(contains(msg, "'after'"));
}

TEST(LayerGraphBuilder, ChecksTheParameterTensorsAgainstTheLayer) {
  LayerGraphBuilder b({3, 8, 8});
  LayerParameters p;
  p.weight = ParameterTensor{"conv.weight", {6, 2, 5, 5}};  // in_channels 2, input has 3
  p.bias = ParameterTensor{"conv.bias", {6}};
  Layer c = conv("conv", 0, 6, {5, 5}, {}, {}, {});
  c.bias_offset = 450;
  EXPECT_FALSE(b.add(c, p).ok);
  EXPECT_TRUE(contains(b.problems().at(0),
                       "weight 'conv.weight' of shape {6, 2, 5, 5} does not "
                       "fit an input of shape {3, 8, 8}: the layer needs a "
                       "weight of shape {6, 3, 5, 5}"));
  p.weight = ParameterTensor{"conv.weight", {6, 3, 5, 5}};
  p.bias = ParameterTensor{"conv.bias", {3, 1, 1}};
  EXPECT_FALSE(b.add(c, p).ok);
  EXPECT_TRUE(contains(b.problems().at(1),
                       "bias 'conv.bias' of shape {3, 1, 1} has 3 entries, "
                       "but the layer has 6 output channels"));
  p.bias = ParameterTensor{"conv.bias", {1, 6, 1, 1}};  // any rank with 6 entries
  EXPECT_TRUE(b.add(c, p).ok);
}

TEST(LayerGraphBuilder, SizesAreCheckedNeverWrapped) {
  // {2^31, ...} entries would not index a node; a product of dimensions past 2^63 must not wrap.
  EXPECT_THROW(LayerGraphBuilder({Index{1} << 31}), NetworkError);
  EXPECT_THROW(LayerGraphBuilder({Index{1} << 20, Index{1} << 20, Index{1} << 30}), NetworkError);
  EXPECT_THROW(LayerGraphBuilder({-3}), NetworkError);
  LayerGraphBuilder b({1 << 15});
  Layer fc = layer(LayerKind::linear, "fc", {0});
  fc.out_features = 1 << 20;  // 2^35 weights
  fc.weight_offset = 0;
  EXPECT_FALSE(b.add(fc).ok);
  EXPECT_TRUE(contains(b.problems().at(0), "is too many"));
  Layer cat = layer(LayerKind::concat, "cat", {0, 0, 0});
  EXPECT_TRUE(b.add(cat).ok);
}

TEST(LayerGraphBuilder, ParameterBlocksAreCheckedAgainstD) {
  LayerGraphBuilder b({4});
  const Layer fc = fc_4_to_3();
  b.output(b.add(fc).layer);
  const std::string msg = error_of<NetworkError>([&] { (void)b.finish(14); });
  EXPECT_TRUE(
      contains(msg, "bias block [12, 15) (3 parameters) is outside theta (num_params = 14)"));
  LayerGraphBuilder ok({4});
  ok.output(ok.add(fc).layer);
  const LayerGraph g = ok.finish(15, std::vector<double>(15, 0.5));
  EXPECT_EQ(g.num_params, 15);
  EXPECT_EQ(layer_shapes(g), (std::vector<std::vector<Index>>{{4}, {3}}));
}

TEST(LayerGraphBuilder, NamesTheLayerOfANonFiniteWeight) {
  LayerGraphBuilder b({4});
  const Layer fc = fc_4_to_3();
  b.output(b.add(fc).layer);
  std::vector<double> w(15, 1.0);
  w[13] = std::nan("");
  const std::string msg = error_of<NetworkError>([&] { (void)b.finish(15, w); });
  EXPECT_TRUE(contains(msg, "weight 13 is not finite: nan (entry 1 of the bias of layer 1 'fc')"));
}

TEST(LayerGraphBuilder, BatchNormFoldingIsItsDefinition) {
  const std::vector<double> gamma{2.0, -1.0};
  const std::vector<double> beta{0.5, 3.0};
  const std::vector<double> mean{1.0, -2.0};
  const std::vector<double> var{3.0, 0.25};
  const double eps = 1e-5;
  const BatchNormAffine f = fold_batch_norm(gamma, beta, mean, var, eps, "bn");
  for (std::size_t c = 0; c < 2; ++c) {
    for (const double x : {-1.5, 0.0, 2.25}) {
      const double want = gamma[c] * (x - mean[c]) / std::sqrt(var[c] + eps) + beta[c];
      EXPECT_NEAR(f.a[c] * x + f.b[c], want, 1e-14) << c << " " << x;
    }
  }
  const std::vector<double> negative{1.0, -1.0};
  const std::string msg = error_of<NetworkError>(
      [&] { (void)fold_batch_norm(gamma, beta, mean, negative, eps, "BatchNormalization 'bn'"); });
  EXPECT_TRUE(contains(msg, "BatchNormalization 'bn': channel 1 has running mean -2"));
}

TEST(LayerGraphBuilder, LayerShapesReplaysAGraphWithTheSameRules) {
  LayerGraph g;
  g.input_shape = {2, 6};
  g.layers.push_back(layer(LayerKind::input, "in", {}));
  g.layers.push_back(conv("c", 0, 4, {3}, {}, {1}, {}));
  g.layers.push_back(layer(LayerKind::flatten, "f", {1}));
  g.outputs = {2};
  g.num_params = 24;
  EXPECT_EQ(layer_shapes(g), (std::vector<std::vector<Index>>{{2, 6}, {4, 6}, {24}}));
  g.layers[2].name = "c";
  EXPECT_TRUE(contains(error_of<NetworkError>([&] { (void)layer_shapes(g); }),
                       "duplicate layer name 'c' (layers 1 and 2)"));
}

// ---------------------------------------------------------------------------------------------
// The pathlift-layers reader

std::string chain_json(Index n, bool by_name) {
  std::string text =
      R"({"format": "pathlift-layers", "version": 1, "input_shape": [4], "num_params": 0, )"
      R"("layers": [{"name": "l0", "kind": "input"})";
  for (Index i = 1; i < n; ++i) {
    text += R"(, {"name": "l)" + std::to_string(i) + R"(", "kind": "activation", "inputs": [)" +
            (by_name ? "\"l" + std::to_string(i - 1) + "\"" : std::to_string(i - 1)) +
            R"(], "activation": "relu"})";
  }
  return text + R"(], "outputs": [")" + "l" + std::to_string(n - 1) + R"("]})";
}

TEST(LayersJson, ResolvesNamesByHash) {
  // Layers referring to each other by name resolve as by index (a hash lookup; a scan of every
  // earlier layer before: 200,000 layers took 24.5 s, timed in docs/layers.md).
  const LayerGraph g = parse_layer_graph(chain_json(50000, true));
  ASSERT_EQ(g.layers.size(), 50000U);
  EXPECT_EQ(g.layers.back().inputs, (std::vector<Index>{49998}));
  EXPECT_EQ(g.outputs, (std::vector<Index>{49999}));
  EXPECT_EQ(g, parse_layer_graph(chain_json(50000, false)));
}

TEST(LayersJson, RefusesDeepNestingBeforeBuildingIt) {
  // 200,000 arrays deep inside "layers": a FormatError with a short message, no recursion per
  // level (an ordered_json copied such a value recursively when a later key was added).
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  const std::string doc =
      R"({"format": "pathlift-layers", "version": 1, "layers": )" + deep + R"(, "outputs": [0]})";
  const std::string msg = error_of<FormatError>([&] { (void)parse_layer_graph(doc); });
  EXPECT_TRUE(contains(msg, "nested more than 64 deep"));
  EXPECT_LT(msg.size(), 300U);
}

TEST(LayersJson, ReportsEveryInvalidLayer) {
  const std::string doc = R"({"format": "pathlift-layers", "version": 1, "input_shape": [3, 8],
    "num_params": 0, "layers": [{"name": "in", "kind": "input"},
      {"name": "p", "kind": "max_pool", "inputs": [0], "kernel": [20]},
      {"name": "q", "kind": "max_pool", "inputs": ["in"], "kernel": [2], "padding": [3]}],
    "outputs": ["q"]})";
  const std::string msg = error_of<NetworkError>([&] { (void)parse_layer_graph(doc); });
  EXPECT_TRUE(contains(msg, "2 problems"));
  EXPECT_TRUE(contains(msg, "layer 1 'p' (max_pool): kernel 20"));
  EXPECT_TRUE(contains(msg,
                       "layer 2 'q' (max_pool): output position 0 of spatial dimension 0 "
                       "sees only padding"));
}

}  // namespace
}  // namespace pathlift
