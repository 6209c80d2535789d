// ONNX import (read_onnx): the models of scripts/make_test_onnx.py against PyTorch's own outputs
// and parameters (tests/data/onnx_reference.json), and the refusals.

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "pathlift/error.hpp"
#include "pathlift/forward.hpp"
#include "pathlift/layers.hpp"
#include "support.hpp"
#include "tests/layers_reference.hpp"

namespace pathlift {
namespace {

using testing::contains;
using testing::error_of;

std::string data(const std::string& name) {
  return std::string(PATHLIFT_TEST_DATA) + "/" + name;
}

const nlohmann::json& reference(const std::string& model) {
  static const nlohmann::json doc = [] {
    std::ifstream in(data("onnx_reference.json"));
    return nlohmann::json::parse(in);
  }();
  return doc.at(model);
}

/// The unrolled model's outputs (forward() and the node-by-node reference) against PyTorch's
/// on the reference inputs; theta against the reference theta where it is stored.
void check_model(const std::string& model, const LayerGraph& g) {
  const nlohmann::json& ref = reference(model);
  EXPECT_EQ(g.input_shape, ref.at("input_shape").get<std::vector<Index>>());
  ASSERT_TRUE(g.weights.has_value());
  const std::vector<double>& theta = *g.weights;
  if (ref.contains("theta")) {
    const auto want = ref.at("theta").get<std::vector<double>>();
    ASSERT_EQ(theta.size(), want.size());
    for (std::size_t k = 0; k < want.size(); ++k) {
      EXPECT_NEAR(theta[k], want[k], 1e-12 * (1 + std::abs(want[k]))) << "theta[" << k << "]";
    }
  }
  const Network net = unroll(g);
  EXPECT_EQ(net.num_params(), g.num_params);
  const auto inputs = ref.at("inputs").get<std::vector<std::vector<double>>>();
  const auto outputs = ref.at("outputs").get<std::vector<std::vector<double>>>();
  Eigen::MatrixXd X(static_cast<Index>(inputs.size()),
                    static_cast<Index>(net.data_inputs().size()));
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    ASSERT_EQ(static_cast<Index>(inputs[i].size()), X.cols());
    for (std::size_t c = 0; c < inputs[i].size(); ++c) {
      X(static_cast<Index>(i), static_cast<Index>(c)) = inputs[i][c];
    }
  }
  const ForwardResult fw = forward(net, theta, X);
  ASSERT_EQ(fw.outputs.cols(), static_cast<Index>(outputs[0].size()));
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const std::vector<double> node_by_node = testing::reference_network(net, theta, inputs[i]);
    for (std::size_t j = 0; j < outputs[i].size(); ++j) {
      const double want = outputs[i][j];
      const double tol = 1e-9 * (1 + std::abs(want));
      EXPECT_NEAR(fw.outputs(static_cast<Index>(i), static_cast<Index>(j)), want, tol)
          << model << " sample " << i << " output " << j;
      EXPECT_NEAR(node_by_node[j], want, tol) << model << " sample " << i << " output " << j;
    }
  }
}

std::vector<LayerKind> kinds(const LayerGraph& g) {
  std::vector<LayerKind> out;
  for (const Layer& l : g.layers) {
    out.push_back(l.kind);
  }
  return out;
}

TEST(Onnx, LeNet5) {
  const LayerGraph g = read_onnx(data("lenet5.onnx"));
  using K = LayerKind;
  EXPECT_EQ(kinds(g), (std::vector<K>{K::input, K::conv, K::activation, K::max_pool, K::conv,
                                      K::activation, K::max_pool, K::flatten, K::linear,
                                      K::activation, K::linear, K::activation, K::linear}));
  EXPECT_EQ(g.num_params, 61706);
  // Parameters in initializer order (conv1.weight, conv1.bias, conv2.weight, ...).
  EXPECT_EQ(g.layers[1].weight_offset, 0);
  EXPECT_EQ(g.layers[1].bias_offset, 150);
  EXPECT_EQ(g.layers[4].weight_offset, 156);
  EXPECT_EQ(g.layers[1].name, "/conv1/Conv");
  EXPECT_EQ(g.layers[3].stride, (std::vector<Index>{2, 2}));
  check_model("lenet5.onnx", g);
}

