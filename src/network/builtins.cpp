#include "pathlift/builtins.hpp"

#include <fmt/format.h>

#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <iterator>
#include <numeric>
#include <stdexcept>

#include "src/core/random.hpp"

namespace pathlift {

namespace {

/// A network given by node names: the paper's examples, written as the paper draws them.
Network from_names(std::vector<std::string> names,
                   const std::vector<std::pair<std::string, std::string>>& edges,
                   const std::vector<std::string>& outputs, const std::vector<std::string>& bias) {
  NodeNames nodes(std::move(names));
  const auto id = [&](const std::string& n) {
    return nodes.by_name(n, [] { return std::string("a built-in network"); });
  };
  NetworkSpec s;
  for (const auto& [a, b] : edges) {
    s.edges.emplace_back(id(a), id(b));
  }
  std::transform(outputs.begin(), outputs.end(), std::back_inserter(s.outputs), id);
  std::transform(bias.begin(), bias.end(), std::back_inserter(s.bias), id);
  s.node_names = std::move(nodes).take_names();
  return Network(std::move(s));
}

}  // namespace

Network fig1() {
  return from_names(
      {"a", "c", "g", "d", "f", "h"},
      {{"a", "d"}, {"a", "f"}, {"c", "d"}, {"c", "f"}, {"d", "h"}, {"f", "h"}, {"g", "h"}}, {"h"},
      {"g"});
}

Network sketch_h0() {
  return from_names({"a", "b", "c", "d"},
                    {{"a", "d"}, {"a", "c"}, {"b", "d"}, {"b", "c"}, {"c", "d"}}, {"c", "d"}, {});
}

Network sketch_h1() {
  return from_names({"a", "b", "u", "k", "f"},
                    {{"a", "f"}, {"a", "k"}, {"b", "u"}, {"u", "f"}, {"u", "k"}, {"k", "f"}},
                    {"k", "f"}, {});
}

Network feed_forward(Index r, const std::vector<Index>& widths, Index q, bool bias) {
  if (r <= 0 || q <= 0) {
    throw std::invalid_argument(fmt::format(
        "a feed-forward network needs r >= 1 inputs and q >= 1 outputs (got r = {}, q = {})", r,
        q));
  }
  for (std::size_t l = 0; l < widths.size(); ++l) {
    if (widths[l] <= 0) {
      throw std::invalid_argument(
          fmt::format("hidden layer {} has width {}: widths must be >= 1", l + 1, widths[l]));
    }
  }
  std::vector<Index> sizes{r};
  sizes.insert(sizes.end(), widths.begin(), widths.end());
  sizes.push_back(q);
  const std::size_t layers = sizes.size() - 1;  // number of Linear layers

  // Count first, overflow-checked, so that absurd shapes are refused before allocating.
  const auto too_large = [&](std::string_view what, Index limit) {
    return std::invalid_argument(fmt::format("feed-forward network {} too large: more than {} {}",
                                             fmt::join(sizes, ","), limit, what));
  };
  Index nodes = 0;
  Index edges = 0;
  for (std::size_t l = 0; l <= layers; ++l) {
    if (__builtin_add_overflow(nodes, sizes[l], &nodes) ||
        __builtin_add_overflow(nodes, bias && l < layers ? 1 : 0, &nodes) ||
        nodes > std::numeric_limits<NodeId>::max()) {
      throw too_large("nodes", std::numeric_limits<NodeId>::max());
    }
  }
  for (std::size_t l = 0; l < layers; ++l) {
    Index layer_edges = 0;
    // sizes[l] + 1 cannot overflow: nodes, their sum, fits in a NodeId.
    if (__builtin_mul_overflow(sizes[l] + (bias ? 1 : 0), sizes[l + 1], &layer_edges) ||
        __builtin_add_overflow(edges, layer_edges, &edges) ||
        edges > std::numeric_limits<EdgeId>::max()) {
      throw too_large("edges", std::numeric_limits<EdgeId>::max());
    }
  }

  NetworkSpec s;
  s.node_names.reserve(static_cast<std::size_t>(nodes));
  s.edges.reserve(static_cast<std::size_t>(edges));
  std::vector<std::vector<NodeId>> layer_nodes(layers + 1);
  std::vector<NodeId> bias_node(layers, -1);
  const auto add_node = [&](std::string name) {
    s.node_names.push_back(std::move(name));
    return static_cast<NodeId>(s.node_names.size() - 1);
  };
  for (Index i = 0; i < r; ++i) {
    layer_nodes[0].push_back(add_node(fmt::format("x{}", i)));
  }
  for (std::size_t l = 1; l <= layers; ++l) {
    if (bias) {
      bias_node[l - 1] = add_node(fmt::format("b{}", l));
      s.bias.push_back(bias_node[l - 1]);
    }
    for (Index j = 0; j < sizes[l]; ++j) {
      layer_nodes[l].push_back(
          add_node(l == layers ? fmt::format("y{}", j) : fmt::format("h{}_{}", l, j)));
    }
  }
  for (std::size_t l = 0; l < layers; ++l) {
    for (NodeId out : layer_nodes[l + 1]) {
      for (NodeId in : layer_nodes[l]) {
        s.edges.emplace_back(in, out);
      }
    }
    if (bias) {
      for (NodeId out : layer_nodes[l + 1]) {
        s.edges.emplace_back(bias_node[l], out);
      }
    }
  }
  return Network(std::move(s));
}

Network random_dag(Index m, double p, std::uint64_t seed, const RandomDagOptions& options) {
  if (m < 2) {
    throw std::invalid_argument(fmt::format("random-dag needs m >= 2 nodes (got {})", m));
  }
  if (!(p >= 0.0 && p <= 1.0)) {
    throw std::invalid_argument(fmt::format("random-dag needs 0 <= p <= 1 (got {})", p));
  }
  // One draw per pair i < j: the work is quadratic in m, so m is bounded (about a second).
  if (m > random_dag_max_nodes) {
    throw std::invalid_argument(
        fmt::format("random-dag: m = {} nodes is too many (at most {}: it draws each of the "
                    "m (m - 1) / 2 pairs)",
                    m, random_dag_max_nodes));
  }
  detail::SplitMix64 rng(seed);
  const auto n = static_cast<std::size_t>(m);
  // rank[v] = position of node v in the hidden topological order.
  std::vector<NodeId> order(n);
  std::iota(order.begin(), order.end(), 0);
  if (options.shuffle) {
    detail::shuffle(order, rng);
  }
  std::vector<std::pair<NodeId, NodeId>> edges;
  for (std::size_t j = 1; j < n; ++j) {
    for (std::size_t i = 0; i < j; ++i) {
      if (rng.uniform() < p) {
        edges.emplace_back(order[i], order[j]);
        if (rng.uniform() < options.parallel_edge_probability) {
          edges.emplace_back(order[i], order[j]);
        }
      }
    }
  }
  std::vector<int> degree(n, 0);
  for (const auto& [a, b] : edges) {
    ++degree[static_cast<std::size_t>(a)];
    ++degree[static_cast<std::size_t>(b)];
  }
  for (std::size_t k = 0; k < n; ++k) {
    if (degree[static_cast<std::size_t>(order[k])] != 0) {
      continue;
    }
    // Connect an isolated node to a random other node, respecting the hidden order.
    std::size_t other = rng.below(n - 1);
    if (other >= k) {
      ++other;
    }
    const auto lo = std::min(k, other);
    const auto hi = std::max(k, other);
    edges.emplace_back(order[lo], order[hi]);
    ++degree[static_cast<std::size_t>(order[lo])];
    ++degree[static_cast<std::size_t>(order[hi])];
  }
  if (options.shuffle) {
    detail::shuffle(edges, rng);
  }
  std::vector<int> indeg(n, 0), outdeg(n, 0);
  for (const auto& [a, b] : edges) {
    ++outdeg[static_cast<std::size_t>(a)];
    ++indeg[static_cast<std::size_t>(b)];
  }
  NetworkSpec s;
  for (std::size_t v = 0; v < n; ++v) {
    s.node_names.push_back(fmt::format("n{}", v));
    const auto id = static_cast<NodeId>(v);
    if (indeg[v] == 0) {
      if (rng.uniform() < options.bias_probability) {
        s.bias.push_back(id);
      }
    } else if (outdeg[v] > 0 && rng.uniform() < options.designated_output_probability) {
      s.outputs.push_back(id);
    }
  }
  s.edges = std::move(edges);
  return Network(std::move(s));
}

std::vector<Index> parse_layer_sizes(std::string_view text) {
  std::vector<Index> sizes;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, comma - start);
    Index value = 0;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() || value <= 0) {
      throw std::invalid_argument(fmt::format(
          "layer sizes '{}': entry {} ('{}') is not a positive integer", text, sizes.size(), item));
    }
    sizes.push_back(value);
    start = comma + 1;
  }
  if (sizes.size() < 2) {
    throw std::invalid_argument(
        fmt::format("layer sizes '{}': need at least r and q (r,w1,...,wL,q)", text));
  }
  return sizes;
}

