// The network model of docs/conventions.md: roles, activations, topological order, adjacency,
// spec round trip, and every validation error of issue 2 (each message must name its culprits).

#include "pathlift/network.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "pathlift/builtins.hpp"
#include "pathlift/error.hpp"
#include "pathlift/io.hpp"
#include "support.hpp"

namespace pathlift {
namespace {

using testing::contains;
using testing::error_of;
using testing::names_of;

/// A spec from node names and edges given by name.
NetworkSpec make_spec(std::vector<std::string> names,
                      const std::vector<std::pair<std::string, std::string>>& edges,
                      const std::vector<std::string>& outputs = {},
                      const std::vector<std::string>& bias = {}) {
  NetworkSpec s;
  const auto id = [&](const std::string& n) {
    const auto it = std::find(names.begin(), names.end(), n);
    EXPECT_NE(it, names.end()) << "test bug: no node " << n;
    return static_cast<NodeId>(it - names.begin());
  };
  for (const auto& [a, b] : edges) {
    s.edges.emplace_back(id(a), id(b));
  }
  for (const auto& o : outputs) {
    s.outputs.push_back(id(o));
  }
  for (const auto& b : bias) {
    s.bias.push_back(id(b));
  }
  s.node_names = std::move(names);
  return s;
}

using Names = std::vector<std::string>;

// The cycle listed after "closes a cycle: " ("a -> d -> c -> a") as node names.
Names listed_cycle(const std::string& message) {
  const std::string marker = "closes a cycle: ";
  const auto at = message.find(marker);
  EXPECT_NE(at, std::string::npos) << message;
  if (at == std::string::npos) {
    return {};
  }
  Names nodes;
  std::string rest = message.substr(at + marker.size());
  for (;;) {
    const auto arrow = rest.find(" -> ");
    nodes.push_back(rest.substr(0, arrow));
    if (arrow == std::string::npos) {
      break;
    }
    rest = rest.substr(arrow + 4);
  }
  return nodes;
}

/// Checks that the message lists a real cycle of `spec` (first == last, every step an edge),
/// and that the "edge K (u -> v)" it blames is an edge u -> v on that cycle.
void expect_real_cycle(const NetworkSpec& spec, const std::string& message) {
  const Names cycle = listed_cycle(message);
  ASSERT_GE(cycle.size(), 2U) << message;
  EXPECT_EQ(cycle.front(), cycle.back()) << message;
  std::set<std::pair<std::string, std::string>> edges;
  for (const auto& [a, b] : spec.edges) {
    edges.emplace(spec.node_names[static_cast<std::size_t>(a)],
                  spec.node_names[static_cast<std::size_t>(b)]);
  }
  for (std::size_t i = 0; i + 1 < cycle.size(); ++i) {
    EXPECT_TRUE(edges.contains({cycle[i], cycle[i + 1]}))
        << cycle[i] << " -> " << cycle[i + 1] << " is not an edge: " << message;
  }
  // Each node once (the cycle is simple).
  const std::set<std::string> distinct(cycle.begin(), cycle.end() - 1);
  EXPECT_EQ(distinct.size(), cycle.size() - 1) << message;
  // "edge K (u -> v) closes a cycle": edge K really is u -> v, and u -> v is a step of it.
  int k = -1;
  char u[64] = {};
  char v[64] = {};
  ASSERT_EQ(std::sscanf(message.c_str(), "edge %d (%63s -> %63[^)])", &k, u, v), 3) << message;
  ASSERT_GE(k, 0);
  ASSERT_LT(static_cast<std::size_t>(k), spec.edges.size());
  const auto [ks, kt] = spec.edges[static_cast<std::size_t>(k)];
  EXPECT_EQ(spec.node_names[static_cast<std::size_t>(ks)], u) << message;
  EXPECT_EQ(spec.node_names[static_cast<std::size_t>(kt)], v) << message;
  bool on_cycle = false;
  for (std::size_t i = 0; i + 1 < cycle.size(); ++i) {
    on_cycle = on_cycle || (cycle[i] == u && cycle[i + 1] == v);
  }
  EXPECT_TRUE(on_cycle) << message;
}

// ---------------------------------------------------------------------------------------------
// Exception types

TEST(NetworkErrors, TypesDeriveFromInvalidArgument) {
  static_assert(std::is_base_of_v<std::invalid_argument, NetworkError>);
  static_assert(std::is_base_of_v<std::invalid_argument, FormatError>);
  static_assert(std::is_base_of_v<std::overflow_error, CountOverflow>);
  static_assert(std::is_base_of_v<std::length_error, TooLarge>);
  // And a NetworkError is caught as std::invalid_argument (what Python maps to ValueError).
  EXPECT_THROW(Network(NetworkSpec{}), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// Roles

TEST(Network, RolesOfFigureOne) {
  // The paper's Figure 1, built here from names (independent of builtins.cpp).
  const Network net(make_spec(
      {"a", "c", "g", "d", "f", "h"},
      {{"a", "d"}, {"a", "f"}, {"c", "d"}, {"c", "f"}, {"d", "h"}, {"f", "h"}, {"g", "h"}}, {},
      {"g"}));
  EXPECT_EQ(net.num_nodes(), 6);
  EXPECT_EQ(net.num_edges(), 7);
  EXPECT_EQ(names_of(net, net.inputs()), (Names{"a", "c", "g"}));
  EXPECT_EQ(names_of(net, net.data_inputs()), (Names{"a", "c"}));
  EXPECT_EQ(names_of(net, net.bias_nodes()), (Names{"g"}));
  EXPECT_EQ(names_of(net, net.hidden()), (Names{"d", "f"}));
  EXPECT_EQ(names_of(net, net.outputs()), (Names{"h"}));
  EXPECT_EQ(net.num_hidden(), 2);
  for (NodeId v = 0; v < net.num_nodes(); ++v) {
    const std::string& n = net.node_name(v);
    EXPECT_EQ(net.is_input(v), n == "a" || n == "c" || n == "g") << n;
    EXPECT_EQ(net.is_hidden(v), n == "d" || n == "f") << n;
    EXPECT_EQ(net.is_output(v), n == "h") << n;
    EXPECT_EQ(net.is_bias(v), n == "g") << n;
    // Exactly one role per node: I, H, O partition N.
    EXPECT_EQ(int(net.is_input(v)) + int(net.is_hidden(v)) + int(net.is_output(v)), 1);
    // h is an output as a sink, not by designation.
    EXPECT_FALSE(net.is_designated_output(v));
  }
  EXPECT_EQ(net.edge_label(4), "d -> h");
  EXPECT_EQ(net.find_node("f"), NodeId{4});
  EXPECT_EQ(net.find_node("zz"), std::nullopt);
}

TEST(Network, DesignatedOutputMayFeedOtherNodes) {
  // a -> b -> c -> e, b -> d; b and c designated: b feeds c and d, c feeds e.
  const Network net(make_spec({"a", "b", "c", "d", "e"},
                              {{"a", "b"}, {"b", "c"}, {"c", "e"}, {"b", "d"}}, {"c", "b"}));
  EXPECT_EQ(names_of(net, net.inputs()), (Names{"a"}));
  EXPECT_EQ(names_of(net, net.outputs()), (Names{"b", "c", "d", "e"}));  // node order
  EXPECT_TRUE(net.hidden().empty());
  EXPECT_TRUE(net.is_designated_output(1));
  EXPECT_TRUE(net.is_designated_output(2));
  EXPECT_FALSE(net.is_designated_output(3));  // a sink, output anyway
  EXPECT_FALSE(net.out_edges(1).empty());
  // Designating a sink is allowed and changes nothing but the flag.
  const Network sink(make_spec({"a", "b"}, {{"a", "b"}}, {"b"}));
  EXPECT_TRUE(sink.is_output(1));
  EXPECT_TRUE(sink.is_designated_output(1));
}

TEST(Network, HiddenIsEverythingElse) {
  // A node with incoming and outgoing edges that is not designated is hidden.
  const Network net(make_spec({"x", "u", "v", "y"}, {{"x", "u"}, {"u", "v"}, {"v", "y"}}));
  EXPECT_EQ(names_of(net, net.hidden()), (Names{"u", "v"}));
  EXPECT_EQ(net.role(1), NodeRole::hidden);
  EXPECT_EQ(net.role(0), NodeRole::input);
  EXPECT_EQ(net.role(3), NodeRole::output);
}

TEST(Network, RolesOnRandomDags) {
  // Roles from the degrees alone (docs/conventions.md#roles), on random DAGs with every feature.
  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    const Network net = random_dag(3 + static_cast<Index>(seed % 10), 0.35, seed);
    const NetworkSpec s = net.spec();
    std::vector<int> indeg(s.node_names.size()), outdeg(s.node_names.size());
    for (const auto& [a, b] : s.edges) {
      ++outdeg[static_cast<std::size_t>(a)];
      ++indeg[static_cast<std::size_t>(b)];
    }
    std::set<NodeId> designated(s.outputs.begin(), s.outputs.end());
    std::set<NodeId> bias(s.bias.begin(), s.bias.end());
    for (NodeId v = 0; v < net.num_nodes(); ++v) {
      const auto i = static_cast<std::size_t>(v);
      const NodeRole expected = indeg[i] == 0                                ? NodeRole::input
                                : (outdeg[i] == 0 || designated.contains(v)) ? NodeRole::output
                                                                             : NodeRole::hidden;
      EXPECT_EQ(net.role(v), expected) << "seed " << seed << " node " << v;
      EXPECT_EQ(net.is_bias(v), bias.contains(v));
    }
    // inputs() = data_inputs() + bias_nodes(), each in node order.
    std::vector<NodeId> merged(net.data_inputs().begin(), net.data_inputs().end());
    merged.insert(merged.end(), net.bias_nodes().begin(), net.bias_nodes().end());
    std::sort(merged.begin(), merged.end());
    EXPECT_TRUE(std::equal(merged.begin(), merged.end(), net.inputs().begin(), net.inputs().end()));
    for (auto list :
         {net.inputs(), net.data_inputs(), net.bias_nodes(), net.hidden(), net.outputs()}) {
      EXPECT_TRUE(std::is_sorted(list.begin(), list.end()));
    }
    EXPECT_EQ(static_cast<Index>(net.inputs().size() + net.hidden().size() + net.outputs().size()),
              net.num_nodes());
  }
}

// ---------------------------------------------------------------------------------------------
// Activations

TEST(Network, DefaultActivations) {
  const Network net(make_spec({"x", "u", "y", "z"}, {{"x", "u"}, {"u", "y"}, {"y", "z"}}, {"y"}));
  EXPECT_EQ(net.activation(0), Activation::identity());  // input
  EXPECT_EQ(net.activation(1), Activation::relu());      // hidden
  EXPECT_EQ(net.activation(2), Activation::identity());  // designated output with an out edge
  EXPECT_EQ(net.activation(3), Activation::identity());  // sink output
}

TEST(Network, ActivationOverrides) {
  NetworkSpec s = make_spec({"x", "u", "y"}, {{"x", "u"}, {"u", "y"}});
  s.activations = {{1, Activation::identity()},
                   {2, Activation::leaky_relu(0.25)},
                   {0, Activation::identity()}};  // identity on an input is allowed
  const Network net(s);
  EXPECT_EQ(net.activation(1), Activation::identity());
  EXPECT_EQ(net.activation(2), Activation::leaky_relu(0.25));
  EXPECT_EQ(net.activation(2).negative_slope, 0.25);
}

TEST(Activation, ParseAndName) {
  EXPECT_EQ(Activation::parse("identity"), Activation::identity());
  EXPECT_EQ(Activation::parse("relu"), Activation::relu());
  EXPECT_EQ(Activation::parse("leaky_relu:0.2"), Activation::leaky_relu(0.2));
  EXPECT_EQ(Activation::parse("leaky_relu:-3"), Activation::leaky_relu(-3));
  EXPECT_EQ(Activation::relu().negative_slope, 0.0);
  EXPECT_EQ(Activation::identity().negative_slope, 1.0);
  // name() parses back to the same activation, slope bit for bit.
  for (const Activation a :
       {Activation::identity(), Activation::relu(), Activation::leaky_relu(0.1),
        Activation::leaky_relu(1.0 / 3.0), Activation::leaky_relu(-2.5e-300)}) {
    EXPECT_EQ(Activation::parse(a.name()), a) << a.name();
  }
  EXPECT_EQ(Activation::relu().name(), "relu");
  EXPECT_EQ(Activation::identity().name(), "identity");
}

TEST(ActivationErrors, UnknownActivationViaParse) {
  for (const std::string text :
       {"sigmoid", "", "Relu", "relu ", "leaky_relu:", "leaky_relu:abc", "leaky_relu:0.1x",
        "leaky_relu:inf", "leaky_relu:nan", "leaky_relu0.1", "leaky_relu;0.1"}) {
    const std::string msg = error_of<FormatError>([&] { (void)Activation::parse(text); });
    EXPECT_TRUE(contains(msg, "unknown activation '" + text + "'")) << text;
    EXPECT_TRUE(contains(msg, "relu")) << "the message should list the known names: " << msg;
  }
}

TEST(ActivationErrors, UnknownActivationViaJson) {
  const std::string text = R"({"format": "pathlift-network", "version": 1, "nodes": ["a", "b", "c"],
      "edges": [["a", "b"], ["b", "c"]], "activations": {"b": "tanh"}})";
  const std::string msg = error_of<FormatError>([&] { (void)parse_network(text); });
  EXPECT_TRUE(contains(msg, "tanh"));
  EXPECT_TRUE(contains(msg, R"("activations"["b"])"));
}

TEST(ActivationErrors, NonFiniteSlope) {
  NetworkSpec s = make_spec({"x", "u", "y"}, {{"x", "u"}, {"u", "y"}});
  s.activations = {{1, Activation::leaky_relu(std::numeric_limits<double>::quiet_NaN())}};
  const std::string msg = error_of<NetworkError>([&] { Network{s}; });
  EXPECT_TRUE(contains(msg, "'u'"));
  EXPECT_TRUE(contains(msg, "non-finite slope"));
}

TEST(ActivationErrors, NonIdentityOnInput) {
  NetworkSpec s = make_spec({"x", "u", "y"}, {{"x", "u"}, {"u", "y"}});
  s.activations = {{0, Activation::relu()}};
  const std::string msg = error_of<NetworkError>([&] { Network{s}; });
  EXPECT_TRUE(contains(msg, "input node 'x'"));
  EXPECT_TRUE(contains(msg, "relu"));
}

// ---------------------------------------------------------------------------------------------
// Topological order and adjacency

void expect_valid_topological_order(const Network& net) {
  const auto topo = net.topological_order();
  ASSERT_EQ(static_cast<Index>(topo.size()), net.num_nodes());
  // A permutation of the nodes, with topological_position its inverse.
  std::vector<NodeId> sorted(topo.begin(), topo.end());
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    ASSERT_EQ(sorted[i], static_cast<NodeId>(i));
    EXPECT_EQ(net.topological_position(topo[i]), static_cast<Index>(i));
  }
  // Inputs first, in node order.
  const auto inputs = net.inputs();
  EXPECT_TRUE(std::equal(inputs.begin(), inputs.end(), topo.begin()));
  // Every edge goes forward.
  for (EdgeId e = 0; e < net.num_edges(); ++e) {
    EXPECT_LT(net.topological_position(net.source(e)), net.topological_position(net.target(e)))
        << net.edge_label(e);
  }
}

