// The k heaviest paths and paths sampled by weight (heavy_paths.hpp), on the DAG.

#include "pathlift/heavy_paths.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <queue>
#include <stdexcept>

#include "pathlift/error.hpp"
#include "pathlift/limits.hpp"
#include "src/core/json.hpp"
#include "src/core/parallel.hpp"
#include "src/core/random.hpp"
#include "src/dp/dp_scaled.hpp"
#include "src/dp/max_value.hpp"
#include "src/layer_dp/detail/layer_paths.hpp"
#include "src/network/dag.hpp"
#include "src/network/parameters.hpp"

namespace pathlift {

double WeightedPath::value() const {
  return sign * magnitude.value();
}

double WeightedPath::log10_abs() const {
  return magnitude.log10();
}

namespace {

using Mag = detail::MaxValue;

constexpr Mag k_one = Mag::one();

void check_arguments(const char* what, Index count, double s, bool finite) {
  if (count < 0) {
    throw std::invalid_argument(fmt::format("{}: the number of paths {} is negative", what, count));
  }
  if (!(s >= 0) || (finite && std::isinf(s))) {
    throw std::invalid_argument(
        fmt::format("{}: s = {} must be {}>= 0", what, s, finite ? "finite and " : ""));
  }
}

/// The path from its edges (walk order) and start node, with its exact product.
WeightedPath make_path(const Network& net, const double* w, NodeId start,
                       const std::vector<EdgeId>& edges) {
  WeightedPath p;
  p.nodes.push_back(start);
  Mag mag = k_one;
  int sign = 1;
  for (const EdgeId e : edges) {
    p.edges.push_back(e);
    p.nodes.push_back(net.target(e));
    p.params.push_back(net.edge_param(e) == kFixedEdge ? -1 : net.edge_param(e));
    p.weights.push_back(w[e]);
    mag = mag.times(w[e]);
    sign = w[e] < 0 ? -sign : sign;
  }
  p.magnitude = mag.m == 0 ? ScaledReal{} : ScaledReal{mag.m, mag.k};
  p.sign = mag.m == 0 ? 0 : sign;
  return p;
}

/// A search state: a path prefix (a chain of records) and whether it stops here (a complete
/// path ending at an output) or is to be extended.
struct Record {
  Index parent;  ///< the record of the prefix without the last edge, -1 at the start node
  NodeId node;
  EdgeId edge;  ///< the last edge, -1 at the start node
  Mag prefix;   ///< the product of the prefix's |weights|
};

struct Item {
  Mag bound;  ///< prefix x the best suffix (stop: the prefix itself), to 40 bits (coarse)
  Index record;
  bool stop;
};

class TopSearch {
 public:
  TopSearch(const Network& net, const double* w, double s, std::size_t max_memory)
      : m_net(net), m_w(w), m_unit(s == 0), m_max_memory(max_memory) {
    best_suffixes();
  }

  std::vector<WeightedPath> run(Index k) {
    std::vector<WeightedPath> out;
    if (k == 0) {
      return out;
    }
    for (const NodeId v : m_net.inputs()) {
      push_extend(add({-1, v, -1, k_one}));
    }
    while (!m_queue.empty() && std::cmp_less(out.size(), k)) {
      const Item it = m_queue.top();
      m_queue.pop();
      const Record r = m_records[static_cast<std::size_t>(it.record)];
      if (it.stop) {
        out.push_back(path_of(it.record));
        continue;
      }
      if (m_net.is_output(r.node)) {
        m_queue.push({r.prefix.coarse(40), it.record, true});
      }
      for (const EdgeId e : m_net.out_edges(r.node)) {
        push_extend(add({it.record, m_net.target(e), e, r.prefix.times(weight(e))}));
      }
    }
    return out;
  }

 private:
  [[nodiscard]] double weight(EdgeId e) const { return m_unit ? 1.0 : m_w[e]; }

  /// G(v): the largest product from v to an output (1 at an output, which may stop there).
  void best_suffixes() {
    const auto topo = m_net.topological_order();
    m_suffix.assign(topo.size(), Mag{});
    for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
      const NodeId v = *it;
      Mag best = m_net.is_output(v) ? k_one : Mag{};
      for (const EdgeId e : m_net.out_edges(v)) {
        const Mag x = m_suffix[static_cast<std::size_t>(m_net.target(e))].times(weight(e));
        best = best.less(x) ? x : best;
      }
      m_suffix[static_cast<std::size_t>(v)] = best;
    }
  }

  Index add(const Record& r) {
    if ((m_records.size() & 0xFFFF) == 0) {
      // Each record also has about one frontier item: 40 + 32 bytes.
      require_bytes(
          72.0 * static_cast<double>(m_records.size() + 0x10000), m_max_memory,
          fmt::format("the search for the heaviest paths ({} prefixes so far)", m_records.size()));
    }
    m_records.push_back(r);
    return static_cast<Index>(m_records.size()) - 1;
  }