std::vector<std::string> builtin_network_names() {
  return {"fig1",
          "sketch-h0",
          "sketch-h1",
          "ff:r,w1,...,wL,q",
          "ff-nobias:r,w1,...,wL,q",
          "random-dag:m,p,seed"};
}

Network builtin_network(std::string_view name) {
  if (name == "fig1") {
    return fig1();
  }
  if (name == "sketch-h0") {
    return sketch_h0();
  }
  if (name == "sketch-h1") {
    return sketch_h1();
  }
  const auto ff = [&](std::string_view spec, bool bias) {
    const auto sizes = parse_layer_sizes(spec);
    return feed_forward(sizes.front(), std::vector<Index>(sizes.begin() + 1, sizes.end() - 1),
                        sizes.back(), bias);
  };
  if (name.starts_with("ff:")) {
    return ff(name.substr(3), true);
  }
  if (name.starts_with("ff-nobias:")) {
    return ff(name.substr(10), false);
  }
  if (name.starts_with("random-dag:")) {
    const std::string_view args = name.substr(11);
    const auto bad = [&]() {
      return std::invalid_argument(
          fmt::format("'{}': expected random-dag:m,p,seed (e.g. random-dag:12,0.3,7)", name));
    };
    const std::size_t c1 = args.find(',');
    const std::size_t c2 = c1 == std::string_view::npos ? c1 : args.find(',', c1 + 1);
    if (c2 == std::string_view::npos) {
      throw bad();
    }
    Index m = 0;
    double p = 0;
    std::uint64_t seed = 0;
    const auto parse = [&](std::string_view item, auto& value) {
      const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
      if (item.empty() || ec != std::errc() || ptr != item.data() + item.size()) {
        throw bad();
      }
    };
    parse(args.substr(0, c1), m);
    parse(args.substr(c1 + 1, c2 - c1 - 1), p);
    parse(args.substr(c2 + 1), seed);
    return random_dag(m, p, seed);
  }
  std::string names;
  for (const auto& n : builtin_network_names()) {
    names += (names.empty() ? "" : ", ") + n;
  }
  throw std::invalid_argument(
      fmt::format("unknown built-in network '{}' (known: {})", name, names));
}

}  // namespace pathlift

namespace pathlift {

std::vector<double> normal_weights(Index d, std::uint64_t seed) {
  if (d < 0) {
    throw std::invalid_argument(fmt::format("normal_weights: d = {} is negative", d));
  }
  detail::SplitMix64 rng(seed);
  std::vector<double> w(static_cast<std::size_t>(d));
  for (double& x : w) {
    x = rng.normal();
  }
  return w;
}

ThetaSource default_theta_source(const Network& net) {
  return net.has_weights() ? ThetaSource::stored_weights : ThetaSource::normal_seed_0;
}

std::vector<double> default_theta(const Network& net) {
  if (default_theta_source(net) == ThetaSource::stored_weights) {
    const auto w = net.weights();
    return {w.begin(), w.end()};
  }
  return normal_weights(net.num_params(), 0);
}

}  // namespace pathlift
