// The pathlift-network v1 JSON format (issue 2, item 4): parsing, node references, optional
// keys, round trips, files, and errors that name the key and the offending entry.

#include "pathlift/io.hpp"
#include "pathlift/layers.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "pathlift/builtins.hpp"
#include "pathlift/counting.hpp"
#include "pathlift/error.hpp"
#include "reference.hpp"
#include "support.hpp"

namespace pathlift {
namespace {

namespace fs = std::filesystem;
using Names = std::vector<std::string>;
using testing::contains;
using testing::data_file;
using testing::error_of;
using testing::expect_same_network;
using testing::names_of;
using testing::TempDir;
using testing::TempPath;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// A document with the mandatory header and the given extra keys (a JSON fragment).
std::string doc(const std::string& rest) {
  return R"({"format": "pathlift-network", "version": 1, )" + rest + "}";
}

const std::string k_issue_example = R"({"format": "pathlift-network", "version": 1,
 "nodes": ["a", "c", "g", "d", "f", "h"],
 "edges": [["a", "d"], ["a", "f"], ["c", "d"], ["c", "f"], ["d", "h"], ["f", "h"], ["g", "h"]],
 "weights": [0.5, -1.0, 2.0, 0.25, 1.5, -0.5, 3.0],
 "outputs": ["h"], "bias": ["g"], "activations": {"d": "relu"}})";

// ---------------------------------------------------------------------------------------------
// Parsing

void expect_issue_example(const Network& net) {
  EXPECT_EQ(net.node_names(), (Names{"a", "c", "g", "d", "f", "h"}));
  ASSERT_EQ(net.num_edges(), 7);
  const std::vector<std::pair<std::string, std::string>> edges = {
      {"a", "d"}, {"a", "f"}, {"c", "d"}, {"c", "f"}, {"d", "h"}, {"f", "h"}, {"g", "h"}};
  for (EdgeId e = 0; e < 7; ++e) {
    EXPECT_EQ(net.node_name(net.source(e)), edges[static_cast<std::size_t>(e)].first);
    EXPECT_EQ(net.node_name(net.target(e)), edges[static_cast<std::size_t>(e)].second);
  }
  ASSERT_TRUE(net.has_weights());
  EXPECT_EQ(std::vector<double>(net.weights().begin(), net.weights().end()),
            (std::vector<double>{0.5, -1.0, 2.0, 0.25, 1.5, -0.5, 3.0}));
  EXPECT_EQ(names_of(net, net.inputs()), (Names{"a", "c", "g"}));
  EXPECT_EQ(names_of(net, net.data_inputs()), (Names{"a", "c"}));
  EXPECT_EQ(names_of(net, net.bias_nodes()), (Names{"g"}));
  EXPECT_EQ(names_of(net, net.hidden()), (Names{"d", "f"}));
  EXPECT_EQ(names_of(net, net.outputs()), (Names{"h"}));
  EXPECT_EQ(net.activation(*net.find_node("d")), Activation::relu());
  EXPECT_EQ(net.activation(*net.find_node("h")), Activation::identity());
}

TEST(Io, IssueExampleParses) {
  const Network net = parse_network(k_issue_example);
  expect_issue_example(net);
  // Same topology as the built-in fig1.
  const Network builtin = fig1();
  EXPECT_EQ(net.spec().edges, builtin.spec().edges);
  EXPECT_EQ(net.node_names(), builtin.node_names());
}

TEST(Io, DataFileFig1) {
  expect_issue_example(read_network(data_file("fig1.json")));
}

