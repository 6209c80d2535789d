// Built-in networks (issue 2, item 5): the paper's three examples, feed-forward networks in
// PyTorch parameter order with the P, d, h of docs/conventions.md#feed-forward, builtin_network()
// names, random DAGs, the reproducible normal weights, and parse_layer_sizes.

#include "pathlift/builtins.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "pathlift/counting.hpp"
#include "pathlift/error.hpp"
#include "pathlift/io.hpp"
#include "reference.hpp"
#include "support.hpp"

namespace pathlift {
namespace {

using Names = std::vector<std::string>;
using testing::contains;
using testing::error_of;
using testing::expect_same_network;
using testing::names_of;
using EdgeLists = std::vector<std::vector<EdgeId>>;

/// The paths of the brute-force reference, as edge lists in canonical order.
EdgeLists ref_edge_lists(const Network& net) {
  EdgeLists out;
  for (const auto& p : testing::ref_paths(net)) {
    out.push_back(p.edges);
  }
  return out;
}

void expect_edges(const Network& net, const std::vector<std::pair<std::string, std::string>>& e) {
  ASSERT_EQ(net.num_edges(), static_cast<Index>(e.size()));
  for (EdgeId k = 0; k < net.num_edges(); ++k) {
    EXPECT_EQ(net.node_name(net.source(k)), e[static_cast<std::size_t>(k)].first) << "edge " << k;
    EXPECT_EQ(net.node_name(net.target(k)), e[static_cast<std::size_t>(k)].second) << "edge " << k;
  }
}

// ---------------------------------------------------------------------------------------------
// The paper's networks

TEST(Builtins, Fig1) {
  const Network net = fig1();
  expect_edges(
      net, {{"a", "d"}, {"a", "f"}, {"c", "d"}, {"c", "f"}, {"d", "h"}, {"f", "h"}, {"g", "h"}});
  EXPECT_EQ(names_of(net, net.inputs()), (Names{"a", "c", "g"}));
  EXPECT_EQ(names_of(net, net.bias_nodes()), (Names{"g"}));
  EXPECT_EQ(names_of(net, net.hidden()), (Names{"d", "f"}));
  EXPECT_EQ(names_of(net, net.outputs()), (Names{"h"}));
  EXPECT_EQ(count_paths_total(net).value(), 5U);  // P
  EXPECT_EQ(net.num_edges(), 7);                  // d
  EXPECT_EQ(net.num_hidden(), 2);                 // h
  // The paper's Phi (1-based): t1 t5, t2 t6, t3 t5, t4 t6, t7.
  EXPECT_EQ(ref_edge_lists(net), (EdgeLists{{0, 4}, {1, 5}, {2, 4}, {3, 5}, {6}}));
}

TEST(Builtins, SketchH0) {
  const Network net = sketch_h0();
  expect_edges(net, {{"a", "d"}, {"a", "c"}, {"b", "d"}, {"b", "c"}, {"c", "d"}});
  EXPECT_EQ(names_of(net, net.inputs()), (Names{"a", "b"}));
  EXPECT_TRUE(net.bias_nodes().empty());
  EXPECT_TRUE(net.hidden().empty());
  EXPECT_EQ(names_of(net, net.outputs()), (Names{"c", "d"}));
  const NodeId c = *net.find_node("c");
  EXPECT_TRUE(net.is_designated_output(c));
  EXPECT_FALSE(net.out_edges(c).empty());  // c feeds d
  EXPECT_EQ(count_paths_total(net).value(), 6U);
  EXPECT_EQ(net.num_edges(), 5);
  EXPECT_EQ(net.num_hidden(), 0);
  // Phi = (t1, t2, t2 t5, t3, t4, t4 t5).
  EXPECT_EQ(ref_edge_lists(net), (EdgeLists{{0}, {1}, {1, 4}, {2}, {3}, {3, 4}}));
}

TEST(Builtins, SketchH1) {
  const Network net = sketch_h1();
  expect_edges(net, {{"a", "f"}, {"a", "k"}, {"b", "u"}, {"u", "f"}, {"u", "k"}, {"k", "f"}});
  EXPECT_EQ(net.node_names(), (Names{"a", "b", "u", "k", "f"}));
  EXPECT_EQ(names_of(net, net.inputs()), (Names{"a", "b"}));
  EXPECT_EQ(names_of(net, net.hidden()), (Names{"u"}));
  EXPECT_EQ(names_of(net, net.outputs()), (Names{"k", "f"}));
  EXPECT_TRUE(net.is_designated_output(*net.find_node("k")));
  EXPECT_EQ(count_paths_total(net).value(), 6U);
  EXPECT_EQ(net.num_edges(), 6);
  EXPECT_EQ(net.num_hidden(), 1);
  // Phi = (t1, t2, t2 t6, t3 t4, t3 t5, t3 t5 t6).
  EXPECT_EQ(ref_edge_lists(net), (EdgeLists{{0}, {1}, {1, 5}, {2, 3}, {2, 4}, {2, 4, 5}}));
}

// ---------------------------------------------------------------------------------------------
// Feed-forward networks

struct FfShape {
  Index r;
  std::vector<Index> widths;
  Index q;
};

std::vector<FfShape> ff_grid() {
  const std::vector<std::vector<Index>> widths = {
      {}, {1}, {3}, {2, 3}, {4, 1}, {4, 1, 2}, {2, 2, 3, 1}, {3, 1, 4, 2}, {1, 1, 1}, {5, 2, 1, 3}};
  std::vector<FfShape> out;
  for (const Index r : {1, 2, 3}) {
    for (const auto& w : widths) {
      for (const Index q : {1, 2}) {
        out.push_back({r, w, q});
      }
    }
  }
  return out;
}

// docs/conventions.md#feed-forward: with biases
// P = q (r prod_l w_l + sum_{l=1..L} prod_{k>=l} w_k + 1).
// Without biases only the paths from the r inputs are left: P = q r prod_l w_l.
std::uint64_t ff_paths(const FfShape& s, bool bias) {
  std::uint64_t prod = 1;
  for (Index w : s.widths) {
    prod *= static_cast<std::uint64_t>(w);
  }
  std::uint64_t inner = static_cast<std::uint64_t>(s.r) * prod;
  if (bias) {
    for (std::size_t l = 0; l < s.widths.size(); ++l) {
      std::uint64_t tail = 1;
      for (std::size_t k = l; k < s.widths.size(); ++k) {
        tail *= static_cast<std::uint64_t>(s.widths[k]);
      }
      inner += tail;
    }
    inner += 1;
  }
  return static_cast<std::uint64_t>(s.q) * inner;
}

// d = sum over Linear layers of (in + 1) out with biases, in out without.
Index ff_params(const FfShape& s, bool bias) {
  std::vector<Index> sizes{s.r};
  sizes.insert(sizes.end(), s.widths.begin(), s.widths.end());
  sizes.push_back(s.q);
  Index d = 0;
  for (std::size_t l = 0; l + 1 < sizes.size(); ++l) {
    d += (sizes[l] + (bias ? 1 : 0)) * sizes[l + 1];
  }
  return d;
}

TEST(FeedForward, MathFormulaOverAGridOfShapes) {
  int checked = 0;
  for (const auto& s : ff_grid()) {
    for (const bool bias : {true, false}) {
      SCOPED_TRACE(::testing::Message()
                   << "r=" << s.r << " L=" << s.widths.size() << " q=" << s.q << " bias=" << bias);
      const Network net = feed_forward(s.r, s.widths, s.q, bias);
      const Index L = static_cast<Index>(s.widths.size());
      const Index h = std::accumulate(s.widths.begin(), s.widths.end(), Index{0});
      EXPECT_EQ(count_paths_total(net).value(), ff_paths(s, bias));
      EXPECT_EQ(testing::ref_paths(net).size(), ff_paths(s, bias));  // independent count
      EXPECT_EQ(net.num_edges(), ff_params(s, bias));
      EXPECT_EQ(net.num_hidden(), h);
      EXPECT_EQ(static_cast<Index>(net.data_inputs().size()), s.r);
      EXPECT_EQ(static_cast<Index>(net.bias_nodes().size()), bias ? L + 1 : 0);
      EXPECT_EQ(static_cast<Index>(net.outputs().size()), s.q);
      EXPECT_EQ(net.num_nodes(), s.r + h + s.q + (bias ? L + 1 : 0));
      EXPECT_TRUE(net.edges_increase_along_paths());
      for (NodeId v : net.hidden()) {
        EXPECT_EQ(net.activation(v), Activation::relu());
      }
      for (NodeId v : net.outputs()) {
        EXPECT_EQ(net.activation(v), Activation::identity());
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 120);
}

/// The name of node j of layer l (0 = inputs, L+1 = outputs) in the documented scheme.
std::string ff_node(std::size_t l, Index j, std::size_t layers) {
  if (l == 0) {
    return fmt::format("x{}", j);
  }
  if (l == layers) {
    return fmt::format("y{}", j);
  }
  return fmt::format("h{}_{}", l, j);
}

TEST(FeedForward, PyTorchParameterOrderAndNodeNames) {
  // nn.Sequential(Linear, ReLU, ..., Linear).parameters(): per layer W (out x in, row-major),
  // then b. So W_l[j][i] is edge offset_l + j in + i and b_l[j] is offset_l + out in + j.
  for (const auto& s : {FfShape{3, {4, 2}, 2}, FfShape{2, {}, 3}, FfShape{1, {3, 1, 2}, 1}}) {
    for (const bool bias : {true, false}) {
      const Network net = feed_forward(s.r, s.widths, s.q, bias);
      std::vector<Index> sizes{s.r};
      sizes.insert(sizes.end(), s.widths.begin(), s.widths.end());
      sizes.push_back(s.q);
      const std::size_t layers = sizes.size() - 1;
      // Node order: x*, then per layer b<l> and the layer's nodes.
      Names expected_nodes;
      for (Index i = 0; i < s.r; ++i) {
        expected_nodes.push_back(ff_node(0, i, layers));
      }
      for (std::size_t l = 1; l <= layers; ++l) {
        if (bias) {
          expected_nodes.push_back(fmt::format("b{}", l));
        }
        for (Index j = 0; j < sizes[l]; ++j) {
          expected_nodes.push_back(ff_node(l, j, layers));
        }
      }
      EXPECT_EQ(net.node_names(), expected_nodes);
      Index offset = 0;
      for (std::size_t l = 0; l < layers; ++l) {
        const Index in = sizes[l];
        const Index out = sizes[l + 1];
        for (Index j = 0; j < out; ++j) {
          for (Index i = 0; i < in; ++i) {
            const auto e = static_cast<EdgeId>(offset + j * in + i);
            EXPECT_EQ(net.node_name(net.source(e)), ff_node(l, i, layers));
            EXPECT_EQ(net.node_name(net.target(e)), ff_node(l + 1, j, layers));
          }
          if (bias) {
            const auto e = static_cast<EdgeId>(offset + out * in + j);
            EXPECT_EQ(net.node_name(net.source(e)), fmt::format("b{}", l + 1));
            EXPECT_EQ(net.node_name(net.target(e)), ff_node(l + 1, j, layers));
          }
        }
        offset += (in + (bias ? 1 : 0)) * out;
      }
      EXPECT_EQ(offset, net.num_edges());  // every edge accounted for
    }
  }
}

TEST(FeedForward, Errors) {
  EXPECT_TRUE(
      contains(error_of<std::invalid_argument>([] { (void)feed_forward(0, {2}, 1); }), "r = 0"));
  EXPECT_TRUE(
      contains(error_of<std::invalid_argument>([] { (void)feed_forward(2, {2}, 0); }), "q = 0"));
  EXPECT_TRUE(contains(error_of<std::invalid_argument>([] {
                         (void)feed_forward(2, {3, 0}, 1);
                       }),
                       "hidden layer 2 has width 0"));
  EXPECT_TRUE(contains(error_of<std::invalid_argument>([] {
                         (void)feed_forward(2, {100000, 100000}, 1);
                       }),
                       "too large"));
}

// ---------------------------------------------------------------------------------------------
// builtin_network()

TEST(BuiltinNetwork, Names) {
  expect_same_network(builtin_network("fig1"), fig1());
  expect_same_network(builtin_network("sketch-h0"), sketch_h0());
  expect_same_network(builtin_network("sketch-h1"), sketch_h1());
  expect_same_network(builtin_network("ff:5,64,64,64,2"), feed_forward(5, {64, 64, 64}, 2, true));
  expect_same_network(builtin_network("ff:3,2"), feed_forward(3, {}, 2, true));
  expect_same_network(builtin_network("ff-nobias:4,3,2,1"), feed_forward(4, {3, 2}, 1, false));
  expect_same_network(builtin_network("random-dag:12,0.3,7"), random_dag(12, 0.3, 7));
  expect_same_network(builtin_network("random-dag:5,1,18446744073709551615"),
                      random_dag(5, 1.0, 18446744073709551615ULL));
  const auto names = builtin_network_names();
  for (const char* n : {"fig1", "sketch-h0", "sketch-h1", "ff:r,w1,...,wL,q",
                        "ff-nobias:r,w1,...,wL,q", "random-dag:m,p,seed"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  }
}

TEST(BuiltinNetwork, Errors) {
  // An unknown name lists the known ones.
  for (const char* name : {"nope", "FIG1", "", "fig1 ", "ff", "random-dag"}) {
    const std::string msg = error_of<std::invalid_argument>([&] { (void)builtin_network(name); });
    EXPECT_TRUE(contains(msg, fmt::format("unknown built-in network '{}'", name)));
    EXPECT_TRUE(contains(msg, "sketch-h1"));
    EXPECT_TRUE(contains(msg, "random-dag:m,p,seed"));
  }
  // Bad feed-forward shapes name the entry.
  EXPECT_TRUE(
      contains(error_of<std::invalid_argument>([] { (void)builtin_network("ff:"); }), "entry 0"));
  EXPECT_TRUE(contains(error_of<std::invalid_argument>([] { (void)builtin_network("ff:5"); }),
                       "at least r and q"));
  EXPECT_TRUE(
      contains(error_of<std::invalid_argument>([] { (void)builtin_network("ff-nobias:5,0,2"); }),
               "entry 1 ('0')"));
  // Bad random-dag arguments show the expected form, or the violated range.
  for (const char* name :
       {"random-dag:5", "random-dag:5,0.3", "random-dag:5,x,1", "random-dag:5,0.3,-1",
        "random-dag:5,0.3,7,8", "random-dag:,0.3,7", "random-dag:5.5,0.3,7"}) {
    const std::string msg = error_of<std::invalid_argument>([&] { (void)builtin_network(name); });
    EXPECT_TRUE(contains(msg, "random-dag:m,p,seed")) << name;
  }
  EXPECT_TRUE(
      contains(error_of<std::invalid_argument>([] { (void)builtin_network("random-dag:1,0.3,7"); }),
               "m >= 2"));
  EXPECT_TRUE(
      contains(error_of<std::invalid_argument>([] { (void)builtin_network("random-dag:5,1.5,7"); }),
               "0 <= p <= 1"));
}

// ---------------------------------------------------------------------------------------------
// random_dag()

TEST(RandomDag, ReproducibleAndSeedDependent) {
  std::set<std::string> distinct;
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    const std::string a = network_to_json(random_dag(10, 0.3, seed));
    const std::string b = network_to_json(random_dag(10, 0.3, seed));
    EXPECT_EQ(a, b) << seed;
    distinct.insert(a);
  }
  EXPECT_GE(distinct.size(), 19U);  // different seeds, different networks
  // The options change the network; shuffle = false keeps the hidden order = node order.
  RandomDagOptions plain;
  plain.shuffle = false;
  const Network ordered = random_dag(10, 0.5, 3, plain);
  for (EdgeId e = 0; e < ordered.num_edges(); ++e) {
    EXPECT_LT(ordered.source(e), ordered.target(e));
  }
}

TEST(RandomDag, AlwaysValidAndCoversEveryFeature) {
  int with_parallel = 0;
  int with_feeding_output = 0;
  int with_bias = 0;
  int with_hidden = 0;
  int count = 0;
  for (const Index m : {2, 3, 5, 8, 13, 30}) {
    for (const double p : {0.0, 0.05, 0.3, 0.7, 1.0}) {
      for (std::uint64_t seed = 0; seed < 30; ++seed) {
        const Network net = random_dag(m, p, seed);  // throws if invalid
        ++count;
        EXPECT_EQ(net.num_nodes(), m);
        EXPECT_GE(net.num_edges(), 1);
        EXPECT_EQ(net.node_name(0), "n0");
        std::set<std::pair<NodeId, NodeId>> seen;
        bool parallel = false;
        for (EdgeId e = 0; e < net.num_edges(); ++e) {
          parallel = !seen.emplace(net.source(e), net.target(e)).second || parallel;
        }
        bool feeding = false;
        for (NodeId o : net.outputs()) {
          feeding = feeding || !net.out_edges(o).empty();
        }
        with_parallel += parallel ? 1 : 0;
        with_feeding_output += feeding ? 1 : 0;
        with_bias += net.bias_nodes().empty() ? 0 : 1;
        with_hidden += net.hidden().empty() ? 0 : 1;
      }
    }
  }
  EXPECT_EQ(count, 900);
  EXPECT_GE(with_parallel, 50);
  EXPECT_GE(with_feeding_output, 50);
  EXPECT_GE(with_bias, 50);
  EXPECT_GE(with_hidden, 50);
}

TEST(RandomDag, Errors) {
  EXPECT_TRUE(
      contains(error_of<std::invalid_argument>([] { (void)random_dag(1, 0.5, 0); }), "m >= 2"));
  EXPECT_TRUE(contains(error_of<std::invalid_argument>([] { (void)random_dag(5, -0.1, 0); }),
                       "0 <= p <= 1"));
  EXPECT_TRUE(contains(error_of<std::invalid_argument>([] { (void)random_dag(5, 1.01, 0); }),
                       "0 <= p <= 1"));
  EXPECT_TRUE(
      contains(error_of<std::invalid_argument>([] { (void)random_dag(5, std::nan(""), 0); }),
               "0 <= p <= 1"));
}

// ---------------------------------------------------------------------------------------------
// normal_weights()

TEST(NormalWeights, ReproducibleAndStandardNormal) {
  EXPECT_EQ(normal_weights(1000, 42), normal_weights(1000, 42));
  EXPECT_NE(normal_weights(1000, 42), normal_weights(1000, 43));
  EXPECT_TRUE(normal_weights(0, 1).empty());
  EXPECT_THROW((void)normal_weights(-1, 1), std::invalid_argument);

  const std::vector<double> w = normal_weights(100000, 7);
  ASSERT_EQ(w.size(), 100000U);
  double sum = 0;
  double sum2 = 0;
  int within_one = 0;
  int within_two = 0;
  for (double x : w) {
    ASSERT_TRUE(std::isfinite(x));
    sum += x;
    sum2 += x * x;
    within_one += std::abs(x) < 1 ? 1 : 0;
    within_two += std::abs(x) < 2 ? 1 : 0;
  }
  const double n = static_cast<double>(w.size());
  const double mean = sum / n;
  const double var = sum2 / n - mean * mean;
  // Standard errors: mean 0.0032, variance 0.0045, fractions 0.0015 and 0.0007.
  EXPECT_NEAR(mean, 0.0, 0.02);
  EXPECT_NEAR(var, 1.0, 0.03);
  EXPECT_NEAR(within_one / n, 0.6827, 0.01);
  EXPECT_NEAR(within_two / n, 0.9545, 0.006);
  // Both tails are reached (P(|x| > 3) = 0.27%: about 270 draws).
  EXPECT_LT(*std::min_element(w.begin(), w.end()), -3.0);
  EXPECT_GT(*std::max_element(w.begin(), w.end()), 3.0);
}

// ---------------------------------------------------------------------------------------------
// parse_layer_sizes()

TEST(LayerSizes, Parse) {
  EXPECT_EQ(parse_layer_sizes("5,64,64,64,2"), (std::vector<Index>{5, 64, 64, 64, 2}));
  EXPECT_EQ(parse_layer_sizes("3,2"), (std::vector<Index>{3, 2}));
  EXPECT_EQ(parse_layer_sizes("1,1000000,1"), (std::vector<Index>{1, 1000000, 1}));
}

TEST(LayerSizes, Errors) {
  struct Case {
    const char* text;
    const char* part;
  };
  for (const Case c :
       {Case{"", "entry 0 ('')"}, Case{"5", "at least r and q"}, Case{",", "entry 0 ('')"},
        Case{"5,", "entry 1 ('')"}, Case{",5", "entry 0 ('')"}, Case{"5,,2", "entry 1 ('')"},
        Case{"5,0,2", "entry 1 ('0')"}, Case{"5,-3,2", "entry 1 ('-3')"},
        Case{"5,a,2", "entry 1 ('a')"}, Case{"5, 6,2", "entry 1 (' 6')"},
        Case{"5,64x12,2", "entry 1 ('64x12')"}, Case{"5,1.5,2", "entry 1 ('1.5')"},
        Case{"99999999999999999999,2", "entry 0"}, Case{"+5,2", "entry 0"}}) {
    const std::string msg =
        error_of<std::invalid_argument>([&] { (void)parse_layer_sizes(c.text); });
    EXPECT_TRUE(contains(msg, c.part)) << c.text;
    EXPECT_TRUE(contains(msg, fmt::format("'{}'", c.text))) << "names the whole text";
  }
}

}  // namespace
}  // namespace pathlift