TEST(Network, TopologicalOrderSmallestIndexFirst) {
  // Nodes 0..4; 0 is the only input. After 0, nodes 2 and 4 are ready: 2 (smaller) goes first
  // and releases 3, which is then smaller than 4; 4 releases 1. Order: 0, 2, 3, 4, 1.
  const Network net(
      make_spec({"n0", "n1", "n2", "n3", "n4"},
                {{"n0", "n4"}, {"n0", "n2"}, {"n4", "n1"}, {"n2", "n3"}, {"n3", "n1"}}));
  const auto topo = net.topological_order();
  EXPECT_EQ(std::vector<NodeId>(topo.begin(), topo.end()), (std::vector<NodeId>{0, 2, 3, 4, 1}));
  expect_valid_topological_order(net);
}

TEST(Network, TopologicalOrderPutsAllInputsFirst) {
  // Input c (index 3) comes after node b (index 1) in node order but still comes first.
  const Network net(make_spec({"a", "b", "y", "c"}, {{"a", "b"}, {"b", "y"}, {"c", "y"}}));
  const auto topo = net.topological_order();
  EXPECT_EQ(std::vector<NodeId>(topo.begin(), topo.end()), (std::vector<NodeId>{0, 3, 1, 2}));
}

TEST(Network, TopologicalOrderOnRandomDags) {
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    const Network net =
        random_dag(2 + static_cast<Index>(seed % 25), 0.1 + 0.004 * double(seed), seed);
    expect_valid_topological_order(net);
    // Computed once and deterministic: a rebuilt network has the same order.
    const Network again(net.spec());
    EXPECT_TRUE(std::ranges::equal(net.topological_order(), again.topological_order()));
  }
}