  void push_extend(Index record) {
    const Record& r = m_records[static_cast<std::size_t>(record)];
    const Mag bound = r.prefix.times(m_suffix[static_cast<std::size_t>(r.node)]).coarse(40);
    if (m_suffix[static_cast<std::size_t>(r.node)].m == 0 && !can_reach_output(r.node)) {
      return;  // no output below: no path
    }
    m_queue.push({bound, record, false});
  }

  /// Whether some path from v reaches an output (its best suffix may be 0 through a zero weight).
  [[nodiscard]] bool can_reach_output(NodeId v) {
    if (m_reach.empty()) {
      const auto topo = m_net.topological_order();
      m_reach.assign(topo.size(), 0);
      for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
        std::uint8_t r = m_net.is_output(*it) ? 1 : 0;
        for (const EdgeId e : m_net.out_edges(*it)) {
          r |= m_reach[static_cast<std::size_t>(m_net.target(e))];
        }
        m_reach[static_cast<std::size_t>(*it)] = r;
      }
    }
    return m_reach[static_cast<std::size_t>(v)] != 0;
  }

  [[nodiscard]] std::vector<EdgeId> edges_of(Index record) const {
    std::vector<EdgeId> edges;
    for (Index r = record; m_records[static_cast<std::size_t>(r)].parent >= 0;
         r = m_records[static_cast<std::size_t>(r)].parent) {
      edges.push_back(m_records[static_cast<std::size_t>(r)].edge);
    }
    std::reverse(edges.begin(), edges.end());
    return edges;
  }

  [[nodiscard]] NodeId start_of(Index record) const {
    Index r = record;
    while (m_records[static_cast<std::size_t>(r)].parent >= 0) {
      r = m_records[static_cast<std::size_t>(r)].parent;
    }
    return m_records[static_cast<std::size_t>(r)].node;
  }

  [[nodiscard]] WeightedPath path_of(Index record) const {
    return make_path(m_net, m_w, start_of(record), edges_of(record));
  }

  /// The canonical order of two items of one bound: their start nodes' order, then their edges
  /// (each node's out-edges by increasing index), a path that stops before one that goes on.
  [[nodiscard]] bool canonical_before(const Item& a, const Item& b) const {
    const NodeId sa = start_of(a.record);
    const NodeId sb = start_of(b.record);
    if (sa != sb) {
      return input_rank(sa) < input_rank(sb);
    }
    const std::vector<EdgeId> ea = edges_of(a.record);
    const std::vector<EdgeId> eb = edges_of(b.record);
    const std::size_t n = std::min(ea.size(), eb.size());
    for (std::size_t i = 0; i < n; ++i) {
      if (ea[i] != eb[i]) {
        return ea[i] < eb[i];
      }
    }
    if (ea.size() != eb.size()) {
      // The shorter is a prefix of the longer: it comes first when it stops there.
      return ea.size() < eb.size() ? a.stop : !b.stop;
    }
    return a.stop && !b.stop;
  }

  [[nodiscard]] Index input_rank(NodeId v) const {
    const auto inputs = m_net.inputs();
    return std::find(inputs.begin(), inputs.end(), v) - inputs.begin();
  }

  struct Later {
    const TopSearch* self;
    bool operator()(const Item& a, const Item& b) const {
      if (!a.bound.same(b.bound)) {
        return a.bound.less(b.bound);
      }
      return self->canonical_before(b, a);
    }
  };

  const Network& m_net;
  const double* m_w;
  bool m_unit;
  std::size_t m_max_memory;
  std::vector<Mag> m_suffix;
  std::vector<std::uint8_t> m_reach;
  std::vector<Record> m_records;
  std::priority_queue<Item, std::vector<Item>, Later> m_queue{Later{this}};
};

/// G(v) = [v output] + sum over out-edges |w_e|^s G(target), as (m, k) per node.
template <class W>
void backward_sums(const Network& net, const double* w, const W& pow, std::vector<double>& m,
                   std::vector<std::int64_t>& k) {
  const detail::DagView g(net);
  m.assign(static_cast<std::size_t>(g.n), 0.0);
  k.assign(static_cast<std::size_t>(g.n), 0);
  detail::dp_backward(g, w, pow, m.data(), k.data(),
                      [](NodeId, double, std::int64_t, Index, Index) {});
}

