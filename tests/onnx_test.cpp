// ONNX import (read_onnx): the models of scripts/make_test_onnx.py against PyTorch's own outputs
// and parameters (tests/data/onnx_reference.json), the cases of scripts/make_onnx_cases.py
// (tests/data/onnx_*.onnx, each carrying its reference), models written here with the ONNX
// protobuf classes (issue 28: linear time, every invalid model refused with the node or tensor
// named), and the refusals.

#include <fmt/format.h>
#include <gtest/gtest.h>

// The ONNX protobuf classes, to write models here (the library target sets these definitions).
#define ONNX_ML 1
#define ONNX_NAMESPACE onnx
#include <onnx/onnx_pb.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "pathlift/error.hpp"
#include "pathlift/forward.hpp"
#include "pathlift/layers.hpp"
#include "pathlift/model.hpp"
#include "pathlift/onnx.hpp"
#include "support.hpp"
#include "tests/layers_reference.hpp"

namespace pathlift {
namespace {

using testing::contains;
using testing::data_file;
using testing::error_of;

const nlohmann::json& reference(const std::string& model) {
  static const nlohmann::json doc = [] {
    std::ifstream in(data_file("onnx_reference.json"));
    return nlohmann::json::parse(in);
  }();
  return doc.at(model);
}

/// The unrolled model's outputs (forward() and the node-by-node reference) against PyTorch's
/// on the reference inputs; theta against the reference theta where it is stored.
void check_reference(const std::string& model, const nlohmann::json& ref, const LayerGraph& g) {
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
      const double tol = ref.value("tolerance", 1e-9) * (1 + std::abs(want));
      EXPECT_NEAR(fw.outputs(static_cast<Index>(i), static_cast<Index>(j)), want, tol)
          << model << " sample " << i << " output " << j;
      EXPECT_NEAR(node_by_node[j], want, tol) << model << " sample " << i << " output " << j;
    }
  }
}

void check_model(const std::string& model, const LayerGraph& g) {
  check_reference(model, reference(model), g);
}

std::vector<LayerKind> kinds(const LayerGraph& g) {
  std::vector<LayerKind> out;
  for (const Layer& l : g.layers) {
    out.push_back(l.kind);
  }
  return out;
}

TEST(Onnx, LeNet5) {
  const LayerGraph g = read_onnx(data_file("lenet5.onnx"));
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
  const LayerGraph g = read_onnx(data_file("conv1d.onnx"));
  EXPECT_EQ(g.layers[1].groups, 2);
  EXPECT_EQ(g.layers[1].dilation, std::vector<Index>{2});
  EXPECT_EQ(g.layers[4].activation, Activation::leaky_relu(static_cast<double>(0.1F)));
  EXPECT_FALSE(g.layers[5].count_include_pad);
  check_model("conv1d.onnx", g);
}

TEST(Onnx, ResidualNetWithBatchNorm) {
  const std::string msg =
      error_of<FormatError>([] { (void)read_onnx(data_file("residual.onnx")); });
  EXPECT_TRUE(contains(msg, "symbolic dimensions (h, w): give the input shape"));
  EXPECT_TRUE(
      contains(error_of<FormatError>([] {
                 (void)read_onnx(data_file("residual.onnx"), {3, 16});
               }),
               "the input shape {3, 16} has 2 dimensions but the model's input 'input' has 3"));
  const LayerGraph g = read_onnx(data_file("residual.onnx"), {3, 16, 16});
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
  const LayerGraph g = read_onnx(data_file("aliases.onnx"));
  EXPECT_EQ(g.layers[2].weight_offset, 76);  // after conv1's 72 + 4
  EXPECT_EQ(g.layers[5].kind, LayerKind::batch_norm);
  EXPECT_EQ(g.layers[5].weight_offset, 232);  // after conv2's 144 + 4, not bn1's 76
  EXPECT_EQ(g.layers[5].bias_offset, 236);
  check_model("aliases.onnx", g);
}

TEST(Onnx, ImportedGraphRoundTripsThroughJson) {
  const LayerGraph g = read_onnx(data_file("residual.onnx"), {3, 16, 16});
  EXPECT_EQ(parse_layer_graph(layer_graph_to_json(g)), g);
}

TEST(Onnx, RefusalListsEveryUnsupportedOperation) {
  const std::string msg =
      error_of<UnsupportedModel>([] { (void)read_onnx(data_file("unsupported.onnx")); });
  EXPECT_TRUE(
      contains(msg,
               "unsupported.onnx: unsupported operations: Sigmoid at '/Sigmoid' (not "
               "positively homogeneous: f(a x) = a f(x) fails for some a > 0), Tanh at '/Tanh' "
               "(not positively homogeneous: f(a x) = a f(x) fails for some a > 0)"));
}

TEST(Onnx, CeilModePoolsAreRead) {
  // Conv (1 -> 2, 3x3) on 7 x 7, MaxPool2d(2, ceil_mode=True): 5 x 5 -> 3 x 3 (issue 31).
  const LayerGraph g = read_onnx(data_file("ceil_mode.onnx"));
  ASSERT_EQ(g.layers[2].kind, LayerKind::max_pool);
  EXPECT_TRUE(g.layers[2].ceil_mode);
  EXPECT_EQ(layer_shapes(g)[2], (std::vector<Index>{2, 3, 3}));
}

TEST(Onnx, NotAModel) {
  EXPECT_TRUE(contains(error_of<FormatError>([] { (void)parse_onnx("not a model"); }),
                       "not an ONNX model"));
  EXPECT_TRUE(contains(error_of<FormatError>([] { (void)read_onnx(data_file("missing.onnx")); }),
                       "cannot open ONNX file"));
  // A pathlift JSON file is not ONNX either.
  EXPECT_TRUE(contains(error_of<FormatError>([] { (void)read_onnx(data_file("fig1.json")); }),
                       "fig1.json: not an ONNX model"));
}

// --- issue 28 -----------------------------------------------------------------------------

namespace issue28 {

using onnx::NodeProto;
using onnx::TensorProto;

/// A model written here: a data input "x" (batch symbolic), nodes, initializers, outputs.
class Model {
 public:
  explicit Model(std::vector<std::int64_t> per_sample = {4}, std::int64_t opset = 13) {
    m_model.set_ir_version(8);
    auto* o = m_model.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    auto* in = graph().add_input();
    in->set_name("x");
    auto* t = in->mutable_type()->mutable_tensor_type();
    t->set_elem_type(TensorProto::FLOAT);
    t->mutable_shape()->add_dim()->set_dim_param("batch");
    for (const auto d : per_sample) {
      t->mutable_shape()->add_dim()->set_dim_value(d);
    }
  }
  onnx::GraphProto& graph() { return *m_model.mutable_graph(); }
  onnx::ModelProto& proto() { return m_model; }

