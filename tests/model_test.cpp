// Model and load_model (model.hpp) and the path-free functions of a Model (path_free.hpp):
// every format recognised, a layer graph never unrolled by the path-free functions and unrolled
// once, explicitly, for the rest; results equal on the layer graph and on its DAG.

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "pathlift/builtins.hpp"
#include "pathlift/error.hpp"
#include "pathlift/io.hpp"
#include "pathlift/model.hpp"
#include "pathlift/path_free.hpp"
#include "support.hpp"
#include "tests/layers_builder.hpp"

namespace pathlift {
namespace {

using testing::contains;
using testing::data_file;
using testing::error_of;

/// A small CNN with a skip, a batch norm and a pool, and weights.
LayerGraph small_cnn() {
  testing::GraphBuilder b({2, 6, 6});
  const Index c1 = b.conv("c1", 0, 3, {3, 3}, {}, {1, 1});
  const Index bn = b.batch_norm("bn", c1);
  const Index r1 = b.act("r1", bn);
  const Index c2 = b.conv("c2", r1, 3, {3, 3}, {}, {1, 1});
  const Index sum = b.op(LayerKind::add, "sum", {c2, r1});
  const Index r2 = b.act("r2", sum);
  const Index pool = b.pool(LayerKind::avg_pool, "pool", r2, {2, 2});
  const Index flat = b.op(LayerKind::flatten, "flat", {pool});
  LayerGraph g = b.graph({b.linear("fc", flat, 2)});
  g.weights = normal_weights(g.num_params, 7);
  return g;
}

TEST(Model, ALayerGraphIsUnrolledOnceAndOnlyWhenAsked) {
  const Model m(small_cnn());
  ASSERT_TRUE(m.is_layer_graph());
  EXPECT_EQ(m.dag(), nullptr);
  EXPECT_FALSE(m.is_unrolled());
  const UnrolledSize size = m.size();  // counted without unrolling
  const std::vector<double> theta(m.weights().begin(), m.weights().end());
  (void)path_norm(m, theta, 2.0);
  (void)kernel_diagonal(m, theta);
  (void)count_paths(m);
  EXPECT_FALSE(m.is_unrolled());
  const auto dag = m.unrolled();
  EXPECT_TRUE(m.is_unrolled());
  EXPECT_EQ(dag.get(), m.unrolled().get());  // kept
  EXPECT_EQ(size.nodes, dag->num_nodes());
  EXPECT_EQ(size.edges, dag->num_edges());
  const Model copy = m;  // copies share the DAG
  EXPECT_EQ(copy.unrolled().get(), dag.get());
  EXPECT_THROW((void)Model(small_cnn()).unrolled({.max_memory = 1000}), TooLarge);
}

TEST(Model, PathFreeFunctionsAnswerAsOnTheDag) {
  const Model layers(small_cnn());
  const Model dag(layers.unrolled());
  const std::vector<double> theta(layers.weights().begin(), layers.weights().end());
  for (const double s : {0.5, 1.0, 2.0}) {
    const double a = path_norm(layers, theta, s).norm.log10();
    const double b = path_norm(dag, theta, s).norm.log10();
    EXPECT_NEAR(a, b, 1e-12 * std::abs(b)) << s;
  }
  const PathNorm per_input = path_norm(layers, theta, 1.0, PathNormDetail::inputs_and_outputs);
  EXPECT_EQ(per_input.per_input.size(), dag.dag()->inputs().size());
  const Buffer<double> da = kernel_diagonal(layers, theta);
  const Buffer<double> db = kernel_diagonal(dag, theta);
  ASSERT_EQ(da.size(), db.size());
  for (std::size_t k = 0; k < da.size(); ++k) {
    EXPECT_NEAR(da[k], db[k], 1e-12 * (1 + std::abs(db[k]))) << k;
  }
  const std::vector<double> ga = path_norm_gradient(layers, theta, 2.0);
  const std::vector<double> gb = path_norm_gradient(dag, theta, 2.0);
  for (std::size_t k = 0; k < ga.size(); ++k) {
    EXPECT_NEAR(ga[k], gb[k], 1e-12 * (1 + std::abs(gb[k]))) << k;
  }
  EXPECT_EQ(count_paths_total(layers), count_paths_total(dag));
  EXPECT_EQ(count_paths(layers).paths, count_paths(dag).paths);
}

TEST(Model, LoadModelReadsEveryFormat) {
  const testing::TempDir dir("model_test_dir");
  const std::string layers = dir / "layers.json";
  std::ofstream(layers) << layer_graph_to_json(small_cnn());
  const Model a = load_model(layers);
  EXPECT_TRUE(a.is_layer_graph());
  EXPECT_EQ(*a.layer_graph(), small_cnn());

  const std::string network = dir / "net.json";
  write_network(fig1(), network);
  const Model b = load_model(network);
  ASSERT_NE(b.dag(), nullptr);
  EXPECT_EQ(b.dag()->num_edges(), fig1().num_edges());

  const Model c = load_model(data_file("lenet5.onnx"));
  EXPECT_TRUE(c.is_layer_graph());
  EXPECT_EQ(c.layer_graph()->input_shape, (std::vector<Index>{1, 28, 28}));

  EXPECT_EQ(model_format(R"(  {"format": "pathlift-layers"})"), ModelFormat::layers);
  EXPECT_EQ(model_format(R"({"version": 1, "format": "pathlift-network"})"), ModelFormat::network);
  EXPECT_EQ(model_format("\x08\x07"), ModelFormat::onnx);

  EXPECT_TRUE(contains(error_of<std::invalid_argument>([&] {
                         (void)load_model(layers, {.input_shape = {1, 2}});
                       }),
                       "an input shape is for ONNX models"));
  const std::string junk = dir / "junk.bin";
  std::ofstream(junk) << "not a model at all";
  EXPECT_TRUE(contains(error_of<FormatError>([&] { (void)load_model(junk); }), junk));
}

TEST(Model, ReadNetworkDoesNotUnrollALayerGraph) {
  const std::string msg =
      error_of<FormatError>([] { (void)parse_network(layer_graph_to_json(small_cnn())); });
  EXPECT_TRUE(contains(msg, "a pathlift-layers file (a layer graph)"));
  EXPECT_TRUE(contains(msg, "load_model"));
}

TEST(Model, ChecksThetaNamingTheEntry) {
  const Model m(small_cnn());
  std::vector<double> theta(m.weights().begin(), m.weights().end());
  EXPECT_TRUE(contains(error_of<std::invalid_argument>(
                           [&] { check_theta(m, std::span<const double>(theta).first(3)); }),
                       "theta has 3 entries but the network has"));
  theta[5] = INFINITY;
  EXPECT_TRUE(
      contains(error_of<std::invalid_argument>([&] { check_theta(m, theta); }), "theta[5]"));
}

}  // namespace
}  // namespace pathlift