TEST(Io, DataFileDesignatedOutputFeedingAnotherNode) {
  const Network net = read_network(data_file("designated.json"));
  EXPECT_EQ(net.num_edges(), 10);
  EXPECT_EQ(names_of(net, net.data_inputs()), (Names{"x1", "x2"}));
  EXPECT_EQ(names_of(net, net.bias_nodes()), (Names{"one"}));
  EXPECT_EQ(names_of(net, net.hidden()), (Names{"u", "v"}));
  EXPECT_EQ(names_of(net, net.outputs()), (Names{"o1", "o2"}));
  const NodeId o1 = *net.find_node("o1");
  EXPECT_TRUE(net.is_designated_output(o1));
  EXPECT_FALSE(net.out_edges(o1).empty());
  // Edges 0 and 1 are parallel (one by name, one by index).
  EXPECT_EQ(net.source(0), net.source(1));
  EXPECT_EQ(net.target(0), net.target(1));
  EXPECT_EQ(net.edge_label(7), "v -> o2");  // [5, 6] by index
  EXPECT_EQ(net.activation(*net.find_node("v")), Activation::leaky_relu(0.5));
  EXPECT_EQ(net.activation(o1), Activation::relu());  // activations key "4" = index of o1
  // Paths, counted by hand: F(u) = 4, F(o1) = 5, F(v) = 9, F(o2) = 10; P = 15. A path
  // ending at o1 is a prefix of a longer one through o1 -> v.
  EXPECT_EQ(testing::ref_paths(net).size(), 15U);
  EXPECT_EQ(count_paths_total(net).value(), 15U);
}

TEST(Io, NodesAsCount) {
  const Network net = read_network(data_file("counted.json"));
  EXPECT_EQ(net.node_names(), (Names{"0", "1", "2", "3"}));
  EXPECT_EQ(names_of(net, net.outputs()), (Names{"2", "3"}));
  EXPECT_EQ(names_of(net, net.hidden()), (Names{"1"}));
  // With a node count, "2" (a name) and 2 (an index) are the same node.
  const Network by_name = parse_network(doc(
      R"("nodes": 4, "edges": [["0", "1"], ["1", "2"], [1, "2"], ["2", 3]], "outputs": ["2"])"));
  expect_same_network(net, by_name);
}