  TensorProto& init(const std::string& name, std::vector<std::int64_t> dims,
                    std::vector<double> values, int type = TensorProto::FLOAT) {
    TensorProto& t = *graph().add_initializer();
    t.set_name(name);
    t.set_data_type(type);
    for (const auto d : dims) {
      t.add_dims(d);
    }
    for (const double v : values) {
      if (type == TensorProto::FLOAT) {
        t.add_float_data(static_cast<float>(v));
      } else if (type == TensorProto::DOUBLE) {
        t.add_double_data(v);
      } else if (type == TensorProto::INT64) {
        t.add_int64_data(static_cast<std::int64_t>(v));
      } else {
        t.add_int32_data(static_cast<std::int32_t>(v));
      }
    }
    return t;
  }
  /// An initializer of `dims` filled with 0.1, 0.2, ...
  TensorProto& weights(const std::string& name, std::vector<std::int64_t> dims) {
    std::int64_t n = 1;
    for (const auto d : dims) {
      n *= d;
    }
    std::vector<double> v;
    for (std::int64_t k = 0; k < n; ++k) {
      v.push_back(0.1 * static_cast<double>(k % 7 + 1) * (k % 2 == 0 ? 1 : -1));
    }
    return init(name, std::move(dims), v);
  }
  NodeProto& node(const std::string& op, std::vector<std::string> inputs,
                  std::vector<std::string> outputs, const std::string& name = "") {
    NodeProto& n = *graph().add_node();
    n.set_op_type(op);
    n.set_name(name);
    for (const auto& i : inputs) {
      n.add_input(i);
    }
    for (const auto& o : outputs) {
      n.add_output(o);
    }
    return n;
  }
  /// A Constant node writing the 1-D tensor `values` (int64 unless `type` says otherwise).
  NodeProto& constant(const std::string& out, std::vector<double> values,
                      int type = TensorProto::INT64) {
    NodeProto& n = node("Constant", {}, {out});
    auto* a = n.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    TensorProto& t = *a->mutable_t();
    t.set_data_type(type);
    t.add_dims(static_cast<std::int64_t>(values.size()));
    for (const double v : values) {
      type == TensorProto::FLOAT ? t.add_float_data(static_cast<float>(v))
                                 : t.add_int64_data(static_cast<std::int64_t>(v));
    }
    return n;
  }
  void output(const std::string& name) { graph().add_output()->set_name(name); }
  std::string bytes() const { return m_model.SerializeAsString(); }
  LayerGraph parse(const std::vector<Index>& shape = {}) const {
    return parse_onnx(bytes(), shape);
  }