TEST(Onnx, Conv1dWithGroupsDilationAndPadding) {
  // The batch dimension is symbolic: no input shape needed.
  const LayerGraph g = read_onnx(data("conv1d.onnx"));
  EXPECT_EQ(g.layers[1].groups, 2);
  EXPECT_EQ(g.layers[1].dilation, std::vector<Index>{2});
  EXPECT_EQ(g.layers[4].activation, Activation::leaky_relu(static_cast<double>(0.1F)));
  EXPECT_FALSE(g.layers[5].count_include_pad);
  check_model("conv1d.onnx", g);
}

TEST(Onnx, ResidualNetWithBatchNorm) {
  const std::string msg = error_of<FormatError>([] { (void)read_onnx(data("residual.onnx")); });
  EXPECT_TRUE(contains(msg, "symbolic dimensions (h, w): give the input shape"));
  EXPECT_TRUE(
      contains(error_of<FormatError>([] {
                 (void)read_onnx(data("residual.onnx"), {3, 16});
               }),
               "the input shape {3, 16} has 2 dimensions but the model's input 'input' has 3"));
  const LayerGraph g = read_onnx(data("residual.onnx"), {3, 16, 16});
  const auto count = [&](LayerKind k) {
    return std::count_if(g.layers.begin(), g.layers.end(),
                         [&](const Layer& l) { return l.kind == k; });
  };
  EXPECT_EQ(count(LayerKind::batch_norm), 3);  // not fused into the convolutions
  EXPECT_EQ(count(LayerKind::concat), 1);
  EXPECT_EQ(count(LayerKind::sub), 1);
  EXPECT_EQ(count(LayerKind::adaptive_avg_pool), 1);
  EXPECT_EQ(count(LayerKind::avg_pool), 1);  // its Pad (all zero) merged away
  // MatMul + Add: one linear layer with the bias; 'fc' and 'fc_bias' are the first
  // initializers, so theta starts with them.
  const Layer& fc = g.layers.back();
  EXPECT_EQ(fc.kind, LayerKind::linear);
  EXPECT_EQ(fc.weight_offset, 0);
  EXPECT_EQ(fc.bias_offset, 48);
  check_model("residual.onnx", g);
}

TEST(Onnx, ParametersMergedByTheExporterStayDistinct) {
  // bn2.weight and bn2.bias are Identity nodes of bn1's: each batch norm keeps its own a and b
  // (their running statistics differ), placed where model.parameters() has them.
  const LayerGraph g = read_onnx(data("aliases.onnx"));
  EXPECT_EQ(g.layers[2].weight_offset, 76);  // after conv1's 72 + 4
  EXPECT_EQ(g.layers[5].kind, LayerKind::batch_norm);
  EXPECT_EQ(g.layers[5].weight_offset, 232);  // after conv2's 144 + 4, not bn1's 76
  EXPECT_EQ(g.layers[5].bias_offset, 236);
  check_model("aliases.onnx", g);
}

TEST(Onnx, ImportedGraphRoundTripsThroughJson) {
  const LayerGraph g = read_onnx(data("residual.onnx"), {3, 16, 16});
  EXPECT_EQ(parse_layer_graph(layer_graph_to_json(g)), g);
}

TEST(Onnx, RefusalListsEveryUnsupportedOperation) {
  const std::string msg =
      error_of<UnsupportedModel>([] { (void)read_onnx(data("unsupported.onnx")); });
  EXPECT_TRUE(contains(msg,
                       "unsupported.onnx: unsupported operations: Sigmoid at '/Sigmoid', "
                       "Tanh at '/Tanh'"));
  EXPECT_TRUE(contains(error_of<UnsupportedModel>([] { (void)read_onnx(data("ceil_mode.onnx")); }),
                       "MaxPool at '/pool/MaxPool' (ceil_mode 1)"));
}

TEST(Onnx, NotAModel) {
  EXPECT_TRUE(contains(error_of<FormatError>([] { (void)parse_onnx("not a model"); }),
                       "not an ONNX model"));
  EXPECT_TRUE(contains(error_of<FormatError>([] { (void)read_onnx(data("missing.onnx")); }),
                       "cannot open ONNX file"));
  // A pathlift JSON file is not ONNX either.
  EXPECT_TRUE(contains(error_of<FormatError>([] { (void)read_onnx(data("fig1.json")); }),
                       "fig1.json: not an ONNX model"));
}

}  // namespace
}  // namespace pathlift