TEST(Network, ParallelEdgesAreSeparateParameters) {
  const Network net(
      make_spec({"a", "b", "c"}, {{"a", "b"}, {"b", "c"}, {"a", "b"}, {"a", "b"}, {"b", "c"}}));
  EXPECT_EQ(net.num_edges(), 5);
  const auto out_a = net.out_edges(0);
  EXPECT_EQ(std::vector<EdgeId>(out_a.begin(), out_a.end()), (std::vector<EdgeId>{0, 2, 3}));
  const auto in_b = net.in_edges(1);
  EXPECT_EQ(std::vector<EdgeId>(in_b.begin(), in_b.end()), (std::vector<EdgeId>{0, 2, 3}));
  const auto in_c = net.in_edges(2);
  EXPECT_EQ(std::vector<EdgeId>(in_c.begin(), in_c.end()), (std::vector<EdgeId>{1, 4}));
  EXPECT_EQ(names_of(net, net.hidden()), (Names{"b"}));
}

TEST(Network, AdjacencyByIncreasingEdgeIndex) {
  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    const Network net = random_dag(2 + static_cast<Index>(seed % 15), 0.4, seed);
    std::vector<std::vector<EdgeId>> out(static_cast<std::size_t>(net.num_nodes()));
    std::vector<std::vector<EdgeId>> in(out.size());
    for (EdgeId e = 0; e < net.num_edges(); ++e) {
      out[static_cast<std::size_t>(net.source(e))].push_back(e);
      in[static_cast<std::size_t>(net.target(e))].push_back(e);
      EXPECT_EQ(net.sources()[static_cast<std::size_t>(e)], net.source(e));
      EXPECT_EQ(net.targets()[static_cast<std::size_t>(e)], net.target(e));
    }
    for (NodeId v = 0; v < net.num_nodes(); ++v) {
      const auto i = static_cast<std::size_t>(v);
      EXPECT_TRUE(std::ranges::equal(net.out_edges(v), out[i]));
      EXPECT_TRUE(std::ranges::equal(net.in_edges(v), in[i]));
      // The raw CSR arrays agree with the spans.
      const auto off = net.out_offsets();
      EXPECT_TRUE(std::ranges::equal(
          net.out_edge_list().subspan(static_cast<std::size_t>(off[i]),
                                      static_cast<std::size_t>(off[i + 1] - off[i])),
          out[i]));
      const auto ioff = net.in_offsets();
      EXPECT_TRUE(std::ranges::equal(
          net.in_edge_list().subspan(static_cast<std::size_t>(ioff[i]),
                                     static_cast<std::size_t>(ioff[i + 1] - ioff[i])),
          in[i]));
    }
  }
}

