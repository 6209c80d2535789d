// The conservation laws of gradient flow, one per rescaling class (conservation.hpp,
// docs/dynamics.md).

#include "pathlift/conservation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "pathlift/error.hpp"
#include "pathlift/layers.hpp"
#include "pathlift/network.hpp"
#include "pathlift/symmetry.hpp"
#include "src/core/checked.hpp"
#include "src/core/json.hpp"
#include "src/core/listing.hpp"
#include "src/layers/param_layout.hpp"
#include "src/rank/detail/model_classes.hpp"

namespace pathlift {

namespace {

using detail::listing;

/// listing() of the first three items.
std::string listing(const std::vector<std::string>& items) {
  constexpr std::size_t k_shown = 3;
  return listing(
      {items.begin(), items.begin() + static_cast<std::ptrdiff_t>(std::min(items.size(), k_shown))},
      items.size());
}

/// A layer or node name in a description: escaped as messages show names, cut long after any
/// real name's length.
std::string shown_name(const std::string& name) {
  return printable(name, 200);
}

/// Where a layer graph's parameters sit: for parameter k, its layer, its block (weight or
/// bias), its index in the block and the output channel its edges enter. A module called twice
/// is two layers whose blocks are the same parameters.
class LayerParams {
 public:
  struct Place {
    std::size_t layer = 0;
    bool bias = false;
    Index index = 0;    // in the block
    Index channel = 0;  // the output channel of the layer it enters
  };

  explicit LayerParams(const LayerGraph& graph) : m_graph(graph), m_shapes(layer_shapes(graph)) {
    for (std::size_t l = 0; l < graph.layers.size(); ++l) {
      const Layer& ly = graph.layers[l];
      if (!detail::has_parameters(ly)) {
        continue;
      }
      const auto layout = detail::param_layout(ly, in(l));
      m_layouts.push_back(*layout);
      const std::size_t at = m_layouts.size() - 1;
      m_blocks.push_back({ly.weight_offset, layout->weights, l, false, at});
      if (ly.bias_offset >= 0) {
        m_blocks.push_back({ly.bias_offset, layout->out, l, true, at});
      }
    }
  }

  /// Calls f(k, place) for each place of each parameter, block by block (k increasing within
  /// a block); a parameter outside every block is not met.
  template <class F>
  void for_each(const F& f) const {
    for (const Block& b : m_blocks) {
      for (Index k = b.start; k < b.start + b.size; ++k) {
        const Place p = place_in(b, k);
        f(k, p);
      }
    }
  }

  /// "weight 3 of 'conv1'" for parameter k (its first block), or "outside every layer's
  /// blocks". Complexity: O(blocks).
  [[nodiscard]] std::string label(Index k) const {
    for (const Block& b : m_blocks) {
      if (b.start <= k && k < b.start + b.size) {
        const Place p = place_in(b, k);
        return fmt::format("{} {} of '{}'", p.bias ? "bias" : "weight", p.index,
                           shown_name(name(p.layer)));
      }
    }
    return "outside every layer's blocks";
  }

  [[nodiscard]] const std::string& name(std::size_t l) const { return m_graph.layers[l].name; }

  /// "unit" for a layer whose output is a vector, "channel" otherwise.
  [[nodiscard]] const char* noun(std::size_t l) const {
    return m_shapes[l].size() <= 1 ? "unit" : "channel";
  }

 private:
  struct Block {
    Index start = 0;
    Index size = 0;
    std::size_t layer = 0;
    bool bias = false;
    std::size_t layout = 0;  // in m_layouts
  };

  [[nodiscard]] Place place_in(const Block& b, Index k) const {
    const Index i = k - b.start;
    return {b.layer, b.bias, i, b.bias ? i : m_layouts[b.layout].out_channel(i)};
  }

  [[nodiscard]] const std::vector<Index>& in(std::size_t l) const {
    return m_shapes[static_cast<std::size_t>(m_graph.layers[l].inputs.at(0))];
  }