TEST(Io, NodeReferencesByNameOrIndex) {
  const Network by_name = parse_network(k_issue_example);
  const Network by_index = parse_network(doc(R"(
      "nodes": ["a", "c", "g", "d", "f", "h"],
      "edges": [[0, 3], ["a", 4], [1, "d"], [1, 4], [3, 5], ["f", 5], [2, "h"]],
      "weights": [0.5, -1.0, 2.0, 0.25, 1.5, -0.5, 3.0],
      "outputs": [5], "bias": [2], "activations": {"3": "relu"})"));
  expect_same_network(by_name, by_index);
}

TEST(Io, ActivationKeyIsANameBeforeAnIndex) {
  // Node names "1", "0": key "0" is the node named "0" (index 1), not index 0.
  const Network net = parse_network(
      doc(R"("nodes": ["1", "0", "x", "y"], "edges": [["x", "1"], ["1", "0"], ["0", "y"]],
             "activations": {"0": "identity", "2": "identity"})"));
  EXPECT_EQ(net.activation(1), Activation::identity());  // named "0": hidden, overridden
  EXPECT_EQ(net.activation(0), Activation::relu());      // named "1": hidden, default
}

TEST(Io, OptionalKeys) {
  const Network net =
      parse_network(doc(R"("nodes": ["x", "u", "y"], "edges": [["x", "u"], ["u", "y"]])"));
  EXPECT_FALSE(net.has_weights());
  EXPECT_TRUE(net.bias_nodes().empty());
  EXPECT_EQ(names_of(net, net.outputs()), (Names{"y"}));  // sinks are outputs
  EXPECT_EQ(net.activation(1), Activation::relu());       // defaults
  EXPECT_EQ(net.activation(2), Activation::identity());
  // Empty lists and objects, null weights and a "name" are the same as absent.
  const Network same = parse_network(doc(R"("name": "tiny", "nodes": ["x", "u", "y"],
      "edges": [["x", "u"], ["u", "y"]], "weights": null, "outputs": [], "bias": [],
      "activations": {})"));
  expect_same_network(net, same);
  // Key order does not matter.
  const Network reordered = parse_network(
      R"({"edges": [["x", "u"], ["u", "y"]], "nodes": ["x", "u", "y"], "version": 1,
          "format": "pathlift-network"})");
  expect_same_network(net, reordered);
}

TEST(Io, WeightsMayBeIntegers) {
  const Network net =
      parse_network(doc(R"("nodes": ["x", "y"], "edges": [["x", "y"]], "weights": [-3])"));
  EXPECT_EQ(net.weights()[0], -3.0);
}

// ---------------------------------------------------------------------------------------------
// Round trips

void expect_round_trip(const Network& net) {
  for (const int indent : {-1, 0, 1, 4}) {
    const std::string text = network_to_json(net, indent);
    const Network back = parse_network(text);
    expect_same_network(net, back);
    // Writing again gives the same text: the format is canonical.
    EXPECT_EQ(network_to_json(back, indent), text);
  }
}

TEST(Io, RoundTripBuiltins) {
  for (const char* name : {"fig1", "sketch-h0", "sketch-h1", "ff:3,4,2", "ff-nobias:2,3,3,1",
                           "ff:1,1", "random-dag:9,0.4,3"}) {
    SCOPED_TRACE(name);
    const Network net = builtin_network(name);
    expect_round_trip(net);
    expect_round_trip(net.with_weights(normal_weights(net.num_edges(), 11)));
  }
}

TEST(Io, RoundTripRandomDagsWithWeightsAndActivations) {
  const double specials[] = {0.1,
                             1.0 / 3.0,
                             -0.0,
                             5e-324,
                             std::numeric_limits<double>::max(),
                             -std::numeric_limits<double>::min(),
                             1e22,
                             123456789.0};
  for (std::uint64_t seed = 0; seed < 60; ++seed) {
    SCOPED_TRACE(seed);
    const Network net = random_dag(2 + static_cast<Index>(seed % 14), 0.45, seed);
    NetworkSpec s = net.spec();
    std::vector<double> w = normal_weights(net.num_edges(), seed);
    for (std::size_t k = 0; k < w.size(); k += 3) {
      w[k] = specials[(k / 3 + seed) % std::size(specials)];
    }
    s.weights = w;
    for (NodeId v = 0; v < net.num_nodes(); ++v) {
      if (net.is_input(v)) {
        continue;
      }
      switch ((static_cast<std::uint64_t>(v) + seed) % 4) {
        case 0:
          s.activations.emplace_back(v, Activation::leaky_relu(1.0 / (3.0 + double(v))));
          break;
        case 1:
          s.activations.emplace_back(
              v, net.is_hidden(v) ? Activation::identity() : Activation::relu());
          break;
        default:
          break;  // the default
      }
    }
    expect_round_trip(Network(s));
  }
}

TEST(Io, WriteAndReadFile) {
  const TempDir dir("roundtrip");
  const std::string path = dir / "net.json";
  const Network net = read_network(data_file("designated.json"));
  write_network(net, path);
  expect_same_network(net, read_network(path));
  EXPECT_EQ(dir.names(), std::vector<std::string>{"net.json"});  // the temporary was renamed
  // The file is the pretty form of network_to_json.
  EXPECT_EQ(slurp(path), network_to_json(net, 1) + "\n");
  // Writing again replaces the file.
  write_network(fig1(), path);
  expect_same_network(fig1(), read_network(path));
  EXPECT_EQ(dir.names(), std::vector<std::string>{"net.json"});
}

TEST(Io, WriteFollowsNoPlantedLinkAndKeepsTheUsersFiles) {
  const TempDir dir("planted");
  const std::string victim = dir / "victim";
  { std::ofstream(victim) << "precious"; }
  // The names a naive writer would open: none is followed, none is consumed.
  const std::vector<std::string> traps = {"net.json.tmp", ".net.json.tmp", ".net.json.XXXXXX.tmp"};
  for (const std::string& trap : traps) {
    fs::create_symlink(victim, dir / trap);
  }
  { std::ofstream(dir / "mine.json.tmp") << "my own"; }
  write_network(fig1(), dir / "net.json");
  write_network(fig1(), dir / "mine.json");
  expect_same_network(fig1(), read_network(dir / "net.json"));
  EXPECT_EQ(slurp(victim), "precious");
  EXPECT_EQ(slurp(dir / "mine.json.tmp"), "my own");
  std::vector<std::string> want = traps;
  want.insert(want.end(), {"mine.json", "mine.json.tmp", "net.json", "victim"});
  std::sort(want.begin(), want.end());
  EXPECT_EQ(dir.names(), want);
}

TEST(Io, WrittenFileHasTheModeOfANewFile) {
  const TempDir dir("mode");
  const mode_t old_mask = ::umask(027);
  write_network(fig1(), dir / "net.json");
  ::umask(old_mask);
  EXPECT_EQ(fs::status(dir / "net.json").permissions(),
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
}

TEST(IoErrors, FailedWriteLeavesNothing) {
  const TempDir dir("failed");
  fs::create_directory(dir / "sub");
  for (const std::string& path : {dir / "sub", dir / "sub/", dir / "missing/net.json"}) {
    const std::string msg = error_of<FormatError>([&] { write_network(fig1(), path); });
    EXPECT_TRUE(contains(msg, "cannot write network file '" + path + "'")) << msg;
  }
  EXPECT_TRUE(contains(error_of<FormatError>([&] { write_network(fig1(), dir / "sub"); }),
                       "it is a directory"));
  // A FIFO is refused as the CLI refuses it (check_output_path), not replaced by a file.
  ASSERT_EQ(::mkfifo((dir / "pipe").c_str(), 0600), 0);
  EXPECT_TRUE(contains(error_of<FormatError>([&] { write_network(fig1(), dir / "pipe"); }),
                       "it is a FIFO (named pipe), not a regular file"));
  EXPECT_TRUE(fs::is_fifo(dir / "pipe"));
  fs::remove(dir / "pipe");
  EXPECT_EQ(dir.names(), std::vector<std::string>{"sub"});
  EXPECT_TRUE(fs::is_empty(dir / "sub"));
  // An unwritable folder: the temporary cannot be made, the error gives the system's reason.
  if (::geteuid() != 0) {
    fs::permissions(dir / "sub", fs::perms::owner_read | fs::perms::owner_exec);
    const std::string msg = error_of<FormatError>([&] { write_network(fig1(), dir / "sub/n"); });
    EXPECT_TRUE(contains(msg, std::strerror(EACCES))) << msg;
    fs::permissions(dir / "sub", fs::perms::owner_all);
    EXPECT_TRUE(fs::is_empty(dir / "sub"));
  }
}

TEST(Io, WrittenKeysAreTheDocumentedOnes) {
  const std::string text = network_to_json(read_network(data_file("fig1.json")));
  for (const char* key : {"\"format\":\"pathlift-network\"", "\"version\":1", "\"nodes\":",
                          "\"edges\":", "\"weights\":", "\"outputs\":", "\"bias\":"}) {
    EXPECT_TRUE(contains(text, key));
  }
  // fig1's "d": "relu" is the default for a hidden node, so it need not be written.
  EXPECT_FALSE(contains(network_to_json(fig1()), "\"weights\""));
}

// ---------------------------------------------------------------------------------------------
// Errors: each names the key and, where it applies, the index of the offending entry.

struct BadInput {
  const char* text;
  std::vector<const char*> parts;  // what the message must contain
};

const std::string k_nodes = R"("nodes": ["a", "b", "c"], )";

TEST(IoErrors, BadDocumentsNameKeyAndEntry) {
  const std::vector<BadInput> cases = {
      {R"({"format": "pathlift-network", )", {"invalid JSON"}},
      {R"([1, 2])", {"JSON object", "array"}},
      {R"("just a string")", {"JSON object"}},
      {R"({"format": "pathlift-network", "version": 1, "nodes": 2, "edges": [[0, 1]],
           "edgez": []})",
       {"unknown key \"edgez\""}},
      {R"({"version": 1, "nodes": 2, "edges": [[0, 1]]})", {"\"format\"", "pathlift-network"}},
      {R"({"format": "pathlift-graph", "version": 1, "nodes": 2, "edges": [[0, 1]]})",
       {"\"format\""}},
      {R"({"format": "pathlift-network", "nodes": 2, "edges": [[0, 1]]})", {"\"version\""}},
      {R"({"format": "pathlift-network", "version": "1", "nodes": 2, "edges": [[0, 1]]})",
       {"\"version\""}},
      {R"({"format": "pathlift-network", "version": 3, "nodes": 2, "edges": [[0, 1]]})",
       {"\"version\" 3", "not supported"}},
      {R"({"format": "pathlift-network", "version": 2, "nodes": 2, "edges": [[0, 1]]})",
       {"missing key \"num_params\" (version 2)"}},
      {R"({"format": "pathlift-network", "version": 1, "nodes": 2, "edges": [[0, 1]],
           "num_params": 1, "params": [0]})",
       {"\"num_params\" belongs to version 2"}},
      {R"({"format": "pathlift-network", "version": 2, "nodes": 2, "edges": [[0, 1]],
           "num_params": 1, "params": [1]})",
       {"\"params\"[0]", "out of range"}},
      {R"({"format": "pathlift-network", "version": 2, "nodes": 2, "edges": [[0, 1]],
           "num_params": 1, "params": [{"fixd": 1}]})",
       {"\"params\"[0]", "fixed"}},
      {R"({"format": "pathlift-network", "version": 2, "nodes": 2, "edges": [[0, 1]],
           "num_params": 1, "params": [0, 0]})",
       {"\"params\" has 2 entries but \"edges\" has 1"}},
      {R"({"format": "pathlift-network", "version": 1, "edges": [[0, 1]]})",
       {"missing key \"nodes\""}},
      {R"({"format": "pathlift-network", "version": 1, "nodes": "abc", "edges": []})",
       {"\"nodes\"", "string"}},
      {R"({"format": "pathlift-network", "version": 1, "nodes": -1, "edges": []})",
       {"\"nodes\"", "-1", "out of range"}},
      {R"({"format": "pathlift-network", "version": 1, "nodes": ["a", 3], "edges": []})",
       {"\"nodes\"[1]", "string"}},
      {R"({"format": "pathlift-network", "version": 1, "nodes": 2})", {"missing key \"edges\""}},
      {R"({"format": "pathlift-network", "version": 1, "nodes": 2, "edges": {"0": 1}})",
       {"\"edges\"", "pairs"}},
  };
  for (const auto& c : cases) {
    const std::string msg = error_of<FormatError>([&] { (void)parse_network(c.text); });
    for (const char* part : c.parts) {
      EXPECT_TRUE(contains(msg, part)) << "input: " << c.text;
    }
  }
}