/// pow(w) G(target) relative to the scale 2^base, as a double (0 below its range).
template <class W>
double term(const W& pow, double w, double gm, std::int64_t gk, std::int64_t base) {
  double wm = 0;
  std::int64_t wk = 0;
  if (gm == 0 || !pow.exact(w, wm, wk)) {
    return 0;
  }
  const std::int64_t e = gk + wk - base;
  return e < -1100 ? 0.0 : std::ldexp(gm * wm, static_cast<int>(std::min<std::int64_t>(e, 1100)));
}

template <class W>
std::vector<WeightedPath> sample_with(const Network& net, const double* w, const W& pow, Index n,
                                      std::uint64_t seed, int threads) {
  std::vector<double> gm;
  std::vector<std::int64_t> gk;
  backward_sums(net, w, pow, gm, gk);
  const auto inputs = net.inputs();
  std::int64_t top = std::numeric_limits<std::int64_t>::min();
  for (const NodeId u : inputs) {
    if (gm[static_cast<std::size_t>(u)] != 0) {
      top = std::max(top, gk[static_cast<std::size_t>(u)]);
    }
  }
  if (top == std::numeric_limits<std::int64_t>::min()) {
    throw RangeError(
        "sample_paths: every path has weight 0 (||Phi||_s = 0): there is nothing to "
        "sample");
  }
  std::vector<double> start(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto u = static_cast<std::size_t>(inputs[i]);
    start[i] =
        gm[u] == 0
            ? 0.0
            : std::ldexp(gm[u], static_cast<int>(std::max<std::int64_t>(gk[u] - top, -1100)));
  }
  const double start_total = std::accumulate(start.begin(), start.end(), 0.0);
  std::vector<WeightedPath> out(static_cast<std::size_t>(n));
  detail::run_team(threads, n > 64, [&] {
#pragma omp for schedule(dynamic, 16)
    for (Index i = 0; i < n; ++i) {
      detail::SplitMix64 rng(seed ^ (0x9E3779B97F4A7C15ULL * static_cast<std::uint64_t>(i + 1)));
      // The start: an input in proportion to G(input).
      double u = rng.uniform() * start_total;
      std::size_t a = 0;
      while (a + 1 < start.size() && (start[a] == 0 || u >= start[a])) {
        u -= start[a];
        ++a;
      }
      NodeId v = inputs[a];
      const NodeId first = v;
      std::vector<EdgeId> edges;
      for (;;) {
        const auto vi = static_cast<std::size_t>(v);
        // Stop (weight 1) or an out-edge (pow(w) G(target)), relative to G(v).
        const std::int64_t base = gk[vi];
        double total = net.is_output(v)
                           ? std::ldexp(1.0, static_cast<int>(std::max<std::int64_t>(-base, -1100)))
                           : 0.0;
        const double stop = total;
        for (const EdgeId e : net.out_edges(v)) {
          const auto t = static_cast<std::size_t>(net.target(e));
          total += term(pow, w[e], gm[t], gk[t], base);
        }
        double x = rng.uniform() * total;
        if (net.is_output(v) && (x < stop || net.out_edges(v).empty())) {
          break;
        }
        x -= stop;
        EdgeId chosen = -1;
        for (const EdgeId e : net.out_edges(v)) {
          const auto t = static_cast<std::size_t>(net.target(e));
          const double p = term(pow, w[e], gm[t], gk[t], base);
          if (p > 0) {
            chosen = e;  // the last edge of positive weight absorbs the rounding
            if (x < p) {
              break;
            }
            x -= p;
          }
        }
        if (chosen < 0) {
          break;  // an output with only zero-weight continuations
        }
        edges.push_back(chosen);
        v = net.target(chosen);
      }
      out[static_cast<std::size_t>(i)] = make_path(net, w, first, edges);
    }
  });
  return out;
}

}  // namespace

std::vector<WeightedPath> top_paths(const Model& model, std::span<const double> theta, Index k,
                                    double s, const EngineOptions& options) {
  check_arguments("top_paths", k, s, false);
  check_theta(model, theta);
  if (const LayerGraph* graph = model.layer_graph()) {
    return detail::layer_top_paths(*graph, theta, k, s, options);
  }
  const Network& net = *model.dag();
  const detail::EdgeTheta<double> w(net.parameter_map().get(), theta);
  TopSearch search(net, w.data(), s, options.max_memory);
  return search.run(k);
}