  const LayerGraph& m_graph;
  std::vector<std::vector<Index>> m_shapes;
  std::vector<detail::ParamLayout> m_layouts;
  std::vector<Block> m_blocks;
};

/// What each class of a layer graph is: the channels its incoming parameters enter, the layers
/// whose parameters leave it. Then the unused parameters'.
std::vector<std::string> layer_descriptions(const LayerGraph& graph, const ParameterClasses& pc,
                                            const std::vector<Index>& unused) {
  const LayerParams params(graph);
  const auto n = static_cast<std::size_t>(pc.classes);
  std::vector<std::vector<std::pair<std::size_t, Index>>> into(n);  // (layer, channel)
  std::vector<std::vector<std::size_t>> out(n);
  // Each block is one run: a (class, layer) pair is met again only within its run.
  constexpr auto k_none = std::numeric_limits<std::size_t>::max();
  std::vector<std::size_t> last_out(n, k_none);
  params.for_each([&](Index k, const LayerParams::Place& p) {
    const auto t = pc.target[static_cast<std::size_t>(k)];
    const auto s = pc.source[static_cast<std::size_t>(k)];
    if (t >= 0) {
      auto& v = into[static_cast<std::size_t>(t)];
      const std::pair<std::size_t, Index> here{p.layer, p.channel};
      if (v.empty() || v.back() != here) {
        v.push_back(here);
      }
    }
    if (s >= 0 && last_out[static_cast<std::size_t>(s)] != p.layer) {
      last_out[static_cast<std::size_t>(s)] = p.layer;
      out[static_cast<std::size_t>(s)].push_back(p.layer);
    }
  });
  std::vector<std::string> names;
  names.reserve(n + unused.size());
  for (std::size_t h = 0; h < n; ++h) {
    auto& v = into[h];
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    auto& o = out[h];
    std::sort(o.begin(), o.end());
    o.erase(std::unique(o.begin(), o.end()), o.end());
    std::vector<std::string> parts;
    const bool one_channel = std::all_of(
        v.begin(), v.end(), [&](const auto& x) { return x.second == v.front().second; });
    for (const auto& [l, c] : v) {
      const std::string layer = fmt::format("'{}'", shown_name(params.name(l)));
      parts.push_back(one_channel && !parts.empty()
                          ? layer
                          : fmt::format("{} {} of {}", params.noun(l), c, layer));
    }
    std::string d = v.empty() ? fmt::format("class #{}", h) : listing(parts);
    if (!o.empty()) {
      std::vector<std::string> leaving;
      for (const std::size_t l : o) {
        leaving.push_back(fmt::format("'{}'", shown_name(params.name(l))));
      }
      d += fmt::format(" (out: {})", listing(leaving));
    }
    names.push_back(std::move(d));
  }
  for (const Index k : unused) {
    names.push_back(fmt::format("parameter {} ({}), which no edge carries", k, params.label(k)));
  }
  return names;
}

/// What each class of a DAG is: the nodes its incoming parameters' edges enter. Then the unused
/// parameters'.
std::vector<std::string> dag_descriptions(const Network& net, const ParameterClasses& pc,
                                          const std::vector<Index>& unused) {
  constexpr std::size_t k_shown = 3;
  const auto n = static_cast<std::size_t>(pc.classes);
  std::vector<std::vector<NodeId>> shown(n);  // the first k_shown nodes of each class
  std::vector<Index> count(n, 0);
  std::vector<std::uint8_t> seen(static_cast<std::size_t>(net.num_nodes()), 0);
  const auto enter = [&](std::size_t h, NodeId v) {
    if (seen[static_cast<std::size_t>(v)] == 0) {
      seen[static_cast<std::size_t>(v)] = 1;
      ++count[h];
      if (shown[h].size() < k_shown) {
        shown[h].push_back(v);
      }
    }
  };
  for (Index k = 0; k < net.num_params(); ++k) {
    const Index t = pc.target[static_cast<std::size_t>(k)];
    if (t < 0) {
      continue;
    }
    if (net.one_parameter_per_edge()) {
      enter(static_cast<std::size_t>(t), net.target(static_cast<EdgeId>(k)));
    } else {
      for (const EdgeId e : net.param_edges(k)) {
        enter(static_cast<std::size_t>(t), net.target(e));
      }
    }
  }
  std::vector<std::string> names;
  names.reserve(n + unused.size());
  for (std::size_t h = 0; h < n; ++h) {
    std::vector<std::string> parts;
    for (const NodeId v : shown[h]) {
      parts.push_back(shown_name(net.node_name(v)));
    }
    std::string d = parts.empty() ? fmt::format("class #{}", h)
                                  : fmt::format("node{} {}", count[h] == 1 ? "" : "s",
                                                listing(parts, static_cast<std::size_t>(count[h])));
    names.push_back(std::move(d));
  }
  for (const Index k : unused) {
    names.push_back(fmt::format("parameter {}, which no edge carries", k));
  }
  return names;
}

/// "edge a -> b" (a DAG's parameter), "weight 3 of 'conv1'" (a layer graph's).
std::string parameter_label(const Model& model, const Network* dag, Index k) {
  return dag != nullptr ? dag->param_label(k) : LayerParams(*model.layer_graph()).label(k);
}

/// Appends " (class #h)" to the descriptions that two laws share.
void make_distinct(std::vector<std::string>& names) {
  std::unordered_map<std::string, int> uses;
  for (const auto& s : names) {
    ++uses[s];
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (uses[names[i]] > 1) {
      names[i] += fmt::format(" (class #{})", i);
    }
  }
}

}  // namespace

ConservationLaws conservation_laws(const Model& model, std::span<const double> theta,
                                   const EngineOptions& options) {
  check_theta(model, theta);
  const detail::ModelClasses mc = detail::independent_classes(model, options);
  const ParameterClasses& pc = mc.classes;
  if (pc.constraints > 0) {
    throw std::invalid_argument(fmt::format(
        "conservation_laws: {} constraints couple the rescaling classes (a parameter whose edges "
        "join different pairs of classes, as weights shared between layers do): the conserved "
        "quantities are then combinations of the classes' sums of squares, which "
        "conservation_laws does not list",
        pc.constraints));
  }
  const auto d = theta.size();
  std::vector<Index> unused;
  for (std::size_t k = 0; k < d; ++k) {
    if (pc.target[k] == -2) {
      unused.push_back(static_cast<Index>(k));
    }
  }
  ConservationLaws out;
  out.classes = pc.classes;
  out.unused = static_cast<Index>(unused.size());
  out.independent = out.classes + out.unused;
  out.unrolled = mc.unrolled != nullptr;
  const Network* dag = mc.unrolled ? mc.unrolled.get() : model.dag();
  out.descriptions = dag != nullptr ? dag_descriptions(*dag, pc, unused)
                                    : layer_descriptions(*model.layer_graph(), pc, unused);
  make_distinct(out.descriptions);

  // Each law's squares scaled by 2^-2e, 2^e above its largest |theta_k| (exact: powers of two),
  // so that none overflows unless the law's own sum does. Law of parameter k: its classes, or
  // its own (unused); a parameter within one class, or pinned at both ends, has no term.
  const auto laws = static_cast<std::size_t>(out.independent);
  const auto own_law = [&](std::size_t k) {  // an unused parameter's: after the classes'
    const auto at = std::lower_bound(unused.begin(), unused.end(), static_cast<Index>(k));
    return static_cast<std::size_t>(pc.classes + (at - unused.begin()));
  };
  const auto for_terms = [&](const auto& f) {  // f(law, k, sign)
    for (std::size_t k = 0; k < d; ++k) {
      const Index t = pc.target[k];
      const Index s = pc.source[k];
      if (theta[k] == 0.0) {
        continue;
      }
      if (t == -2) {
        f(own_law(k), k, 1);
      } else if (t != s) {
        if (t >= 0) {
          f(static_cast<std::size_t>(t), k, 1);
        }
        if (s >= 0) {
          f(static_cast<std::size_t>(s), k, -1);
        }
      }
    }
  };
  constexpr int k_no_exponent = std::numeric_limits<int>::min();
  std::vector<int> exponent(laws, k_no_exponent);
  std::vector<std::size_t> largest(laws, 0);
  for_terms([&](std::size_t law, std::size_t k, int) {
    int e = 0;
    (void)std::frexp(theta[k], &e);
    if (e > exponent[law]) {
      exponent[law] = e;
      largest[law] = k;
    }
  });
  std::vector<double> in(laws, 0.0);
  std::vector<double> leaving(laws, 0.0);
  for_terms([&](std::size_t law, std::size_t k, int sign) {
    const double x = std::ldexp(theta[k], -exponent[law]);
    (sign > 0 ? in : leaving)[law] += x * x;
  });
  out.values.assign(laws, 0.0);
  out.squares.assign(laws, 0.0);
  for (std::size_t i = 0; i < laws; ++i) {
    if (exponent[i] == k_no_exponent) {
      continue;  // every parameter of the law is 0
    }
    out.values[i] = std::ldexp(in[i] - leaving[i], 2 * exponent[i]);
    out.squares[i] = std::ldexp(in[i] + leaving[i], 2 * exponent[i]);
    // Beyond double's range either way: an overflow, or (squares of 1e-160) a sum that is 0
    // or subnormal, its digits lost.
    if (!std::isfinite(out.squares[i]) || out.squares[i] < std::numeric_limits<double>::min()) {
      const std::size_t k = largest[i];
      throw RangeError(fmt::format(
          "conservation_laws: the squares of the parameters of {} sum {} double's range: "
          "its largest, theta[{}] = {:.6g} ({}), squared is 10^{:.1f}",
          out.descriptions[i], std::isfinite(out.squares[i]) ? "below" : "beyond", k, theta[k],
          parameter_label(model, dag, static_cast<Index>(k)), 2 * std::log10(std::fabs(theta[k]))));
    }
  }
  return out;
}

std::string to_json(const ConservationLaws& laws, int indent) {
  using detail::Json;
  Json j;
  PATHLIFT_JSON_MEMBERS(j, laws, independent, classes, unused, unrolled);
  Json list = Json::array();
  for (std::size_t i = 0; i < laws.values.size(); ++i) {
    Json law;
    law["description"] = laws.descriptions[i];
    law["value"] = laws.values[i];
    law["squares"] = laws.squares[i];
    list.push_back(std::move(law));
  }
  j["laws"] = std::move(list);
  return j.dump(indent);
}

}  // namespace pathlift