TEST(Network, EdgesIncreaseAlongPaths) {
  EXPECT_TRUE(
      Network(make_spec({"a", "b", "c"}, {{"a", "b"}, {"b", "c"}})).edges_increase_along_paths());
  EXPECT_FALSE(
      Network(make_spec({"a", "b", "c"}, {{"b", "c"}, {"a", "b"}})).edges_increase_along_paths());
  EXPECT_TRUE(feed_forward(3, {4, 2}, 2).edges_increase_along_paths());
}

TEST(Network, OutOfRangeAccessorsThrow) {
  const Network net(make_spec({"a", "b"}, {{"a", "b"}}));
  EXPECT_THROW((void)net.node_name(2), std::out_of_range);
  EXPECT_THROW((void)net.role(-1), std::out_of_range);
  EXPECT_THROW((void)net.source(1), std::out_of_range);
  EXPECT_THROW((void)net.target(-1), std::out_of_range);
}

// ---------------------------------------------------------------------------------------------
// spec() and with_weights()

void expect_same_spec(const NetworkSpec& a, const NetworkSpec& b) {
  EXPECT_EQ(a.node_names, b.node_names);
  EXPECT_EQ(a.edges, b.edges);
  EXPECT_EQ(a.outputs, b.outputs);
  EXPECT_EQ(a.bias, b.bias);
  EXPECT_EQ(a.activations, b.activations);
  ASSERT_EQ(a.weights.has_value(), b.weights.has_value());
  if (a.weights) {
    ASSERT_EQ(a.weights->size(), b.weights->size());
    for (std::size_t k = 0; k < a.weights->size(); ++k) {
      EXPECT_EQ(std::bit_cast<std::uint64_t>((*a.weights)[k]),
                std::bit_cast<std::uint64_t>((*b.weights)[k]));
    }
  }
}