std::vector<WeightedPath> sample_paths(const Model& model, std::span<const double> theta, Index n,
                                       double s, std::uint64_t seed, const EngineOptions& options) {
  check_arguments("sample_paths", n, s, true);
  check_theta(model, theta);
  const LayerGraph* graph = model.layer_graph();
  // Each path holds at most (longest path + 1) nodes, edges, parameters and weights.
  const double longest = graph != nullptr ? static_cast<double>(graph->layers.size())
                                          : static_cast<double>(model.dag()->num_nodes());
  require_bytes(static_cast<double>(n) * (96.0 + 32.0 * std::min(longest, 64.0)),
                options.max_memory, fmt::format("{} sampled paths", n));
  if (graph != nullptr) {
    return detail::layer_sample_paths(*graph, theta, n, s, seed, options);
  }
  const Network& net = *model.dag();
  const detail::EdgeTheta<double> w(net.parameter_map().get(), theta);
  const int threads = resolve_threads(options.threads);
  if (s == 0) {
    return sample_with(net, w.data(), detail::DpPow0{}, n, seed, threads);
  }
  if (s == 1) {
    return sample_with(net, w.data(), detail::DpPow1{}, n, seed, threads);
  }
  if (s == 2) {
    return sample_with(net, w.data(), detail::DpPow2{}, n, seed, threads);
  }
  return sample_with(net, w.data(), detail::DpPowS{s}, n, seed, threads);
}

PathNames::PathNames(const Model& model) : m_model(&model) {
  if (const LayerGraph* graph = model.layer_graph()) {
    m_shapes = layer_shapes(*graph);
  }
}

std::size_t PathNames::size(const WeightedPath& p) const {
  return m_model->layer_graph() != nullptr ? p.entries.size() : p.nodes.size();
}

std::string PathNames::layer(const PathEntry& e) const {
  const std::string& name = m_model->layer_graph()->layers[static_cast<std::size_t>(e.layer)].name;
  return e.bias ? name + ".bias" : e.layer == 0 ? std::string("x") : name;
}

std::vector<Index> PathNames::index(const PathEntry& e) const {
  if (e.bias) {
    return {e.entry};
  }
  const std::vector<Index>& shape = m_shapes[static_cast<std::size_t>(e.layer)];
  std::vector<Index> index(shape.size());
  Index x = e.entry;
  for (std::size_t i = shape.size(); i-- > 0;) {
    index[i] = x % shape[i];
    x /= shape[i];
  }
  return index;
}

std::string PathNames::node(const WeightedPath& p, std::size_t i) const {
  if (m_model->layer_graph() == nullptr) {
    return m_model->dag()->node_name(p.nodes[i]);
  }
  const PathEntry& e = p.entries[i];
  return name(e, index(e));
}

std::string PathNames::name(const PathEntry& e, std::span<const Index> index) const {
  const LayerGraph& graph = *m_model->layer_graph();
  fmt::memory_buffer b;
  if (e.bias) {
    fmt::format_to(std::back_inserter(b), "{}.bias[",
                   graph.layers[static_cast<std::size_t>(e.layer)].name);
  } else if (e.layer == 0) {
    b.append(std::string_view("x["));
  } else {
    fmt::format_to(std::back_inserter(b), "{}[",
                   graph.layers[static_cast<std::size_t>(e.layer)].name);
  }
  for (std::size_t i = 0; i < index.size(); ++i) {
    if (i > 0) {
      b.push_back(',');
    }
    fmt::format_to(std::back_inserter(b), "{}", index[i]);
  }
  b.push_back(']');
  return fmt::to_string(b);
}

std::string to_json(std::span<const WeightedPath> paths, const Model& model,
                    std::span<const std::string> param_names, int indent) {
  using detail::Json;
  const PathNames names(model);
  const bool layers = model.layer_graph() != nullptr;
  Json list = Json::array();
  for (const WeightedPath& p : paths) {
    Json j;
    const double value = p.value();
    j["value"] = p.magnitude.fits_double() || p.magnitude.is_zero() ? Json(value) : Json(nullptr);
    j["sign"] = p.sign;
    j["log10_abs"] = detail::scaled_log10_json(p.magnitude);
    Json nodes = Json::array();
    if (layers) {
      Json entries = Json::array();
      for (const PathEntry& e : p.entries) {
        const std::vector<Index> index = names.index(e);
        nodes.push_back(names.name(e, index));
        entries.push_back(Json::array({names.layer(e), index}));
      }
      j["nodes"] = std::move(nodes);
      j["entries"] = std::move(entries);
      j["edges"] = nullptr;
    } else {
      for (std::size_t i = 0; i < names.size(p); ++i) {
        nodes.push_back(names.node(p, i));
      }
      j["nodes"] = std::move(nodes);
      j["edges"] = p.edges;
    }
    Json params = Json::array();
    for (const Index k : p.params) {
      if (k < 0) {
        params.push_back(nullptr);
      } else if (!param_names.empty()) {
        params.push_back(param_names[static_cast<std::size_t>(k)]);
      } else {
        params.push_back(k);
      }
    }
    j["params"] = std::move(params);
    j["weights"] = p.weights;
    list.push_back(std::move(j));
  }
  return list.dump(indent);
}

}  // namespace pathlift