 private:
  onnx::ModelProto m_model;
};

void attr(NodeProto& n, const std::string& name, std::int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
void attr(NodeProto& n, const std::string& name, std::vector<std::int64_t> v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (const auto x : v) {
    a->add_ints(x);
  }
}
void attr(NodeProto& n, const std::string& name, const std::string& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

template <class E>
std::string refusal(const Model& m, const std::vector<Index>& shape = {}) {
  return error_of<E>([&] { (void)m.parse(shape); });
}

/// x {4} -> Gemm (weight "w" (3, 4), bias "b") -> y.
Model gemm_model() {
  Model m;
  m.weights("w", {3, 4});
  m.weights("b", {3});
  attr(m.node("Gemm", {"x", "w", "b"}, {"y"}, "fc"), "transB", 1);
  m.output("y");
  return m;
}

/// x {2, 5, 5} -> Conv (3 channels, 3x3) named "conv" -> y, the caller setting attributes.
Model conv_model(NodeProto** conv, std::vector<std::int64_t> input = {2, 5, 5}) {
  Model m(input);
  m.weights("w", {3, input[0], 3, 3});
  m.weights("b", {3});
  *conv = &m.node("Conv", {"x", "w", "b"}, {"y"}, "conv");
  m.output("y");
  return m;
}

/// conv_model() with its weight 'w' reshaped to {54}: rank 1, which no Conv reads.
Model conv_model_with_rank1_weight() {
  NodeProto* conv = nullptr;
  Model m = conv_model(&conv);
  m.graph().mutable_initializer(0)->clear_dims();
  m.graph().mutable_initializer(0)->add_dims(54);
  return m;
}

/// A committed case of scripts/make_onnx_cases.py against the reference it carries.
LayerGraph check_case(const std::string& name) {
  std::ifstream in(data_file(name), std::ios::binary);
  onnx::ModelProto proto;
  EXPECT_TRUE(proto.ParseFromIstream(&in)) << name;
  nlohmann::json ref;
  for (const auto& p : proto.metadata_props()) {
    if (p.key() == "pathlift_reference") {
      ref = nlohmann::json::parse(p.value());
    }
  }
  const LayerGraph g = read_onnx(data_file(name));
  check_reference(name, ref, g);
  return g;
}

TEST(Onnx28, ImportIsLinearOnAChainOf100000Nodes) {
  // 25,000 blocks MatMul -> Add (bias) -> Relu -> Identity on a vector of 2: the old importer
  // validated the whole graph at every node (quadratic) and scanned every node for producers.
  Model m({2});
  std::string x = "x";
  constexpr int k_blocks = 25000;
  for (int k = 0; k < k_blocks; ++k) {
    const std::string s = std::to_string(k);
    m.init("w" + s, {2, 2}, {1.0, 0.5, -0.5, 1.0});
    m.init("b" + s, {2}, {0.25, -0.25});
    m.node("MatMul", {x, "w" + s}, {"m" + s}, "fc" + s);
    m.node("Add", {"m" + s, "b" + s}, {"a" + s}, "bias" + s);
    m.node("Relu", {"a" + s}, {"r" + s}, "relu" + s);
    m.node("Identity", {"r" + s}, {"i" + s}, "id" + s);
    x = "i" + s;
  }
  m.output(x);
  const std::string bytes = m.bytes();
  const auto start = std::chrono::steady_clock::now();
  const LayerGraph g = parse_onnx(bytes);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "[ timing ] 100000-node ONNX chain imported in " << seconds << " s\n";
  RecordProperty("seconds", std::to_string(seconds));
  EXPECT_EQ(g.layers.size(), 1U + 2 * k_blocks);
  EXPECT_EQ(g.num_params, 6 * k_blocks);
  EXPECT_EQ(g.layers[1].weight_offset, 0);
  EXPECT_EQ(g.layers[1].bias_offset, 4);
  EXPECT_EQ((*g.weights)[1], -0.5);  // (in, out) transposed: theta holds W^T[0][1] = W[1][0]
#if !defined(__SANITIZE_ADDRESS__)
  EXPECT_LT(seconds, 15.0);
#endif
}

TEST(Onnx28, CommittedCasesMatchPyTorch) {
  using K = LayerKind;
  // x.view(x.size(0), -1): Shape, Gather, Unsqueeze, Concat evaluated; Reshape to (batch, -1).
  LayerGraph g = check_case("onnx_flatten_view.onnx");
  EXPECT_EQ(kinds(g), (std::vector<K>{K::input, K::conv, K::activation, K::flatten, K::linear}));
  g = check_case("onnx_flatten_mul.onnx");  // Mul of Gathers of Shapes
  EXPECT_EQ(kinds(g), (std::vector<K>{K::input, K::conv, K::activation, K::flatten, K::linear}));
  EXPECT_TRUE(g.warnings.empty());  // a plain Conv export: no false alarm
  // Bias-free Linear: MatMul of Transpose(W) (W as stored) and of a pre-transposed initializer.
  g = check_case("onnx_linear_nobias.onnx");
  EXPECT_EQ(g.num_params, 20 + 15 + 12);
  g = check_case("onnx_avgpool_pad.onnx");  // AvgPool2d(padding=1): Pad + AveragePool
  EXPECT_EQ(g.layers[3].kind, K::avg_pool);
  EXPECT_EQ(g.layers[3].padding, (std::vector<Index>{1, 1}));
  EXPECT_TRUE(g.layers[3].count_include_pad);
  EXPECT_FALSE(g.layers[4].count_include_pad);
  g = check_case("onnx_auto_pad.onnx");  // SAME_UPPER, VALID, SAME_LOWER (even totals)
  EXPECT_EQ(g.layers[1].padding, (std::vector<Index>{1, 1}));
  EXPECT_EQ(g.layers[3].padding, (std::vector<Index>{0, 0}));
  EXPECT_EQ(g.layers[4].padding, (std::vector<Index>{1, 1}));
}

TEST(Onnx28, BatchNormFoldedByTheExporterIsWarnedAbout) {
  const LayerGraph g = check_case("onnx_bn_folded.onnx");
  ASSERT_EQ(g.warnings.size(), 1U);
  EXPECT_TRUE(
      contains(g.warnings[0], "ONNX node '/conv/Conv' (Conv): its initializers 'onnx::Conv_"));
  EXPECT_TRUE(contains(g.warnings[0],
                       "made by the exporter (a BatchNorm folded into the "
                       "convolution?)"));
  EXPECT_TRUE(contains(g.warnings[0], "training=torch.onnx.TrainingMode.PRESERVE"));
  for (const char* plain : {"lenet5.onnx", "conv1d.onnx", "aliases.onnx"}) {
    EXPECT_TRUE(read_onnx(data_file(plain)).warnings.empty()) << plain;
  }
}

TEST(Onnx28, TheSameBytesGiveTheSameGraph) {
  const LayerGraph first = read_onnx(data_file("onnx_avgpool_pad.onnx"));
  for (int k = 0; k < 6; ++k) {
    (void)(k % 2 == 0 ? read_onnx(data_file("residual.onnx"), {3, 16, 16})
                      : read_onnx(data_file("conv1d.onnx")));
    EXPECT_EQ(read_onnx(data_file("onnx_avgpool_pad.onnx")), first) << "import " << k;
    (void)read_onnx(data_file("onnx_flatten_view.onnx"));
  }
}

TEST(Onnx28, TensorSizesAreCheckedBeforeAnythingIsRead) {
  // Dims that wrapped to 3 entries, negative dims: refused with the tensor and its dims.
  Model m = gemm_model();
  m.graph().mutable_initializer(0)->clear_dims();
  m.graph().mutable_initializer(0)->add_dims(12884901891);
  m.graph().mutable_initializer(0)->add_dims(-4294967295);
  EXPECT_TRUE(contains(refusal<FormatError>(m),
                       "tensor 'w' has dims {12884901891, -4294967295}: a dimension is negative"));
  m.graph().mutable_initializer(0)->clear_dims();
  m.graph().mutable_initializer(0)->add_dims(-1);
  m.graph().mutable_initializer(0)->add_dims(-3);
  EXPECT_TRUE(contains(refusal<FormatError>(m), "tensor 'w' has dims {-1, -3}"));
  m.graph().mutable_initializer(0)->clear_dims();
  for (int k = 0; k < 3; ++k) {
    m.graph().mutable_initializer(0)->add_dims(std::int64_t{1} << 32);
  }
  EXPECT_TRUE(contains(refusal<FormatError>(m), "more entries than a 64-bit count holds"));
  // 2.4e9 declared entries and 12 values (the old importer reserved 19 GB first): refused
  // before anything is reserved, for a typed list and for raw bytes.
  m.graph().mutable_initializer(0)->clear_dims();
  m.graph().mutable_initializer(0)->add_dims(2400000000);
  EXPECT_TRUE(contains(refusal<FormatError>(m),
                       "tensor 'w' of dims {2400000000} (FLOAT) has 12 values, not 2400000000"));
  m.graph().mutable_initializer(0)->clear_float_data();
  m.graph().mutable_initializer(0)->set_raw_data(std::string(8, '\0'));
  EXPECT_TRUE(contains(refusal<FormatError>(m), "has 8 bytes of data, not 2400000000 x 4"));
}

TEST(Onnx28, ArityIsCheckedPerOperator) {
  Model m = gemm_model();
  m.graph().mutable_node(0)->set_op_type("MatMul");  // a third input is not a bias
  EXPECT_TRUE(contains(refusal<FormatError>(m),
                       "ONNX node 'fc' (MatMul) has 3 inputs: MatMul "
                       "takes 2"));
  Model relu;
  relu.node("Relu", {"x", "x"}, {"y"}, "r");
  relu.output("y");
  EXPECT_TRUE(contains(refusal<FormatError>(relu),
                       "ONNX node 'r' (Relu) has 2 inputs: Relu "
                       "takes 1"));
  // A second output, used (the old importer: "unordered_map::at").
  Model two;
  two.node("Relu", {"x"}, {"y", "z"}, "r");
  two.node("Relu", {"z"}, {"out"}, "s");
  two.output("out");
  EXPECT_TRUE(
      contains(refusal<FormatError>(two), "ONNX node 'r' (Relu) has 2 outputs: Relu has 1"));
  Model none;
  none.node("Conv", {"x"}, {"y"}, "c");
  none.output("y");
  EXPECT_TRUE(contains(refusal<FormatError>(none), "(Conv) has 1 input: Conv takes 2 to 3"));
  // MaxPool's indices output used: unsupported.
  NodeProto* pool = nullptr;
  Model mp = conv_model(&pool);
  pool->set_op_type("MaxPool");
  pool->clear_input();
  pool->add_input("x");
  pool->add_output("indices");
  attr(*pool, "kernel_shape", std::vector<std::int64_t>{2, 2});
  mp.output("indices");
  EXPECT_TRUE(contains(refusal<UnsupportedModel>(mp), "its indices output is used"));
}

TEST(Onnx28, ShapesAndPadsMustBeIntegers) {
  for (const double bad : {std::nan(""), 1e30, 2.5}) {
    Model m({2, 3});
    m.constant("shape", {bad, 6}, TensorProto::FLOAT);
    m.node("Reshape", {"x", "shape"}, {"y"}, "reshape");
    m.output("y");
    EXPECT_TRUE(
        contains(refusal<FormatError>(m), "ONNX node 'reshape' (Reshape): entry 0 of its shape is"))
        << bad;
    EXPECT_TRUE(contains(refusal<FormatError>(m), "not an integer in the range of int64"));
  }
  Model p({2, 5, 5});
  p.weights("w", {3, 2, 3, 3});
  p.constant("pads", {0, 0, 1, 1, 0, 0, std::nan(""), 1}, TensorProto::FLOAT);
  p.node("Pad", {"x", "pads"}, {"padded"}, "pad");
  p.node("Conv", {"padded", "w"}, {"y"}, "conv");
  p.output("y");
  EXPECT_TRUE(contains(refusal<FormatError>(p),
                       "ONNX node 'pad' (Pad): entry 6 of input 'pads' "
                       "is nan"));
}

TEST(Onnx28, AutoPadFollowsTheSpecification) {
  NodeProto* conv = nullptr;
  Model same = conv_model(&conv);
  attr(*conv, "auto_pad", std::string("SAME_UPPER"));
  LayerGraph g = same.parse();
  EXPECT_EQ(g.layers[1].padding, (std::vector<Index>{1, 1}));  // 5 -> 5: 2 in all, 1 each side
  // Stride 2 on 4: 2 outputs, a padding of 1 in all: asymmetric, refused.
  Model odd = conv_model(&conv, {2, 4, 4});
  attr(*conv, "auto_pad", std::string("SAME_LOWER"));
  attr(*conv, "strides", std::vector<std::int64_t>{2, 2});
  EXPECT_TRUE(contains(refusal<UnsupportedModel>(odd),
                       "Conv at 'conv' (auto_pad SAME_LOWER pads spatial dimension 0 by 1 in all: "
                       "an asymmetric padding)"));
  Model valid = conv_model(&conv);
  attr(*conv, "auto_pad", std::string("VALID"));
  EXPECT_EQ(valid.parse().layers[1].padding, (std::vector<Index>{0, 0}));
  attr(*conv, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  EXPECT_TRUE(contains(refusal<NetworkError>(valid),
                       "ONNX node 'conv' (Conv): auto_pad VALID and pads [1, 1, 1, 1] are both "
                       "given"));
  Model bogus = conv_model(&conv);
  attr(*conv, "auto_pad", std::string("SAME"));
  EXPECT_TRUE(contains(refusal<NetworkError>(bogus),
                       "auto_pad 'SAME' is not NOTSET, VALID, SAME_UPPER or SAME_LOWER"));
}

TEST(Onnx28, NamesAreUtf8) {
  // Found by fuzz_onnx: a name that is not UTF-8 reached the JSON writer (an internal error).
  Model node;
  node.node("Relu", {"x"}, {"y"}, std::string("r\xaf"));
  node.output("y");
  EXPECT_TRUE(contains(refusal<FormatError>(node),
                       "ONNX node 0: the node name 'r\\xaf' is not UTF-8 text"));
  Model out;
  out.node("Relu", {"x"}, {std::string("y\xc3")}, "r");
  out.output(std::string("y\xc3"));
  EXPECT_TRUE(contains(refusal<FormatError>(out), "is not UTF-8 text"));
  Model fine;  // multi-byte names are names
  fine.node("Relu", {"x"}, {"\xc3\xa9"}, "\xce\xb8");
  fine.output("\xc3\xa9");
  EXPECT_EQ(parse_onnx(fine.bytes()).layers.back().name, "\xce\xb8");
}

TEST(Onnx28, NamesAreUnique) {
  Model twice = gemm_model();
  twice.weights("w", {3, 4});
  EXPECT_TRUE(contains(refusal<FormatError>(twice), "two initializers are named 'w'"));
  Model written;
  written.node("Relu", {"x"}, {"y"}, "a");
  written.node("Relu", {"x"}, {"y"}, "b");
  written.output("y");
  EXPECT_TRUE(contains(refusal<FormatError>(written),
                       "tensor 'y' is written by two nodes, 'a' (Relu) and 'b' (Relu)"));
  Model listed;
  listed.node("Relu", {"x"}, {"y"}, "a");
  listed.output("y");
  listed.output("y");
  EXPECT_TRUE(contains(refusal<FormatError>(listed), "the graph output 'y' is listed twice"));
  Model shadow = gemm_model();
  shadow.node("Relu", {"y"}, {"b"}, "r");
  EXPECT_TRUE(contains(refusal<FormatError>(shadow),
                       "ONNX node 'r' (Relu) writes tensor 'b', which is an initializer"));
  Model input;
  input.node("Relu", {"x"}, {"x"}, "r");
  input.output("x");
  EXPECT_TRUE(contains(refusal<FormatError>(input), "writes tensor 'x', the graph's data input"));
  Model order;
  order.node("Relu", {"z"}, {"y"}, "late");
  order.node("Relu", {"x"}, {"z"}, "early");
  order.output("y");
  EXPECT_TRUE(contains(refusal<FormatError>(order), "must be in topological order"));
  // Node names n, n, n#2 and n_2 (the builder's own suffix): accepted, layers renamed once.
  Model names;
  names.node("Relu", {"x"}, {"a"}, "n");
  names.node("Relu", {"a"}, {"b"}, "n");
  names.node("Relu", {"b"}, {"c"}, "n#2");
  names.node("Relu", {"c"}, {"d"}, "n_2");
  names.node("Relu", {"d"}, {"e"});  // unnamed: its output's name
  names.output("e");
  std::vector<std::string> got;
  for (const Layer& l : names.parse().layers) {
    got.push_back(l.name);
  }
  EXPECT_EQ(got, (std::vector<std::string>{"x", "n", "n_2", "n#2", "n_2_2", "e"}));
}

TEST(Onnx28, OpsetsAreChecked) {
  Model m = gemm_model();
  m.proto().mutable_opset_import(0)->set_version(99);
  EXPECT_TRUE(contains(refusal<UnsupportedModel>(m),
                       "opset 99 of domain ai.onnx is newer than pathlift reads (up to 18)"));
  m.proto().mutable_opset_import(0)->set_domain("ai.onnx.ml");
  EXPECT_TRUE(contains(refusal<FormatError>(m), "imports no opset of the default domain"));
}

TEST(Onnx28, WeightsMustBeFloatingPoint) {
  for (const int type : {TensorProto::INT64, TensorProto::INT32, TensorProto::FLOAT16}) {
    Model m;
    m.init("w", {3, 4}, std::vector<double>(12, 1.0), type);
    m.weights("b", {3});
    attr(m.node("Gemm", {"x", "w", "b"}, {"y"}, "fc"), "transB", 1);
    m.output("y");
    EXPECT_TRUE(contains(refusal<NetworkError>(m),
                         "ONNX node 'fc' (Gemm): weight 'w' has data "
                         "type "))
        << type;
    EXPECT_TRUE(contains(refusal<NetworkError>(m),
                         "weights must be floating point (FLOAT or "
                         "DOUBLE)"));
  }
}

TEST(Onnx28, MessagesNameTheNodeAndUseOnnxAxes) {
  const Model rank1 = conv_model_with_rank1_weight();
  EXPECT_TRUE(contains(refusal<NetworkError>(rank1),
                       "ONNX node 'conv' (Conv): weight 'w' of shape {54} has rank 1: a Conv "
                       "weight has rank 3 (1-D convolution) or 4 (2-D)"));
  NodeProto* conv = nullptr;
  Model bias = conv_model(&conv);
  bias.graph().mutable_initializer(1)->add_dims(1);
  bias.graph().mutable_initializer(1)->add_dims(1);
  EXPECT_TRUE(contains(refusal<NetworkError>(bias),
                       "bias 'b' has shape {3, 1, 1}: a Conv bias has one entry per output "
                       "channel, shape {3}"));
  Model cat({2, 3, 3});
  attr(cat.node("Concat", {"x", "x"}, {"y"}, "cat"), "axis", 5);
  cat.output("y");
  EXPECT_TRUE(contains(refusal<NetworkError>(cat),
                       "ONNX node 'cat' (Concat): axis 5 is out of range for inputs of rank 4"));
  cat.graph().mutable_node(0)->mutable_attribute(0)->set_i(-4);
  EXPECT_TRUE(contains(refusal<UnsupportedModel>(cat), "along the batch dimension (axis -4)"));
  cat.graph().mutable_node(0)->mutable_attribute(0)->set_i(-3);  // channels
  EXPECT_EQ(cat.parse().layers[1].axis, 0);
  // A non-finite weight: the initializer and the entry.
  Model nan = gemm_model();
  nan.graph().mutable_initializer(0)->set_float_data(1, std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(
      contains(refusal<NetworkError>(nan), "ONNX initializer 'w' entry 1 is not finite: nan"));
  // A batch norm whose variance + epsilon is not positive: the node.
  Model bn({2, 3, 3});
  bn.weights("scale", {2});
  bn.weights("B", {2});
  bn.init("mean", {2}, {0, 0});
  bn.init("var", {2}, {1, -1});
  bn.node("BatchNormalization", {"x", "scale", "B", "mean", "var"}, {"y"}, "bn");
  bn.output("y");
  EXPECT_TRUE(contains(refusal<NetworkError>(bn),
                       "ONNX node 'bn' (BatchNormalization): channel 1 "
                       "has running mean 0 and running variance -1"));
}

TEST(Onnx28, EveryProblemIsListedAtOnce) {
  // Unsupported operations after one another, a linear Upsample after an unsupported one,
  // and an invalid Conv: one UnsupportedModel listing all, no crash.
  Model m = conv_model_with_rank1_weight();
  m.node("Sigmoid", {"x"}, {"s"}, "sig");
  m.node("Tanh", {"s"}, {"t"}, "tanh");
  attr(m.node("Upsample", {"t"}, {"p"}, "up"), "mode", std::string("linear"));
  m.output("p");
  const std::string msg = refusal<UnsupportedModel>(m);
  EXPECT_TRUE(
      contains(msg,
               "2 problems:\n  - unsupported operations: Sigmoid at 'sig' (not positively "
               "homogeneous: f(a x) = a f(x) fails for some a > 0), Tanh at 'tanh' (not positively "
               "homogeneous: f(a x) = a f(x) fails for some a > 0), Upsample at 'up' (mode linear: "
               "pathlift reads mode nearest (a copy "
               "of entries) and, in Resize from opset 11, mode linear (PyTorch's linear and "
               "bilinear interpolation)) (the ONNX operators pathlift reads: Add, "));
  EXPECT_TRUE(contains(msg,
                       ", Upsample)\n  - ONNX node 'conv' (Conv): weight 'w' of shape {54} has "
                       "rank 1"));
}

TEST(Onnx, AnActivationThatIsNotHomogeneousSaysSoAnUnknownOperatorDoesNot) {
  Model m = conv_model_with_rank1_weight();
  m.node("Gelu", {"x"}, {"g"}, "gelu");
  m.node("Softmax", {"g"}, {"s"}, "softmax");
  m.node("Hardmax", {"s"}, {"h"}, "hardmax");
  m.output("h");
  const std::string msg = refusal<UnsupportedModel>(m);
  EXPECT_TRUE(
      contains(msg,
               "Gelu at 'gelu' (not positively homogeneous: f(a x) = a f(x) fails for some a "
               "> 0), Softmax at 'softmax' (not positively homogeneous: f(a x) = a f(x) "
               "fails for some a > 0), Hardmax at 'hardmax' (the ONNX operators pathlift "
               "reads: Add, "))
      << msg;
}

TEST(Onnx, TheOperatorTableIsOneSortedListAndTheRefusalNamesIt) {
  const std::vector<OnnxOperator> ops = onnx_operators();
  ASSERT_FALSE(ops.empty());
  std::string names;
  for (std::size_t k = 0; k < ops.size(); ++k) {
    if (k > 0) {
      EXPECT_LT(ops[k - 1].name, ops[k].name) << "sorted and unique: the lookup bisects";
    }
    EXPECT_LE(ops[k].first_opset, ops[k].last_opset) << ops[k].name;
    EXPECT_FALSE(ops[k].becomes.empty()) << ops[k].name;
    names += (k > 0 ? ", " : "") + ops[k].name;
  }
  const std::string msg =
      error_of<UnsupportedModel>([] { (void)read_onnx(data_file("unsupported.onnx")); });
  EXPECT_TRUE(contains(msg, "(the ONNX operators pathlift reads: " + names + ")")) << msg;
  // An operator of the table refused for its attributes does not list the table.
  NodeProto* conv = nullptr;
  Model m = conv_model(&conv);
  attr(m.node("Resize", {"y"}, {"p"}, "up"), "mode", std::string("cubic"));
  m.output("p");
  const std::string known = refusal<UnsupportedModel>(m);
  EXPECT_TRUE(contains(known, "Resize at 'up' (mode cubic")) << known;
  EXPECT_FALSE(contains(known, "operators pathlift reads")) << known;
}

TEST(Onnx28, ShapeComputationsAreEvaluated) {
  // Reshape targets built from Shape, Gather, Slice, Cast, Squeeze, Unsqueeze, Concat,
  // ConstantOfShape, Mul and Div: each a flatten of {2, 3} to (batch, 6).
  const auto flatten_by = [](const std::function<std::string(Model&)>& target) {
    Model m({2, 3});
    m.node("Relu", {"x"}, {"r"}, "relu");
    m.node("Reshape", {"r", target(m)}, {"y"}, "reshape");
    m.output("y");
    return m;
  };
  const Model view = flatten_by([](Model& m) {  // torch: x.view(x.size(0), -1)
    m.node("Shape", {"r"}, {"s"});
    m.init("zero", {}, {0}, TensorProto::INT64);
    m.node("Gather", {"s", "zero"}, {"n"});
    m.constant("axes", {0});
    m.node("Unsqueeze", {"n", "axes"}, {"n1"});
    m.constant("rest", {-1});
    attr(m.node("Concat", {"n1", "rest"}, {"t"}), "axis", 0);
    return std::string("t");
  });
  EXPECT_EQ(view.parse().layers.back().kind, LayerKind::flatten);
  const Model product = flatten_by([](Model& m) {  // Mul of the sizes, Cast, Slice, Squeeze
    m.node("Shape", {"r"}, {"s"});
    m.constant("one", {1});
    m.constant("big", {0})
        .mutable_attribute(0)
        ->mutable_t()
        ->set_int64_data(0, std::numeric_limits<std::int64_t>::max());  // torch's "to the end"
    m.node("Slice", {"s", "one", "big"}, {"dims"});                     // [2, 3]
    m.constant("i0", {0});
    m.constant("i1", {1});
    m.node("Gather", {"dims", "i0"}, {"d0"});
    m.node("Gather", {"dims", "i1"}, {"d1"});
    m.node("Mul", {"d0", "d1"}, {"f"});  // [6]
    attr(m.node("Cast", {"f"}, {"ff"}), "to", std::int64_t{TensorProto::INT32});
    m.node("Shape", {"x"}, {"s2"});
    m.constant("from", {0});
    m.node("Slice", {"s2", "from", "one"}, {"b"});  // [batch]
    m.node("Div", {"ff", "i1"}, {"f2"});
    attr(m.node("Cast", {"b"}, {"b32"}), "to", std::int64_t{TensorProto::INT32});
    attr(m.node("Concat", {"b32", "f2"}, {"t"}), "axis", 0);
    return std::string("t");
  });
  EXPECT_EQ(product.parse().layers.back().kind, LayerKind::flatten);
  const Model filled = flatten_by([](Model& m) {  // ConstantOfShape([2]) of 1, then -1 * ...
    m.constant("n", {2});
    auto& c = m.node("ConstantOfShape", {"n"}, {"ones"});
    auto* a = c.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(TensorProto::INT64);
    a->mutable_t()->add_dims(1);
    a->mutable_t()->add_int64_data(-1);
    m.constant("first", {1});
    m.node("Mul", {"ones", "first"}, {"t"});  // [-1, -1]: not a flatten
    return std::string("t");
  });
  EXPECT_TRUE(contains(refusal<UnsupportedModel>(filled),
                       "Reshape at 'reshape' (not a flatten of the input of per-sample shape "
                       "{2, 3} to (batch, 6): shape [-1, -1])"));
  const Model batch_sum = flatten_by([](Model& m) {
    m.node("Shape", {"r"}, {"s"});
    m.constant("one", {1});
    m.node("Add", {"s", "one"}, {"t"});
    return std::string("t");
  });
  EXPECT_TRUE(
      contains(refusal<UnsupportedModel>(batch_sum), "Add at 't' (arithmetic on the batch size)"));
}

}  // namespace issue28

// --- issue 32: the weights read in place -------------------------------------------------------

namespace issue32 {

using issue28::Model;
using onnx::TensorProto;
using testing::TempPath;

/// How an initializer stores its values.
enum class Form { raw_float, raw_double, float_list, double_list };

/// `values` as raw_data of `T` (little-endian, ONNX's byte order on this machine).
template <class T>
std::string raw_of(const std::vector<double>& values) {
  std::string out(values.size() * sizeof(T), '\0');
  for (std::size_t k = 0; k < values.size(); ++k) {
    const auto x = static_cast<T>(values[k]);
    std::memcpy(out.data() + k * sizeof(T), &x, sizeof(T));
  }
  return out;
}

/// Stores `values` in t as `form`.
void store(TensorProto& t, const std::vector<double>& values, Form form) {
  t.clear_float_data();
  t.clear_double_data();
  t.clear_raw_data();
  const bool single = form == Form::raw_float || form == Form::float_list;
  t.set_data_type(single ? TensorProto::FLOAT : TensorProto::DOUBLE);
  for (const double v : values) {
    if (form == Form::float_list) {
      t.add_float_data(static_cast<float>(v));
    } else if (form == Form::double_list) {
      t.add_double_data(v);
    }
  }
  if (form == Form::raw_float) {
    t.set_raw_data(raw_of<float>(values));
  } else if (form == Form::raw_double) {
    t.set_raw_data(raw_of<double>(values));
  }
}

/// 0.1 (k + 1) with alternating signs: values float does not hold exactly.
std::vector<double> values(std::size_t n, double scale) {
  std::vector<double> v;
  for (std::size_t k = 0; k < n; ++k) {
    v.push_back(scale * 0.1 * static_cast<double>(k + 1) * (k % 2 == 0 ? 1 : -1));
  }
  return v;
}

/// x {4} -> Gemm (w (3, 4) as stored, bias b) -> Relu -> MatMul (v (3, 2), stored (in, out))
/// -> y, every weight stored as `form`; `theta` gets what pathlift's theta must be: w, b and v
/// transposed to (out, in), each value as the form holds it.
Model two_layers(Form form, std::vector<double>& theta) {
  Model m;
  const std::vector<double> w = values(12, 1);
  const std::vector<double> b = values(3, 3);
  const std::vector<double> v = values(6, 7);
  store(m.init("w", {3, 4}, {}), w, form);
  store(m.init("b", {3}, {}), b, form);
  store(m.init("v", {3, 2}, {}), v, form);
  issue28::attr(m.node("Gemm", {"x", "w", "b"}, {"h"}, "fc1"), "transB", 1);
  m.node("Relu", {"h"}, {"r"}, "relu");
  m.node("MatMul", {"r", "v"}, {"y"}, "fc2");
  m.output("y");
  const bool single = form == Form::raw_float || form == Form::float_list;
  const auto as_stored = [&](double x) {
    return single ? static_cast<double>(static_cast<float>(x)) : x;
  };
  theta.clear();
  for (const auto* block : {&w, &b}) {
    for (const double x : *block) {
      theta.push_back(as_stored(x));
    }
  }
  for (std::size_t o = 0; o < 2; ++o) {
    for (std::size_t i = 0; i < 3; ++i) {
      theta.push_back(as_stored(v[i * 2 + o]));
    }
  }
  return m;
}

/// The bytes written to a fresh file.
struct ModelFile {
  explicit ModelFile(const std::string& bytes, const std::string& name = "model.onnx")
      : path(name) {
    std::ofstream(path.str(), std::ios::binary) << bytes;
  }
  TempPath path;
};

/// The bytes of a file.
std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

TEST(Onnx32, WeightsAreReadAsStoredFromAFileAndFromBytes) {
  for (const Form form : {Form::raw_float, Form::raw_double, Form::float_list, Form::double_list}) {
    std::vector<double> theta;
    const Model m = two_layers(form, theta);
    const std::string bytes = m.bytes();
    const ModelFile file(bytes);
    const LayerGraph from_bytes = parse_onnx(bytes);
    const LayerGraph from_file = read_onnx(file.path.str());
    const pathlift::Model loaded = load_model(file.path.str());
    ASSERT_TRUE(from_bytes.weights.has_value());
    EXPECT_EQ(testing::bits(*from_bytes.weights), testing::bits(theta))
        << "form " << static_cast<int>(form);
    EXPECT_EQ(from_file, from_bytes) << "form " << static_cast<int>(form);
    ASSERT_TRUE(loaded.has_weights());
    EXPECT_EQ(testing::bits(loaded.weights()), testing::bits(theta));
  }
}

TEST(Onnx32, CommittedModelsReadTheSameFromAFileAndFromBytes) {
  const std::vector<std::pair<std::string, std::vector<Index>>> models = {
      {"lenet5.onnx", {}},
      {"conv1d.onnx", {}},
      {"aliases.onnx", {}},
      {"residual.onnx", {3, 16, 16}},
      {"onnx_auto_pad.onnx", {}},
      {"onnx_avgpool_pad.onnx", {}},
      {"onnx_bn_folded.onnx", {}},
      {"onnx_flatten_mul.onnx", {}},
      {"onnx_flatten_view.onnx", {}},
      {"onnx_linear_nobias.onnx", {}}};
  for (const auto& [name, shape] : models) {
    const std::string bytes = bytes_of(data_file(name));
    ASSERT_FALSE(bytes.empty()) << name;
    EXPECT_EQ(read_onnx(data_file(name), shape), parse_onnx(bytes, shape)) << name;
  }
}

TEST(Onnx32, RawDataOfTheWrongLengthIsRefusedNamingTheTensor) {
  for (const int delta : {-4, -1, 4}) {
    std::vector<double> theta;
    Model m = two_layers(Form::raw_float, theta);
    TensorProto& w = *m.graph().mutable_initializer(0);
    w.set_raw_data(std::string(static_cast<std::size_t>(48 + delta), '\0'));
    const std::string want = fmt::format(
        "tensor 'w' of dims {{3, 4}} (FLOAT) has {} bytes of data, not 12 x 4", 48 + delta);
    const ModelFile file(m.bytes());
    EXPECT_TRUE(contains(error_of<FormatError>([&] { (void)parse_onnx(m.bytes()); }), want));
    EXPECT_TRUE(contains(error_of<FormatError>([&] { (void)read_onnx(file.path.str()); }), want));
  }
}

TEST(Onnx32, ATruncatedModelIsRefusedNamingTheInitializerItCuts) {
  std::vector<double> theta;
  const Model m = two_layers(Form::raw_double, theta);
  const std::string bytes = m.bytes();
  // Cut in the middle of v's raw data (the last initializer: its 48 bytes).
  const std::string v_raw = raw_of<double>(values(6, 7));
  const std::size_t at = bytes.find(v_raw);
  ASSERT_NE(at, std::string::npos);
  const std::string cut = bytes.substr(0, at + 20);
  const ModelFile file(cut);
  for (const std::string& message :
       {error_of<FormatError>([&] { (void)parse_onnx(cut); }),
        error_of<FormatError>([&] { (void)read_onnx(file.path.str()); })}) {
    EXPECT_TRUE(
        contains(message, "not an ONNX model (initializer 2 'v': its raw data of 48 bytes"));
    EXPECT_TRUE(contains(message, fmt::format("runs past the end of the model ({} bytes): the "
                                              "model is truncated",
                                              at + 20)));
  }
  // Cut anywhere: a pathlift error, never a crash.
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_THROW((void)parse_onnx(bytes.substr(0, n)), FormatError) << "cut at " << n;
  }
}

TEST(Onnx32, WeightsOverTheMemoryLimitAreRefusedBeforeTheyAreAllocated) {
  std::vector<double> theta;
  const Model m = two_layers(Form::raw_float, theta);  // d = 21: 168 bytes of doubles
  const std::string message = error_of<TooLarge>(
      [&] { (void)parse_onnx(m.bytes(), {}, EngineOptions{.max_memory = 160}); });
  EXPECT_TRUE(contains(message,
                       "the ONNX model's weights (d = 21 in 3 tensors, kept as "
                       "doubles) needs 168 B"));
  EXPECT_TRUE(contains(message, "over the memory limit of 160 B"));
  EXPECT_EQ(parse_onnx(m.bytes(), {}, EngineOptions{.max_memory = 168}).num_params, 21);
}

}  // namespace issue32

// --- issue 31: ceil_mode, ConvTranspose, Resize, copy paddings, Slice / Split, views, reductions,
// Clip and scales (what PyTorch 1.13 does not export: other opsets, modes and refusals) --------

namespace issue31 {

using issue28::attr;
using issue28::Model;
using issue28::refusal;
using onnx::NodeProto;
using onnx::TensorProto;

void floats_attr(NodeProto& n, const std::string& name, std::vector<float> v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOATS);
  for (const float x : v) {
    a->add_floats(x);
  }
}

void float_attr(NodeProto& n, const std::string& name, float v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

/// The gather layers' (axis, indices).
std::vector<std::pair<Index, std::vector<Index>>> gathers(const LayerGraph& g) {
  std::vector<std::pair<Index, std::vector<Index>>> out;
  for (const Layer& l : g.layers) {
    if (l.kind == LayerKind::gather) {
      out.emplace_back(l.axis, l.indices);
    }
  }
  return out;
}

using Picks = std::vector<std::pair<Index, std::vector<Index>>>;

/// x {1, 1, in} -> Resize with `mode`, `rounding` and scales [1, 1, 1, scale] or sizes
/// [1, 1, 1, size] -> y.
Model resize_model(Index in, double scale, Index size, const std::string& mode,
                   const std::string& rounding) {
  Model m({1, 1, in});
  NodeProto* r = nullptr;
  if (size > 0) {
    m.constant("sizes", {1, 1, 1, static_cast<double>(size)});
    r = &m.node("Resize", {"x", "", "", "sizes"}, {"y"}, "resize");
  } else {
    m.constant("scales", {1, 1, 1, scale}, TensorProto::FLOAT);
    r = &m.node("Resize", {"x", "", "scales"}, {"y"}, "resize");
  }
  attr(*r, "coordinate_transformation_mode", mode);
  attr(*r, "nearest_mode", rounding);
  m.output("y");
  return m;
}

TEST(Onnx31, ResizeFollowsTheCoordinateTransformationExactly) {
  // half_pixel, round_prefer_floor: x = (o + 1/2) / 2 - 1/2, the ties (0.25 + k/2 never tie).
  EXPECT_EQ(gathers(resize_model(3, 2, 0, "half_pixel", "round_prefer_floor").parse()),
            (Picks{{2, {0, 0, 1, 1, 2, 2}}}));
  // align_corners on 3 -> 5: x = o / 2, ties at 0.5 and 1.5 broken down, then up.
  EXPECT_EQ(gathers(resize_model(3, 0, 5, "align_corners", "round_prefer_floor").parse()),
            (Picks{{2, {0, 0, 1, 1, 2}}}));
  EXPECT_EQ(gathers(resize_model(3, 0, 5, "align_corners", "round_prefer_ceil").parse()),
            (Picks{{2, {0, 1, 1, 2, 2}}}));
  EXPECT_EQ(gathers(resize_model(5, 0, 2, "asymmetric", "ceil").parse()),
            (Picks{{2, {0, 3}}}));  // x = o 5/2
  EXPECT_EQ(gathers(resize_model(3, 0, 1, "pytorch_half_pixel", "floor").parse()),
            (Picks{{2, {0}}}));
  // PyTorch's nearest: asymmetric, floor; the scale 1.5 gives 4 entries and the same picks
  // whether the scale is 1.5 (the runtimes) or 4 / 3 (the specification).
  EXPECT_EQ(gathers(resize_model(3, 1.5, 0, "asymmetric", "floor").parse()),
            (Picks{{2, {0, 0, 1, 2}}}));
  // 1.3 on 5: 6 entries, entry 5 from floor(5 / 1.3) = 3 or floor(5 5 / 6) = 4: refused.
  EXPECT_TRUE(contains(refusal<UnsupportedModel>(resize_model(5, 1.3, 0, "asymmetric", "floor")),
                       "Resize at 'resize' (scale 1.2999999523162842 on dimension 3 of size 5: an "
                       "output of 6 entries, whose entry 5 ONNX's specification (scale = 6 / 5) "
                       "and the runtimes (scale = 1.2999999523162842) take from different input "
                       "entries)"));
  EXPECT_TRUE(
      contains(refusal<UnsupportedModel>(resize_model(3, 2, 0, "tf_crop_and_resize", "floor")),
               "Resize at 'resize' (coordinate_transformation_mode tf_crop_and_resize)"));
  EXPECT_TRUE(contains(refusal<NetworkError>(resize_model(3, 2, 0, "asymmetric", "nearest")),
                       "nearest_mode 'nearest' is not round_prefer_floor"));
  Model cubic = resize_model(3, 2, 0, "asymmetric", "floor");
  attr(*cubic.graph().mutable_node(1), "mode", std::string("cubic"));
  EXPECT_TRUE(contains(refusal<UnsupportedModel>(cubic),
                       "Resize at 'resize' (mode cubic: pathlift reads mode nearest (a copy "
                       "of entries) and, in Resize from opset 11, mode linear"));
}

TEST(Onnx31, ResizeKeepsTheAxesOfScaleOne) {
  // Issue 50: tf_half_pixel_for_nn with nearest_mode ceil reads (o + 1/2) / s rounded up, so an
  // axis of scale 1 (the channels, the height here) was shifted by one entry; the runtimes (ONNX
  // Runtime, the ONNX reference) keep such an axis as it is. Only the width is resized: x =
  // (o + 1/2) / 2 rounded up, clamped to 3.
  for (const std::string rounding : {"ceil", "round_prefer_ceil"}) {
    Model m({2, 3, 4});
    m.constant("scales", {1, 1, 1, 2}, TensorProto::FLOAT);
    NodeProto& r = m.node("Resize", {"x", "", "scales"}, {"y"}, "resize");
    attr(r, "coordinate_transformation_mode", std::string("tf_half_pixel_for_nn"));
    attr(r, "nearest_mode", rounding);
    m.output("y");
    // ceil(x); round_prefer_ceil: floor(x + 1/2).
    const Picks want = rounding == "ceil" ? Picks{{2, {1, 1, 2, 2, 3, 3, 3, 3}}}
                                          : Picks{{2, {0, 1, 1, 2, 2, 3, 3, 3}}};
    EXPECT_EQ(gathers(m.parse()), want) << rounding;
  }
}

TEST(Onnx31, ResizeAxesAndUpsample) {
  Model axes({1, 2, 3}, 18);  // opset 18: the scales of the listed axes only
  axes.constant("scales", {3, 2}, TensorProto::FLOAT);
  NodeProto& r = axes.node("Resize", {"x", "", "scales"}, {"y"}, "resize");
  attr(r, "axes", std::vector<std::int64_t>{-1, 2});
  attr(r, "coordinate_transformation_mode", std::string("asymmetric"));
  attr(r, "nearest_mode", std::string("floor"));
  axes.output("y");
  EXPECT_EQ(gathers(axes.parse()), (Picks{{2, {0, 0, 0, 1, 1, 1, 2, 2, 2}}, {1, {0, 0, 1, 1}}}));
  Model up({1, 2, 2}, 7);  // Upsample 7: the scales an attribute, each entry repeated
  floats_attr(up.node("Upsample", {"x"}, {"y"}, "up"), "scales", {1, 1, 2, 1});
  up.output("y");
  EXPECT_EQ(gathers(up.parse()), (Picks{{1, {0, 0, 1, 1}}}));
  Model half({1, 2, 2}, 9);
  half.constant("scales", {1, 1, 1.5, 1}, TensorProto::FLOAT);
  half.node("Upsample", {"x", "scales"}, {"y"}, "up");
  half.output("y");
  EXPECT_TRUE(contains(refusal<UnsupportedModel>(half),
                       "pathlift reads Upsample with integer "
                       "scales"));
}

/// x {2, 3} (1-D) -> ConvTranspose (2 -> 3 channels, kernel 4) with the caller's attributes.
Model conv_transpose_model(NodeProto** node) {
  Model m({2, 3});
  m.weights("w", {2, 3, 4});
  m.weights("b", {3});
  *node = &m.node("ConvTranspose", {"x", "w", "b"}, {"y"}, "up");
  attr(**node, "strides", std::vector<std::int64_t>{2});
  m.output("y");
  return m;
}

TEST(Onnx31, ConvTransposePadsFromPadsOutputShapeOrAutoPad) {
  NodeProto* n = nullptr;
  Model pads = conv_transpose_model(&n);
  attr(*n, "pads", std::vector<std::int64_t>{1, 1});
  const LayerGraph g = pads.parse();
  ASSERT_EQ(g.layers[1].kind, LayerKind::conv_transpose);
  EXPECT_EQ(g.layers[1].out_channels, 3);
  EXPECT_EQ(g.layers[1].padding, (std::vector<Index>{1}));
  EXPECT_EQ(layer_shapes(g)[1], (std::vector<Index>{3, 6}));  // (3 - 1) 2 - 2 + 4
  EXPECT_EQ(g.num_params, 27);                                // w as stored, then b
  Model shaped = conv_transpose_model(&n);                    // total 2 (3 - 1) + 4 - 6
  attr(*n, "output_shape", std::vector<std::int64_t>{6});
  EXPECT_EQ(shaped.parse().layers[1], g.layers[1]);
  Model same = conv_transpose_model(&n);  // output 3 x 2: total 4 - 2
  attr(*n, "auto_pad", std::string("SAME_UPPER"));
  EXPECT_EQ(same.parse().layers[1].padding, (std::vector<Index>{1}));
  Model odd = conv_transpose_model(&n);
  attr(*n, "output_shape", std::vector<std::int64_t>{1, 3, 7});
  EXPECT_TRUE(contains(refusal<UnsupportedModel>(odd),
                       "ConvTranspose at 'up' (asymmetric padding (1 before, 0 after) in spatial "
                       "dimension 0)"));
  Model disagree = conv_transpose_model(&n);
  attr(*n, "output_shape", std::vector<std::int64_t>{6});
  attr(*n, "pads", std::vector<std::int64_t>{0, 0});
  EXPECT_TRUE(contains(refusal<UnsupportedModel>(disagree),
                       "ConvTranspose at 'up' (output_shape [6] and pads [0, 0] disagree)"));
  Model lopsided = conv_transpose_model(&n);
  attr(*n, "pads", std::vector<std::int64_t>{1, 2});
  EXPECT_TRUE(contains(refusal<UnsupportedModel>(lopsided), "asymmetric padding"));
}

TEST(Onnx31, PadSplitReduceAndClipOfEveryOpset) {
  Model edge({1, 2, 3}, 18);  // Pad 18: the axes an input
  edge.constant("pads", {1, 2});
  edge.constant("axes", {-1});
  attr(edge.node("Pad", {"x", "pads", "", "axes"}, {"y"}, "pad"), "mode", std::string("edge"));
  edge.output("y");
  EXPECT_EQ(gathers(edge.parse()), (Picks{{2, {0, 0, 1, 2, 2, 2}}}));
  Model reflect({1, 2, 3});
  reflect.constant("pads", {0, 0, 0, 1, 0, 0, 0, 3});
  attr(reflect.node("Pad", {"x", "pads"}, {"y"}, "pad"), "mode", std::string("reflect"));
  reflect.output("y");
  EXPECT_TRUE(contains(refusal<UnsupportedModel>(reflect),
                       "Pad at 'pad' (reflect pads [0, 0, 0, 1, 0, 0, 0, 3] of 3 or more on "
                       "dimension 3 of size 3"));
  Model split({7, 2}, 18);  // num_outputs: the last part smaller
  NodeProto& s = split.node("Split", {"x"}, {"a", "b", "c"}, "split");
  attr(s, "axis", 1);
  attr(s, "num_outputs", 3);
  split.output("a");
  split.output("c");
  EXPECT_EQ(gathers(split.parse()), (Picks{{0, {0, 1, 2}}, {0, {6}}}));
  Model mean({3, 4, 5}, 18);  // ReduceMean 18: the axes an input
  mean.constant("axes", {3, 2});
  attr(mean.node("ReduceMean", {"x", "axes"}, {"y"}, "mean"), "keepdims", 0);
  mean.output("y");
  const LayerGraph g = mean.parse();
  EXPECT_EQ(g.layers[1].kind, LayerKind::adaptive_avg_pool);
  EXPECT_EQ(g.layers[2].kind, LayerKind::flatten);
  Model clip({3}, 6);  // Clip 6: the bounds attributes
  float_attr(clip.node("Clip", {"x"}, {"y"}, "clip"), "min", 0);
  clip.output("y");
  EXPECT_EQ(clip.parse().layers[1].activation, Activation::relu());
  float_attr(*clip.graph().mutable_node(0), "max", 6);
  EXPECT_TRUE(contains(refusal<UnsupportedModel>(clip),
                       "Clip at 'clip' (min 0, max 6: a clamp other than min = 0 without max (a "
                       "ReLU) is not positively homogeneous)"));
}

TEST(Onnx31, ReshapesAndTransposesAreGathersOrRefusedNamingTheirNode) {
  // A channel shuffle of 4 channels in 2 groups, written with 0 (copy) and -1 (inferred).
  Model shuffle({4, 1, 2});
  shuffle.constant("split", {0, 2, 2, 1, 2});
  shuffle.node("Reshape", {"x", "split"}, {"r"}, "r");
  attr(shuffle.node("Transpose", {"r"}, {"t"}, "t"), "perm",
       std::vector<std::int64_t>{0, 2, 1, 3, 4});
  shuffle.constant("back", {0, -1, 1, 2});
  shuffle.node("Reshape", {"t", "back"}, {"y"}, "back");
  shuffle.output("y");
  EXPECT_EQ(gathers(shuffle.parse()), (Picks{{0, {0, 2, 1, 3}}}));
  Model mixed({4, 1, 2});
  mixed.constant("to", {0, 2, 2, 2});
  mixed.node("Reshape", {"x", "to"}, {"r"}, "r");
  mixed.node("Relu", {"r"}, {"y"}, "relu");
  mixed.output("y");
  EXPECT_TRUE(contains(refusal<UnsupportedModel>(mixed),
                       "Reshape at 'r' (not a flatten: the entries of 'x' (per-sample shape {4, "
                       "1, 2}) as per-sample shape {2, 2, 2}, read by 'relu' (Relu); pathlift"));
  Model batch({4, 1, 2});
  attr(batch.node("Transpose", {"x"}, {"y"}, "t"), "perm", std::vector<std::int64_t>{1, 0, 2, 3});
  batch.output("y");
  EXPECT_TRUE(contains(refusal<UnsupportedModel>(batch),
                       "Transpose at 't' (perm [1, 0, 2, 3] moves the batch dimension)"));
}

TEST(Onnx31, MulAndDivByAConstantAreScales) {
  Model m = issue28::gemm_model();
  m.graph().mutable_output(0)->set_name("z");
  m.init("c", {}, {2.5});
  m.node("Div", {"y", "c"}, {"z"}, "half");
  const LayerGraph g = m.parse();
  ASSERT_EQ(g.layers[2].kind, LayerKind::scale);
  EXPECT_EQ(g.layers[2].factor, 0.4);
  EXPECT_EQ(g.num_params, 15);  // the constant is not a parameter
  Model zero = issue28::gemm_model();
  zero.graph().mutable_output(0)->set_name("z");
  zero.init("c", {1}, {0});
  zero.node("Div", {"y", "c"}, {"z"}, "inf");
  EXPECT_TRUE(contains(refusal<UnsupportedModel>(zero),
                       "Div at 'inf' (a division by 0: the factor is not finite)"));
}

}  // namespace issue31

}  // namespace
}  // namespace pathlift