TEST(Network, SpecRoundTrip) {
  // A spec in normal form (designated outputs and bias in node order, only non-default
  // activations) comes back unchanged.
  NetworkSpec s =
      make_spec({"x", "b", "u", "y", "z"},
                {{"x", "u"}, {"b", "u"}, {"u", "y"}, {"y", "z"}, {"x", "u"}}, {"y"}, {"b"});
  s.activations = {{2, Activation::leaky_relu(0.125)}, {4, Activation::relu()}};
  s.weights = std::vector<double>{0.5, -1.0, 1.0 / 3.0, -0.0, 2e-310};
  const Network net(s);
  expect_same_spec(net.spec(), s);
  // Rebuilding from spec() gives the same network again.
  expect_same_spec(Network(net.spec()).spec(), s);
}

TEST(Network, SpecNormalizesRedundantEntries) {
  // Activations equal to the default are dropped; the network built from spec() is the same.
  NetworkSpec s = make_spec({"x", "u", "y"}, {{"x", "u"}, {"u", "y"}}, {"y"});
  s.activations = {{1, Activation::relu()}, {2, Activation::identity()}};
  const Network net(s);
  const NetworkSpec back = net.spec();
  EXPECT_TRUE(back.activations.empty());
  EXPECT_EQ(back.outputs, (std::vector<NodeId>{2}));
  const Network again(back);
  for (NodeId v = 0; v < 3; ++v) {
    EXPECT_EQ(again.activation(v), net.activation(v));
    EXPECT_EQ(again.role(v), net.role(v));
    EXPECT_EQ(again.is_designated_output(v), net.is_designated_output(v));
  }
}