TEST(IoErrors, BadFieldsNameKeyAndEntry) {
  const std::vector<BadInput> cases = {
      // edges
      {R"("edges": [["a", "b"], ["a"]])", {"\"edges\"[1]", "[source, target] pair"}},
      {R"("edges": [["a", "b"], ["b", "c"], ["a", "b", "c"]])", {"\"edges\"[2]", "pair"}},
      {R"("edges": ["ab"])", {"\"edges\"[0]", "pair"}},
      {R"("edges": [["a", "b"], ["a", "zz"]])", {"\"edges\"[1][1]", "unknown node 'zz'"}},
      {R"("edges": [["a", "b"], ["b", "c"], [7, "c"]])",
       {"\"edges\"[2][0]", "node index 7 is out of range", "3 nodes"}},
      {R"("edges": [["a", -1]])", {"\"edges\"[0][1]", "-1", "out of range"}},
      {R"("edges": [["a", 1.0]])", {"\"edges\"[0][1]", "name (string) or a 0-based index"}},
      {R"("edges": [[true, "b"]])", {"\"edges\"[0][0]", "boolean"}},
      {R"("edges": [["a", "b"], [null, "b"]])", {"\"edges\"[1][0]", "null"}},
      {R"("edges": [["a", 18446744073709551615]])", {"\"edges\"[0][1]", "out of range"}},
      // weights
      {R"("edges": [["a", "b"], ["b", "c"]], "weights": 3)", {"\"weights\"", "list of numbers"}},
      {R"("edges": [["a", "b"], ["b", "c"]], "weights": [1, "x"])",
       {"\"weights\"[1]", "must be a number", "\"x\""}},
      {R"("edges": [["a", "b"], ["b", "c"]], "weights": [true, 1])", {"\"weights\"[0]"}},
      {R"("edges": [["a", "b"], ["b", "c"]], "weights": [1, null])", {"\"weights\"[1]"}},
      // outputs and bias
      {R"("edges": [["a", "b"], ["b", "c"]], "outputs": "c")", {"\"outputs\"", "array"}},
      {R"("edges": [["a", "b"], ["b", "c"]], "outputs": ["c", "zz"])",
       {"\"outputs\"[1]", "unknown node 'zz'"}},
      {R"("edges": [["a", "b"], ["b", "c"]], "outputs": [9])", {"\"outputs\"[0]", "node index 9"}},
      {R"("edges": [["a", "c"], ["b", "c"]], "bias": ["b", 3])", {"\"bias\"[1]", "node index 3"}},
      {R"("edges": [["a", "c"], ["b", "c"]], "bias": {"b": 1})", {"\"bias\"", "array"}},
      // activations
      {R"("edges": [["a", "b"], ["b", "c"]], "activations": ["relu"])",
       {"\"activations\"", "object"}},
      {R"("edges": [["a", "b"], ["b", "c"]], "activations": {"b": 1})",
       {"\"activations\"[\"b\"]", "must be a string"}},
      {R"("edges": [["a", "b"], ["b", "c"]], "activations": {"b": ["relu"]})",
       {"\"activations\"[\"b\"]", "must be a string"}},
      {R"("edges": [["a", "b"], ["b", "c"]], "activations": {"zz": "relu"})",
       {"\"activations\"[\"zz\"]", "unknown node 'zz'"}},
      {R"("edges": [["a", "b"], ["b", "c"]], "activations": {"5": "relu"})",
       {"\"activations\"[\"5\"]", "node index 5 is out of range"}},
      {R"("edges": [["a", "b"], ["b", "c"]], "activations": {"b": "softplus"})",
       {"\"activations\"[\"b\"]", "unknown activation 'softplus'"}},
      {R"("edges": [["a", "b"], ["b", "c"]], "activations": {"b": "leaky_relu:x"})",
       {"\"activations\"[\"b\"]", "leaky_relu:x"}},
  };
  for (const auto& c : cases) {
    const std::string text = doc(k_nodes + c.text);
    const std::string msg = error_of<FormatError>([&] { (void)parse_network(text); });
    for (const char* part : c.parts) {
      EXPECT_TRUE(contains(msg, part)) << "input: " << text;
    }
  }
}