TEST(Network, SpecRoundTripOnRandomDags) {
  for (std::uint64_t seed = 0; seed < 50; ++seed) {
    const Network net = random_dag(2 + static_cast<Index>(seed % 12), 0.5, seed);
    const Network again(net.spec());
    expect_same_spec(again.spec(), net.spec());
    EXPECT_EQ(again.num_hidden(), net.num_hidden());
  }
}

TEST(Network, WithWeights) {
  const Network net(make_spec({"a", "b", "c"}, {{"a", "b"}, {"b", "c"}}));
  EXPECT_FALSE(net.has_weights());
  EXPECT_TRUE(net.weights().empty());
  const Network w = net.with_weights(std::vector<double>{1.5, -2.0});
  EXPECT_TRUE(w.has_weights());
  EXPECT_EQ(std::vector<double>(w.weights().begin(), w.weights().end()),
            (std::vector<double>{1.5, -2.0}));
  EXPECT_FALSE(net.has_weights());  // the original is unchanged
  const Network none = w.with_weights(std::nullopt);
  EXPECT_FALSE(none.has_weights());
  EXPECT_EQ(none.node_names(), net.node_names());
  // with_weights validates.
  EXPECT_TRUE(
      contains(error_of<NetworkError>([&] { (void)net.with_weights(std::vector<double>{1.0}); }),
               "weights has 1 entries but the network has 2 edges"));
  EXPECT_TRUE(contains(
      error_of<NetworkError>([&] {
        (void)net.with_weights(std::vector<double>{1.0, std::numeric_limits<double>::infinity()});
      }),
      "not finite"));
}

TEST(Network, CheckThetaSize) {
  const Network net(make_spec({"a", "b", "c"}, {{"a", "b"}, {"b", "c"}}));
  EXPECT_NO_THROW(check_theta_size(net, 2));
  const std::string msg = error_of<std::invalid_argument>([&] { check_theta_size(net, 3); });
  EXPECT_TRUE(contains(msg, "theta has 3 entries but the network has 2 edges"));
}

// ---------------------------------------------------------------------------------------------
// Validation errors (issue 2, item 3): each names its culprits.

TEST(NetworkErrors, EmptyNetwork) {
  EXPECT_TRUE(contains(error_of<NetworkError>([] { Network{NetworkSpec{}}; }), "empty"));
}

TEST(NetworkErrors, DuplicateNodeName) {
  const std::string msg = error_of<NetworkError>([] {
    Network{make_spec({"a", "b", "a"}, {{"a", "b"}})};
  });
  EXPECT_TRUE(contains(msg, "duplicate node name 'a'"));
  EXPECT_TRUE(contains(msg, "nodes 0 and 2"));
}

TEST(NetworkErrors, EmptyNodeName) {
  NetworkSpec s;
  s.node_names = {"a", ""};
  s.edges = {{0, 1}};
  EXPECT_TRUE(contains(error_of<NetworkError>([&] { Network{s}; }), "node 1 has an empty name"));
}