TEST(IoErrors, NumberTooLargeForADouble) {
  // nlohmann reports 1e400 as out_of_range, not a parse error: still a FormatError here.
  const std::string msg = error_of<FormatError>([] {
    (void)parse_network(doc(R"("nodes": ["a", "b"], "edges": [["a", "b"]], "weights": [1e400])"));
  });
  EXPECT_TRUE(contains(msg, "1e400"));
}

TEST(IoErrors, NetworkErrorsThroughJson) {
  // Model errors keep their type (NetworkError) and their message.
  std::string msg = error_of<NetworkError>([] { (void)read_network(data_file("cycle.json")); });
  EXPECT_TRUE(contains(msg, "cycle.json"));  // read_network prefixes the path
  EXPECT_TRUE(contains(msg, "closes a cycle: a -> d -> c -> a"));
  msg = error_of<NetworkError>(
      [] { (void)parse_network(doc(R"("nodes": ["a", "b", "a"], "edges": [[0, 1]])")); });
  EXPECT_TRUE(contains(msg, "duplicate node name 'a'"));
  msg = error_of<NetworkError>([] {
    (void)parse_network(doc(R"("nodes": ["a", "b"], "edges": [["a", "b"]], "weights": [1, 2])"));
  });
  EXPECT_TRUE(contains(msg, "weights has 2 entries but the network has 1 edges"));
  msg = error_of<NetworkError>([] { (void)parse_network(doc(R"("nodes": 0, "edges": [])")); });
  EXPECT_TRUE(contains(msg, "empty"));
  msg =
      error_of<NetworkError>([] { (void)parse_network(doc(R"("nodes": 3, "edges": [[0, 1]])")); });
  EXPECT_TRUE(contains(msg, "isolated node"));
  EXPECT_TRUE(contains(msg, "'2'"));
  msg = error_of<NetworkError>([] {
    (void)parse_network(doc(R"("nodes": ["a", "b"], "edges": [["a", "b"]], "outputs": ["a"])"));
  });
  EXPECT_TRUE(contains(msg, "'a'"));
  msg = error_of<NetworkError>([] {
    (void)parse_network(doc(R"("nodes": ["a", "b"], "edges": [["a", "b"]], "bias": ["b"])"));
  });
  EXPECT_TRUE(contains(msg, "bias node 'b'"));
}

TEST(IoErrors, Files) {
  const std::string missing = data_file("no-such-network.json");
  std::string msg = error_of<FormatError>([&] { (void)read_network(missing); });
  EXPECT_TRUE(contains(msg, "cannot open network file"));
  EXPECT_TRUE(contains(msg, missing));
  // A FormatError from a file names the file too.
  const TempPath bad("bad.json");
  {
    std::ofstream out(bad.str());
    out << R"({"format": "pathlift-network", "version": 1, "nodes": 2, "edges": [[0, 5]]})";
  }
  msg = error_of<FormatError>([&] { (void)read_network(bad.str()); });
  EXPECT_TRUE(contains(msg, bad.str()));
  EXPECT_TRUE(contains(msg, "\"edges\"[0][1]"));
  // Writing into a directory that does not exist.
  const std::string nowhere = data_file("no-such-dir/out.json");
  msg = error_of<FormatError>([&] { write_network(fig1(), nowhere); });
  EXPECT_TRUE(contains(msg, nowhere));
}

TEST(IoErrors, HugeIndicesAndCountsAreRefusedCleanly) {
  // An index above 2^63 must not read as a negative one; a huge node count must not allocate.
  try {
    (void)parse_network(R"({"format": "pathlift-network", "version": 1, "nodes": 3,
                            "edges": [[0, 18446744073709551615]]})");
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("18446744073709551615 is out of range"), std::string::npos)
        << e.what();
  }
  try {
    (void)parse_network(
        R"({"format": "pathlift-network", "version": 1, "nodes": 5000000000, "edges": [[0, 1]]})");
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("node count 5000000000 is out of range"),
              std::string::npos)
        << e.what();
  }
}