TEST(NetworkErrors, EdgeNamingUnknownNodeByIndex) {
  NetworkSpec s;
  s.node_names = {"a", "b", "c"};
  s.edges = {{0, 1}, {1, 5}};
  std::string msg = error_of<NetworkError>([&] { Network{s}; });
  EXPECT_TRUE(contains(msg, "edge 1 names unknown node 5"));
  EXPECT_TRUE(contains(msg, "3 nodes"));
  s.edges = {{-1, 1}, {1, 2}};
  msg = error_of<NetworkError>([&] { Network{s}; });
  EXPECT_TRUE(contains(msg, "edge 0 names unknown node -1"));
  // The same check for the other node references of a spec.
  s.edges = {{0, 1}, {1, 2}};
  s.outputs = {1, 7};
  EXPECT_TRUE(
      contains(error_of<NetworkError>([&] { Network{s}; }), "outputs[1] names unknown node 7"));
  s.outputs = {};
  s.bias = {9};
  EXPECT_TRUE(
      contains(error_of<NetworkError>([&] { Network{s}; }), "bias[0] names unknown node 9"));
  s.bias = {};
  s.activations = {{3, Activation::relu()}};
  EXPECT_TRUE(
      contains(error_of<NetworkError>([&] { Network{s}; }), "activations[0] names unknown node 3"));
}

TEST(NetworkErrors, EdgeNamingUnknownNodeByName) {
  const std::string text = R"({"format": "pathlift-network", "version": 1, "nodes": ["a", "b"],
      "edges": [["a", "b"], ["a", "nowhere"]]})";
  const std::string msg = error_of<FormatError>([&] { (void)parse_network(text); });
  EXPECT_TRUE(contains(msg, "unknown node 'nowhere'"));
  EXPECT_TRUE(contains(msg, R"("edges"[1][1])"));
}

TEST(NetworkErrors, SelfLoop) {
  const NetworkSpec s = make_spec({"a", "b", "c"}, {{"a", "b"}, {"b", "b"}, {"b", "c"}});
  const std::string msg = error_of<NetworkError>([&] { Network{s}; });
  EXPECT_TRUE(contains(msg, "edge 1 (b -> b) closes a cycle: b -> b"));
  expect_real_cycle(s, msg);
}

TEST(NetworkErrors, CycleOfThree) {
  // The cycle of docs/conventions.md#roles: x feeds the cycle a -> d -> c -> a, which feeds y.
  const NetworkSpec s = make_spec({"x", "a", "c", "d", "y"},
                                  {{"x", "a"}, {"a", "d"}, {"d", "c"}, {"c", "a"}, {"c", "y"}});
  const std::string msg = error_of<NetworkError>([&] { Network{s}; });
  expect_real_cycle(s, msg);
  const Names cycle = listed_cycle(msg);
  EXPECT_EQ(std::set<std::string>(cycle.begin(), cycle.end()),
            (std::set<std::string>{"a", "c", "d"}));
  EXPECT_TRUE(contains(msg, "a -> d -> c -> a"));  // rotated to start at the smallest node
}

TEST(NetworkErrors, LongerCycleWithNodesDownstream) {
  // A 5-cycle p -> q -> r -> s -> t -> p fed by x, feeding z and w; z and w come first in node
  // order, so the search starts downstream of the cycle and must not list them.
  const NetworkSpec s = make_spec({"z", "w", "x", "p", "q", "r", "s", "t"}, {{"x", "p"},
                                                                             {"p", "q"},
                                                                             {"q", "r"},
                                                                             {"r", "s"},
                                                                             {"s", "t"},
                                                                             {"t", "p"},
                                                                             {"t", "z"},
                                                                             {"z", "w"},
                                                                             {"r", "w"}});
  const std::string msg = error_of<NetworkError>([&] { Network{s}; });
  expect_real_cycle(s, msg);
  const Names cycle = listed_cycle(msg);
  EXPECT_EQ(std::set<std::string>(cycle.begin(), cycle.end()),
            (std::set<std::string>{"p", "q", "r", "s", "t"}));
}

TEST(NetworkErrors, CycleNotReachableFromAnyInput) {
  // a -> b is fine; c -> d -> e -> c has no input at all.
  const NetworkSpec s =
      make_spec({"a", "b", "c", "d", "e"}, {{"a", "b"}, {"c", "d"}, {"d", "e"}, {"e", "c"}});
  const std::string msg = error_of<NetworkError>([&] { Network{s}; });
  expect_real_cycle(s, msg);
  const Names cycle = listed_cycle(msg);
  EXPECT_EQ(std::set<std::string>(cycle.begin(), cycle.end()),
            (std::set<std::string>{"c", "d", "e"}));
  // A network that is nothing but a cycle (no input anywhere).
  const NetworkSpec ring = make_spec({"u", "v"}, {{"u", "v"}, {"v", "u"}});
  expect_real_cycle(ring, error_of<NetworkError>([&] { Network{ring}; }));
}

TEST(NetworkErrors, CycleThroughParallelEdges) {
  const NetworkSpec s =
      make_spec({"x", "a", "b"}, {{"x", "a"}, {"a", "b"}, {"a", "b"}, {"b", "a"}, {"b", "a"}});
  expect_real_cycle(s, error_of<NetworkError>([&] { Network{s}; }));
}

TEST(NetworkErrors, BackEdgeOnRandomDagsIsReportedAsARealCycle) {
  // Add an edge v -> u to a random DAG where u reaches v: always a cycle, always listed right.
  int cycles = 0;
  for (std::uint64_t seed = 0; seed < 150; ++seed) {
    NetworkSpec s = random_dag(3 + static_cast<Index>(seed % 20), 0.3, seed).spec();
    // The edge u -> v picked by seed; v -> u closes a cycle of length 2 at least, but any
    // longer path u ->* v gives a longer one. Use the last node reachable from u.
    const auto [u, v0] = s.edges[seed % s.edges.size()];
    NodeId v = v0;
    for (bool moved = true; moved;) {  // walk forward from v as far as possible
      moved = false;
      for (const auto& [a, b] : s.edges) {
        if (a == v) {
          v = b;
          moved = true;
          break;
        }
      }
    }
    s.edges.emplace_back(v, u);
    s.bias.clear();  // u may be a bias node, which must not get an incoming edge
    const std::string msg = error_of<NetworkError>([&] { Network{s}; });
    expect_real_cycle(s, msg);
    ++cycles;
  }
  EXPECT_EQ(cycles, 150);
}

TEST(NetworkErrors, IsolatedNode) {
  std::string msg = error_of<NetworkError>([] {
    Network{make_spec({"a", "b", "c"}, {{"a", "b"}})};
  });
  EXPECT_TRUE(contains(msg, "isolated node"));
  EXPECT_TRUE(contains(msg, "'c'"));
  EXPECT_FALSE(contains(msg, "'a'"));
  msg = error_of<NetworkError>([] { Network{make_spec({"p", "a", "b", "q"}, {{"a", "b"}})}; });
  EXPECT_TRUE(contains(msg, "isolated nodes"));
  EXPECT_TRUE(contains(msg, "'p', 'q'"));
  // A single node, no edge: isolated too.
  EXPECT_TRUE(contains(error_of<NetworkError>([] { Network{make_spec({"solo"}, {})}; }), "'solo'"));
}

TEST(NetworkErrors, DesignatedOutputWithoutIncomingEdge) {
  const std::string msg = error_of<NetworkError>([] {
    Network{make_spec({"a", "b", "c"}, {{"a", "b"}, {"b", "c"}}, {"a"})};
  });
  EXPECT_TRUE(contains(msg, "'a'"));
  EXPECT_TRUE(contains(msg, "designated as an output but has no incoming edge"));
}

TEST(NetworkErrors, BiasWithIncomingEdge) {
  const std::string msg = error_of<NetworkError>([] {
    Network{make_spec({"a", "b", "c"}, {{"a", "c"}, {"a", "b"}, {"b", "c"}}, {}, {"b"})};
  });
  EXPECT_TRUE(contains(msg, "bias node 'b' has an incoming edge: edge 1 (a -> b)"));
}

TEST(NetworkErrors, WeightCountDiffersFromEdgeCount) {
  for (const std::size_t n : {0U, 2U, 4U}) {
    NetworkSpec s = make_spec({"a", "b", "c"}, {{"a", "b"}, {"b", "c"}, {"a", "c"}});
    s.weights = std::vector<double>(n, 1.0);
    EXPECT_TRUE(
        contains(error_of<NetworkError>([&] { Network{s}; }),
                 "weights has " + std::to_string(n) + " entries but the network has 3 edges"));
  }
}

TEST(NetworkErrors, NonFiniteWeight) {
  for (const double bad :
       {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
        -std::numeric_limits<double>::infinity()}) {
    NetworkSpec s = make_spec({"a", "b", "c"}, {{"a", "b"}, {"b", "c"}, {"a", "c"}});
    s.weights = std::vector<double>{1.0, bad, 2.0};
    const std::string msg = error_of<NetworkError>([&] { Network{s}; });
    EXPECT_TRUE(contains(msg, "weight 1 (edge b -> c) is not finite")) << bad;
  }
}

}  // namespace
}  // namespace pathlift