TEST(IoErrors, AnActivationGivenTwiceIsRefused) {
  // By name and by index: the same node, two activations.
  EXPECT_THROW((void)parse_network(R"({"format": "pathlift-network", "version": 1,
      "nodes": ["a", "b", "c"], "edges": [["a", "b"], ["b", "c"]],
      "activations": {"b": "relu", "1": "identity"}})"),
               NetworkError);
}

/// A value nested 100,000 arrays deep (a 200 KB file): the reader answers with a short message
/// instead of overflowing the stack while printing it (issue 19).
TEST(Io, DeeplyNestedValuesGetAShortMessage) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::string base = R"("nodes": ["x", "y"], )";
  for (const std::string& rest :
       {base + R"("edges": )" + deep,
        base + R"("edges": [["x", "y"]], "weights": )" + "[" + deep + "]",
        base + R"("edges": [["x", "y"]], "activations": {"y": )" + deep + "}",
        base + R"("edges": [["x", )" + deep + "]]"}) {
    const std::string msg = error_of<FormatError>([&] { (void)parse_network(doc(rest)); });
    EXPECT_LT(msg.size(), 300U) << msg.substr(0, 300);
    EXPECT_FALSE(msg.empty());
  }
  const std::string layers =
      R"({"format": "pathlift-layers", "version": 1, "input_shape": )" + deep + "}";
  const std::string msg = error_of<FormatError>([&] { (void)parse_layer_graph(layers); });
  EXPECT_LT(msg.size(), 300U) << msg.substr(0, 300);
}

}  // namespace
}  // namespace pathlift
