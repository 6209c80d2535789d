#include "pathlift/functional_dimension.hpp"

#include <flint/nmod_mat.h>
#include <flint/thread_support.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <numeric>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "pathlift/error.hpp"
#include "pathlift/limits.hpp"
#include "pathlift/rank.hpp"
#include "src/core/enum_names.hpp"
#include "src/core/json.hpp"
#include "src/core/modular_field.hpp"
#include "src/core/parallel.hpp"
#include "src/network/parameters.hpp"
#include "src/rank/detail/modular_elimination.hpp"

namespace pathlift {

namespace {

constexpr std::array k_status_names{
    detail::EnumName<FunctionalDimensionStatus>{FunctionalDimensionStatus::certified, "certified"},
    detail::EnumName<FunctionalDimensionStatus>{FunctionalDimensionStatus::bounds, "bounds"},
    detail::EnumName<FunctionalDimensionStatus>{FunctionalDimensionStatus::pattern_uncertain,
                                                "pattern_uncertain"}};

/// Z/pZ in Montgomery form, for the exact rows.
struct ModRing {
  const detail::ModField& field;
  std::uint64_t prime;
  using Value = std::uint64_t;
  [[nodiscard]] Value zero() const { return 0; }
  [[nodiscard]] Value one() const { return field.one(); }
  [[nodiscard]] Value from(double x) const { return field.from_residue(dyadic_residue(x, prime)); }
  [[nodiscard]] Value add(Value a, Value b) const { return field.add(a, b); }
  [[nodiscard]] Value mul(Value a, Value b) const { return field.mul(a, b); }
  /// The residue in [0, p), for FLINT.
  [[nodiscard]] std::uint64_t residue(Value a) const { return field.to_residue(a); }
};

/// The reals in floating point, for the numerical rank.
struct RealRing {
  using Value = double;
  [[nodiscard]] static Value zero() { return 0; }
  [[nodiscard]] static Value one() { return 1; }
  [[nodiscard]] static Value from(double x) { return x; }
  [[nodiscard]] static Value add(Value a, Value b) { return a + b; }
  [[nodiscard]] static Value mul(Value a, Value b) { return a * b; }
};

/// What the rows of J_X need of the network, once.
struct RowPlan {
  const Network& net;
  const ActivationPattern& pattern;
  const Eigen::Ref<const Eigen::MatrixXd>& X;
  std::span<const double> weights;  ///< per edge
  std::vector<Index> data_column;   ///< per node: its column of X, -1 (bias, other)
  Index q = 0;
  Index d = 0;
};

/// Sample i's rows of J_X, all q outputs at once, into `block` (d x q, row-major: entry
/// k q + j is d f_j(x_i) / d theta_k), in the ring R: a forward pass at the pattern's slopes
/// (the max node's chosen edge alone), then a backward pass carrying the q output gradients.
template <class R>
class SampleRows {
 public:
  SampleRows(const RowPlan& plan, R ring) : m_plan(plan), m_ring(ring) {
    const Network& net = plan.net;
    m_w.assign(plan.weights.size(), m_ring.zero());
    std::transform(plan.weights.begin(), plan.weights.end(), m_w.begin(),
                   [&](double x) { return m_ring.from(x); });
    m_values.assign(static_cast<std::size_t>(net.num_nodes()), m_ring.zero());
    m_grad.assign(static_cast<std::size_t>(net.num_nodes() * plan.q), m_ring.zero());
    m_t.assign(static_cast<std::size_t>(plan.q), m_ring.zero());
  }

  void compute(Index i, std::vector<typename R::Value>& block) {
    const Network& net = m_plan.net;
    const Index q = m_plan.q;
    const auto& slopes = m_plan.pattern.slopes;
    block.assign(static_cast<std::size_t>(m_plan.d * q), m_ring.zero());
    for (const NodeId v : net.topological_order()) {
      auto& value = m_values[static_cast<std::size_t>(v)];
      if (net.is_input(v)) {
        const Index c = m_plan.data_column[static_cast<std::size_t>(v)];
        value = c < 0 ? m_ring.one() : m_ring.from(m_plan.X(i, c));
        continue;
      }
      if (net.activation(v).kind == ActivationKind::max) {
        const EdgeId e = m_plan.pattern.max_edges(i, v);
        value = m_ring.mul(m_w[e], m_values[static_cast<std::size_t>(net.source(e))]);
        continue;
      }
      const double s = slopes(i, v);
      if (s == 0) {
        value = m_ring.zero();
        continue;
      }
      auto pre = m_ring.zero();
      for (const EdgeId e : net.in_edges(v)) {
        pre =
            m_ring.add(pre, m_ring.mul(m_w[e], m_values[static_cast<std::size_t>(net.source(e))]));
      }
      value = s == 1 ? pre : m_ring.mul(m_ring.from(s), pre);
    }
    std::fill(m_grad.begin(), m_grad.end(), m_ring.zero());
    const auto outputs = net.outputs();
    for (Index j = 0; j < q; ++j) {
      m_grad[static_cast<std::size_t>(outputs[static_cast<std::size_t>(j)] * q + j)] = m_ring.one();
    }
    const auto topo = net.topological_order();
    for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
      const NodeId v = *it;
      if (net.is_input(v)) {
        continue;
      }
      // t = d f / d pre(v): the slope times d f / d value(v).
      const bool is_max = net.activation(v).kind == ActivationKind::max;
      const double s = is_max ? 1.0 : slopes(i, v);
      if (s == 0) {
        continue;
      }
      const auto sr = m_ring.from(s);
      bool any = false;
      for (Index j = 0; j < q; ++j) {
        const auto g = m_grad[static_cast<std::size_t>(v * q + j)];
        m_t[static_cast<std::size_t>(j)] = s == 1 ? g : m_ring.mul(sr, g);
        any = any || m_t[static_cast<std::size_t>(j)] != m_ring.zero();
      }
      if (!any) {
        continue;
      }
      const EdgeId chosen = is_max ? m_plan.pattern.max_edges(i, v) : EdgeId{-1};
      for (const EdgeId e : net.in_edges(v)) {
        if (is_max && e != chosen) {
          continue;
        }
        const NodeId u = net.source(e);
        auto* gu = &m_grad[static_cast<std::size_t>(u * q)];
        for (Index j = 0; j < q; ++j) {
          gu[j] = m_ring.add(gu[j], m_ring.mul(m_w[e], m_t[static_cast<std::size_t>(j)]));
        }
        const Index k = net.edge_param(e);
        if (k == kFixedEdge) {
          continue;
        }
        const auto value = m_values[static_cast<std::size_t>(u)];
        auto* row = &block[static_cast<std::size_t>(k * q)];
        for (Index j = 0; j < q; ++j) {
          row[j] = m_ring.add(row[j], m_ring.mul(value, m_t[static_cast<std::size_t>(j)]));
        }
      }
    }
  }

 private:
  const RowPlan& m_plan;
  R m_ring;
  std::vector<typename R::Value> m_w;
  std::vector<typename R::Value> m_values;
  std::vector<typename R::Value> m_grad;  // node-major, q per node
  std::vector<typename R::Value> m_t;
};

/// Each sample's class among equal samples (equal rows of X), numbered 0, 1, ... in order of
/// first appearance; the number of classes is the number of distinct samples.
std::vector<Index> sample_classes(const Eigen::Ref<const Eigen::MatrixXd>& X, Index& distinct) {
  std::vector<Index> order(static_cast<std::size_t>(X.rows()));
  std::iota(order.begin(), order.end(), Index{0});
  const auto less = [&](Index a, Index b) {
    for (Index c = 0; c < X.cols(); ++c) {
      if (X(a, c) != X(b, c)) {
        return X(a, c) < X(b, c);
      }
    }
    return false;
  };
  std::stable_sort(order.begin(), order.end(), less);
  std::vector<Index> leader(order.size());  // the first sample of each one's class
  for (std::size_t t = 0; t < order.size(); ++t) {
    leader[static_cast<std::size_t>(order[t])] =
        t > 0 && !less(order[t - 1], order[t]) ? leader[static_cast<std::size_t>(order[t - 1])]
                                               : order[t];
  }
  std::vector<Index> cls(order.size(), -1);
  distinct = 0;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto l = static_cast<std::size_t>(leader[i]);
    cls[i] = l == i ? distinct++ : cls[l];
  }
  return cls;
}

/// Where J_X can be non-zero, structurally at the pattern.
struct Activity {
  /// Per edge: active on some sample (the source's value and the derivative of some output
  /// with respect to the target's pre-activation can be non-zero). The columns of J_X of the
  /// parameters without an active edge are exactly zero.
  std::vector<char> edges;
  /// Per node: the distinct samples on which its slope is not 0 and some output sees it (the
  /// rows of J_X its incoming edges' columns can be non-zero on, up to equal samples).
  std::vector<Index> live_samples;
};

Activity activity(const RowPlan& plan, const std::vector<Index>& classes) {
  const Network& net = plan.net;
  const Index n = plan.X.rows();
  const Index m = net.num_nodes();
  const auto topo = net.topological_order();
  std::vector<char> active(static_cast<std::size_t>(net.num_edges()), 0);
  std::vector<char> reach(static_cast<std::size_t>(m));
  std::vector<char> seen(static_cast<std::size_t>(m));
  std::vector<Index> live(static_cast<std::size_t>(m), 0);
  // Each node's classes of equal samples counted once (a bit per node and class), or, when
  // that would be large, every sample counted (a weaker bound, still an upper one).
  const Index num_classes =
      classes.empty() ? 0 : *std::max_element(classes.begin(), classes.end()) + 1;
  const bool by_class = static_cast<double>(m) * static_cast<double>(num_classes) <= 0x1p27;
  std::vector<char> counted(by_class ? static_cast<std::size_t>(m * num_classes) : 0, 0);
  const auto passes = [&](Index i, NodeId v, EdgeId e) {  // e = (u -> v) carries a value
    if (net.activation(v).kind == ActivationKind::max) {
      return plan.pattern.max_edges(i, v) == e;
    }
    return plan.pattern.slopes(i, v) != 0;
  };
  for (Index i = 0; i < n; ++i) {
    for (const NodeId v : topo) {  // reach: v's value can be non-zero
      char r = 0;
      if (net.is_input(v)) {
        const Index c = plan.data_column[static_cast<std::size_t>(v)];
        r = c < 0 || plan.X(i, c) != 0 ? 1 : 0;
      } else {
        for (const EdgeId e : net.in_edges(v)) {
          if (plan.weights[e] != 0 && reach[static_cast<std::size_t>(net.source(e))] &&
              passes(i, v, e)) {
            r = 1;
            break;
          }
        }
      }
      reach[static_cast<std::size_t>(v)] = r;
    }
    for (auto it = topo.rbegin(); it != topo.rend(); ++it) {  // seen: some output sees v
      const NodeId v = *it;
      char s = net.is_output(v) ? 1 : 0;
      for (const EdgeId e : net.out_edges(v)) {
        if (s) {
          break;
        }
        s = plan.weights[e] != 0 && seen[static_cast<std::size_t>(net.target(e))] &&
                    passes(i, net.target(e), e)
                ? 1
                : 0;
      }
      seen[static_cast<std::size_t>(v)] = s;
      const bool is_live =
          s && !net.is_input(v) &&
          (net.activation(v).kind == ActivationKind::max || plan.pattern.slopes(i, v) != 0);
      if (is_live) {
        char* bit = by_class ? &counted[static_cast<std::size_t>(
                                   v * num_classes + classes[static_cast<std::size_t>(i)])]
                             : nullptr;
        if (bit == nullptr || *bit == 0) {
          ++live[static_cast<std::size_t>(v)];
        }
        if (bit != nullptr) {
          *bit = 1;
        }
      }
    }
    for (EdgeId e = 0; e < net.num_edges(); ++e) {
      if (reach[static_cast<std::size_t>(net.source(e))] &&
          seen[static_cast<std::size_t>(net.target(e))] && passes(i, net.target(e), e)) {
        active[static_cast<std::size_t>(e)] = 1;
      }
    }
  }
  return {std::move(active), std::move(live)};
}

/// The parameters that carry an active edge (the others' columns of J_X are zero).
std::vector<char> active_params(const RowPlan& plan, const std::vector<char>& active) {
  const Network& net = plan.net;
  std::vector<char> param_active(static_cast<std::size_t>(net.num_params()), 0);
  for (EdgeId e = 0; e < net.num_edges(); ++e) {
    if (active[static_cast<std::size_t>(e)] && net.edge_param(e) != kFixedEdge) {
      param_active[static_cast<std::size_t>(net.edge_param(e))] = 1;
    }
  }
  return param_active;
}

/// The hidden nodes that act on the batch as one linear block: the same activation, the same
/// slope on every sample, the same source nodes and the same target nodes, each reached by
/// one edge. Groups of one included.
std::vector<std::vector<NodeId>> linear_blocks(const RowPlan& plan) {
  const Network& net = plan.net;
  const Index n = plan.X.rows();
  // Key: sources, targets (sorted; a repeated one makes the node a group of its own), the
  // activation and the slopes.
  std::map<std::tuple<std::vector<NodeId>, std::vector<NodeId>, std::string, std::vector<double>>,
           std::vector<NodeId>>
      groups;
  std::vector<std::vector<NodeId>> blocks;
  for (const NodeId v : net.hidden()) {
    std::vector<NodeId> sources;
    for (const EdgeId e : net.in_edges(v)) {
      sources.push_back(net.source(e));
    }
    std::vector<NodeId> targets;
    for (const EdgeId e : net.out_edges(v)) {
      targets.push_back(net.target(e));
    }
    std::sort(sources.begin(), sources.end());
    std::sort(targets.begin(), targets.end());
    if (std::adjacent_find(sources.begin(), sources.end()) != sources.end() ||
        std::adjacent_find(targets.begin(), targets.end()) != targets.end()) {
      blocks.push_back({v});
      continue;
    }
    std::vector<double> slopes(static_cast<std::size_t>(n));
    for (Index i = 0; i < n; ++i) {
      slopes[static_cast<std::size_t>(i)] = plan.pattern.slopes(i, v);
    }
    groups[{std::move(sources), std::move(targets), net.activation(v).name(), std::move(slopes)}]
        .push_back(v);
  }
  for (auto& [key, nodes] : groups) {
    blocks.push_back(std::move(nodes));
  }
  return blocks;
}

/// The translations of a linear block: when every node of `block` has the same slope c on
/// every sample (a unit active on the whole batch, c = 1), its values move by c a when its
/// bias edges from a bias node beta move by a, and the targets T undo it when their edges
/// from a bias node (any: all are 1) move by -c sum_s w(s -> t) a_s. One kernel vector per
/// node of the block and bias node that feeds it, when all its targets have a bias.
template <class Residue>
void append_translations(const RowPlan& plan, const std::vector<NodeId>& block,
                         const Residue& residue,
                         std::vector<std::vector<std::pair<Index, std::int64_t>>>& vectors) {
  const Network& net = plan.net;
  const NodeId first = block.front();
  const double c = plan.X.rows() > 0 ? plan.pattern.slopes(0, first) : 0.0;
  for (Index i = 0; i < plan.X.rows(); ++i) {
    if (plan.pattern.slopes(i, first) != c) {
      return;  // the block's slopes vary over the batch (they are the same for all its nodes)
    }
  }
  if (c == 0) {
    return;  // inactive everywhere: its columns are zero already
  }
  const auto edge_from = [&](NodeId beta, NodeId v) -> EdgeId {
    for (const EdgeId e : net.in_edges(v)) {
      if (net.source(e) == beta) {
        return e;
      }
    }
    return -1;
  };
  // A target's values move by the same constant through any of its bias edges (value 1).
  const auto any_bias_edge = [&](NodeId v) -> EdgeId {
    for (const EdgeId e : net.in_edges(v)) {
      if (net.is_bias(net.source(e))) {
        return e;
      }
    }
    return -1;
  };
  for (const NodeId beta : net.bias_nodes()) {
    for (const NodeId s : block) {
      const EdgeId bias_s = edge_from(beta, s);
      if (bias_s < 0) {
        break;  // the block shares its sources: no node of it has this bias
      }
      std::vector<std::pair<Index, std::int64_t>> v{{bias_s, residue(1.0)}};
      bool complete = true;
      for (const EdgeId e : net.out_edges(s)) {
        const EdgeId bias_t = any_bias_edge(net.target(e));
        if (bias_t < 0) {
          complete = false;
          break;
        }
        const double w = plan.weights[e];
        if (std::fma(c, w, -(c * w)) != 0) {
          complete = false;  // -c w would round: no exact vector
          break;
        }
        v.emplace_back(bias_t, residue(-(c * w)));
      }
      std::sort(v.begin(), v.end());
      if (!complete || std::adjacent_find(v.begin(), v.end(), [](const auto& x, const auto& y) {
                         return x.first == y.first;
                       }) != v.end()) {
        continue;
      }
      std::erase_if(v, [](const auto& x) { return x.second == 0; });
      vectors.push_back(std::move(v));
    }
  }
}

/// The kernel bound on rank J_X (FunctionalDimension::upper_kernel): d minus the rank mod p
/// (a lower bound of their rank over Q) of kernel vectors that are known exactly:
/// - e_k for a parameter that carries no active edge (its column of J_X is zero);
/// - with one parameter per edge, for each linear block S (linear_blocks) with sources U and
///   targets T, and each a, b in S: the tangent of theta -> (M W_{S,U}, W_{T,S} M^-1) at
///   M = I along E_ab, which moves w(u -> a) by w(u -> b) and w(b -> t) by -w(a -> t). At
///   the pattern, every sample sees the block's values multiplied by M and undone by M^-1,
///   so f(X) is unchanged: J_X times the tangent is 0. a = b is the rescaling of a. A block
///   linear on the whole batch also has its translations (append_translations).
/// With one parameter per edge, also d minus the rank of those vectors that avoid the incoming
/// edges of the nodes with more incoming edges than live samples, minus that excess (the
/// kernel of those nodes' data, known by its dimension alone); the smaller of the two.
Index kernel_bound(const RowPlan& plan, const std::vector<char>& param_active,
                   const std::vector<Index>& live_samples, std::uint64_t prime) {
  const Network& net = plan.net;
  std::vector<std::vector<std::pair<Index, std::int64_t>>> vectors;
  for (Index k = 0; k < net.num_params(); ++k) {
    if (!param_active[static_cast<std::size_t>(k)]) {
      vectors.push_back({{k, 1}});
    }
  }
  if (net.one_parameter_per_edge()) {
    const auto residue = [&](double x) {
      return static_cast<std::int64_t>(dyadic_residue(x, prime));
    };
    // The edge (u -> v) for each source u of v, and (v -> t) for each target, by node order.
    const auto by_source = [&](NodeId v) {
      std::vector<EdgeId> in(net.in_edges(v).begin(), net.in_edges(v).end());
      std::sort(in.begin(), in.end(),
                [&](EdgeId a, EdgeId b) { return net.source(a) < net.source(b); });
      return in;
    };
    const auto by_target = [&](NodeId v) {
      std::vector<EdgeId> out(net.out_edges(v).begin(), net.out_edges(v).end());
      std::sort(out.begin(), out.end(),
                [&](EdgeId a, EdgeId b) { return net.target(a) < net.target(b); });
      return out;
    };
    for (const std::vector<NodeId>& block : linear_blocks(plan)) {
      append_translations(plan, block, residue, vectors);
      for (const NodeId a : block) {
        const auto in_a = by_source(a);
        const auto out_a = by_target(a);
        for (const NodeId b : block) {
          const auto in_b = by_source(b);
          const auto out_b = by_target(b);
          std::vector<std::pair<Index, std::int64_t>> v;
          for (std::size_t t = 0; t < in_a.size(); ++t) {
            v.emplace_back(in_a[t], residue(plan.weights[in_b[t]]));
          }
          for (std::size_t t = 0; t < out_b.size(); ++t) {
            v.emplace_back(out_b[t], residue(-plan.weights[out_a[t]]));
          }
          std::sort(v.begin(), v.end());
          std::erase_if(v, [](const auto& x) { return x.second == 0; });
          if (!v.empty()) {
            vectors.push_back(std::move(v));
          }
        }
      }
    }
  }
  const auto rank_of =
      [&](const std::vector<const std::vector<std::pair<Index, std::int64_t>>*>& family) {
        const detail::ModularRowLoader load = [&](Index r, auto& out) {
          const auto& v = *family[static_cast<std::size_t>(r)];
          out.assign(v.begin(), v.end());
        };
        return detail::modular_eliminate(static_cast<Index>(family.size()), net.num_params(), load,
                                         prime, {}, -1)
            .rank;
      };
  std::vector<const std::vector<std::pair<Index, std::int64_t>>*> all;
  for (const auto& v : vectors) {
    all.push_back(&v);
  }
  const Index bound = net.num_params() - rank_of(all);
  if (!net.one_parameter_per_edge()) {
    return bound;
  }
  // The second family: a node v whose incoming edges outnumber the distinct samples it is live
  // on has at least |in(v)| - live(v) kernel vectors on its incoming edges (J_X restricted to
  // them is diag(t(v)) V_v, V_v the live samples' values of v's sources). These spaces and the
  // explicit vectors that avoid every such edge have disjoint supports: their dimensions add.
  std::vector<char> taken(static_cast<std::size_t>(net.num_edges()), 0);
  Index implicit = 0;
  for (NodeId v = 0; v < net.num_nodes(); ++v) {
    const auto in = net.in_edges(v);
    const Index excess = static_cast<Index>(in.size()) - live_samples[static_cast<std::size_t>(v)];
    if (net.is_input(v) || net.activation(v).kind == ActivationKind::max || excess <= 0) {
      continue;
    }
    implicit += excess;
    for (const EdgeId e : in) {
      taken[static_cast<std::size_t>(e)] = 1;
    }
  }
  if (implicit == 0) {
    return bound;
  }
  std::vector<const std::vector<std::pair<Index, std::int64_t>>*> rest;
  for (const auto& v : vectors) {
    if (std::none_of(v.begin(), v.end(), [&](const auto& x) {
          return taken[static_cast<std::size_t>(x.first)] != 0;
        })) {
      rest.push_back(&v);
    }
  }
  return std::min(bound, net.num_params() - rank_of(rest) - implicit);
}

/// The certified upper bound of rank(dPhi(theta)), path-free.
Index dphi_bound(const Model& model, std::span<const double> theta,
                 const FunctionalDimensionOptions& options) {
  RankOptions ro;
  ro.prime = options.prime;
  ro.engine = options.engine;
  ro.engine.progress = {};
  NumericalRankOptions no;
  no.when = NumericalRankOptions::When::never;
  const RankReport rep = check_rank_theorem(model, theta, ro, no, RankRoute::path_free);
  return rep.rank_J_exact ? rep.rank_J_exact->upper : rep.rank_B.upper;
}

/// Sets FLINT's thread count for its lifetime.
class FlintThreads {
 public:
  explicit FlintThreads(int threads) : m_saved(flint_get_num_threads()) {
    flint_set_num_threads(std::max(1, threads));
  }
  ~FlintThreads() { flint_set_num_threads(m_saved); }
  FlintThreads(const FlintThreads&) = delete;
  FlintThreads& operator=(const FlintThreads&) = delete;

 private:
  int m_saved;
};

/// The exact part: the row rank profile of J_X mod p, in growing blocks of rows, stopping at
/// `upper`. Returns the pivot rows; sets rows_used.
std::vector<Index> eliminate_rows(const RowPlan& plan, const ModRing& ring,
                                  const std::vector<char>& param_active, Index upper,
                                  const FunctionalDimensionOptions& options, Index& rows_used) {
  const Index n = plan.X.rows();
  const Index q = plan.q;
  // Only the columns of the active parameters: the others are zero.
  std::vector<Index> columns;
  for (Index k = 0; k < plan.d; ++k) {
    if (param_active[static_cast<std::size_t>(k)]) {
      columns.push_back(k);
    }
  }
  const auto d = static_cast<Index>(columns.size());
  const Index total = n * q;
  const int threads = resolve_threads(options.engine.threads);
  const auto progress = [&](double fraction) {
    if (options.engine.progress) {
      options.engine.progress("eliminating J_X mod p", fraction);
    }
  };
  std::vector<Index> pivots;
  Index done = 0;  // rows eliminated, whole samples
  Index block = std::min(total, 2 * upper + q);
  FlintThreads flint_threads(threads);
  while (done < total && static_cast<Index>(pivots.size()) < upper) {
    Index take = std::min(block, total - done);
    take = std::min(total - done, (take + q - 1) / q * q);
    const Index cols = static_cast<Index>(pivots.size()) + take;
    require_bytes(static_cast<double>(d) * static_cast<double>(cols) * sizeof(std::uint64_t) +
                      static_cast<double>(d) * sizeof(slong),
                  options.engine.max_memory,
                  fmt::format("eliminating {} rows of J_X (the rank so far {} and {} new rows) "
                              "on its {} non-zero columns mod p, dense",
                              cols, pivots.size(), take, d));
    // The samples whose rows fill the block's columns: the earlier pivots' samples, then the
    // new ones. Column c of A is row rows[c] of J_X.
    std::vector<Index> rows = pivots;
    for (Index r = done; r < done + take; ++r) {
      rows.push_back(r);
    }
    std::vector<Index> samples;
    for (const Index r : rows) {
      if (samples.empty() || samples.back() != r / q) {
        samples.push_back(r / q);
      }
    }
    nmod_mat_t a;
    nmod_mat_init(a, d, cols, ring.prime);
    detail::run_team(threads, samples.size() > 1, [&] {
      SampleRows<ModRing> rows_of(plan, ring);
      std::vector<std::uint64_t> values;
#pragma omp for schedule(dynamic, 1)
      for (std::size_t s = 0; s < samples.size(); ++s) {
        const Index i = samples[s];
        rows_of.compute(i, values);
        // The block's columns that are rows of sample i (rows is increasing).
        const auto first = std::lower_bound(rows.begin(), rows.end(), i * q);
        for (auto it = first; it != rows.end() && *it < (i + 1) * q; ++it) {
          const Index c = it - rows.begin();
          const Index j = *it - i * q;
          for (Index k = 0; k < d; ++k) {
            const Index param = columns[static_cast<std::size_t>(k)];
            nmod_mat_entry(a, k, c) = ring.residue(values[static_cast<std::size_t>(param * q + j)]);
          }
        }
      }
    });
    std::vector<slong> perm(static_cast<std::size_t>(std::max<Index>(d, 1)));
    const auto rank = static_cast<Index>(nmod_mat_lu(perm.data(), a, 0));
    // U is in row echelon form: its pivot columns, the leading non-zero of each of its first
    // `rank` rows (L's entries lie left of the diagonal), are the column rank profile of A.
    std::vector<Index> next;
    Index c = 0;
    for (Index r = 0; r < rank; ++r) {
      c = std::max(c, r);
      while (c < cols && nmod_mat_entry(a, r, c) == 0) {
        ++c;
      }
      next.push_back(rows[static_cast<std::size_t>(c)]);
      ++c;
    }
    nmod_mat_clear(a);
    pivots = std::move(next);
    done += take;
    block = std::max(done, q);  // doubling
    progress(static_cast<double>(done) / static_cast<double>(total));
  }
  progress(1.0);
  rows_used = done;
  return pivots;
}

/// The floating-point J_X (N q x d) and its numerical rank, or why not.
void numerical_part(const RowPlan& plan, const FunctionalDimensionOptions& options,
                    FunctionalDimension& fd) {
  using When = NumericalRankOptions::When;
  const NumericalRankOptions& no = options.numerical;
  if (no.when == When::never) {
    fd.numerical_note = "not asked for";
    return;
  }
  const double rows = static_cast<double>(fd.rows);
  const double d = static_cast<double>(fd.d);
  const double flops = 2 * rows * d * std::min(rows, d) + 6 * d * d * d;
  if (no.when == When::automatic && flops > no.automatic_max_flops) {
    fd.numerical_note =
        fmt::format("skipped: the SVD of the {} x {} J_X needs about {:.2g} flops, above {:.2g}",
                    fd.rows, fd.d, flops, no.automatic_max_flops);
    fd.numerical_skipped = true;
    return;
  }
  const double bytes = 2 * rows * d * sizeof(double);  // J_X and LAPACK's copy of its factor
  const auto limit = effective_max_memory(options.engine.max_memory);
  if (bytes > static_cast<double>(limit)) {
    fd.numerical_note = fmt::format(
        "skipped: the dense {} x {} J_X and its SVD need {}, above the memory limit of {}", fd.rows,
        fd.d, format_bytes(bytes), format_bytes(static_cast<double>(limit)));
    return;
  }
  Eigen::MatrixXd j(fd.rows, fd.d);
  const Index q = plan.q;
  detail::run_team(resolve_threads(options.engine.threads), fd.n > 1, [&] {
    SampleRows<RealRing> rows_of(plan, RealRing{});
    std::vector<double> values;
#pragma omp for schedule(dynamic, 4)
    for (Index i = 0; i < fd.n; ++i) {
      rows_of.compute(i, values);
      for (Index k = 0; k < fd.d; ++k) {
        for (Index t = 0; t < q; ++t) {
          j(i * q + t, k) = values[static_cast<std::size_t>(k * q + t)];
        }
      }
    }
  });
  if (options.engine.progress) {
    options.engine.progress("singular values of J_X", -1.0);
  }
  fd.numerical = numerical_rank(std::move(j), no);
  if (options.engine.progress) {
    options.engine.progress("singular values of J_X", 1.0);
  }
}

std::string binding_bound(const FunctionalDimension& fd) {
  if (fd.upper == fd.upper_rows) {
    return fmt::format("q x distinct samples = {} x {}", fd.q, fd.distinct_samples);
  }
  if (fd.upper == fd.upper_dphi) {
    return "the certified rank of dPhi (J_X = L(X) dPhi)";
  }
  return "d minus the known kernel (the parameters on no active path, and the symmetries of "
         "the batch's linear blocks)";
}

void explain(FunctionalDimension& fd) {
  const std::string rows = fd.rows_to_rank == fd.rows
                               ? fmt::format("all {} rows", fd.rows)
                               : fmt::format("the first {} of {} rows", fd.rows_to_rank, fd.rows);
  std::string s;
  if (fd.lower == fd.upper) {
    s = fmt::format("rank J_X = {} certified: the rank mod p of {} meets the upper bound, {}",
                    fd.lower, rows, binding_bound(fd));
  } else {
    s = fmt::format(
        "{} <= rank J_X <= {}: the rank mod p of all {} rows is {} (a certified lower bound); "
        "the upper bound is {}. The gap is a drop of the functional dimension below that bound "
        "(J_X has more kernel than pathlift knows), or, rarely, an "
        "unlucky prime",
        fd.lower, fd.upper, fd.rows, fd.lower, binding_bound(fd));
  }
  if (!fd.pattern_certified) {
    s = fmt::format(
        "the activation pattern is not certain ({}); at the pattern the forward "
        "pass chose: {}",
        fd.pattern_note, s);
  } else if (fd.on_kink) {
    s += "; some pre-activation is exactly 0 (ReLU'(0) = 0 is used, as in PyTorch)";
  }
  fd.explanation = s;
}

}  // namespace

std::string_view to_string(FunctionalDimensionStatus status) {
  return detail::enum_name(k_status_names, status);
}

FunctionalDimension functional_dimension(const Model& model, std::span<const double> theta,
                                         const Eigen::Ref<const Eigen::MatrixXd>& X,
                                         const FunctionalDimensionOptions& options) {
  detail::modular_require_prime(options.prime, "functional_dimension");
  if (options.prime == 2) {
    throw std::invalid_argument(
        "functional_dimension: the prime must be odd (the inputs and weights are dyadic "
        "rationals, 2 is not invertible mod 2)");
  }
  check_theta(model, theta);
  const std::shared_ptr<const Network> dag = model.unrolled(options.engine);
  const Network& net = *dag;
  const ForwardResult fw = forward(net, theta, X, options.engine);
  const ActivationPattern pattern = activation_pattern(net, fw);
  const PatternCertificate pc =
      certify_activation_pattern(net, theta, X, fw, pattern, options.engine);

  FunctionalDimension fd;
  fd.n = X.rows();
  fd.q = static_cast<Index>(net.outputs().size());
  fd.d = net.num_params();
  fd.rows = fd.n * fd.q;
  fd.prime = options.prime;
  fd.margin = pattern.margin;
  fd.on_kink = pattern.on_kink;
  fd.pattern_certified = pc.certified;
  if (!pc.certified) {
    const bool is_max = net.activation(pc.node).kind == ActivationKind::max;
    fd.pattern_note = fmt::format(
        "{} (sample, node) pair{} within rounding of a kink; the first: sample {}, node {}, {} "
        "{:.3g} against an error bound of {:.3g}",
        pc.uncertain, pc.uncertain == 1 ? "" : "s", pc.sample, net.node_name(pc.node),
        is_max ? "max-pool gap" : "pre-activation", pc.value, pc.error_bound);
  }

  const std::vector<double> weights = net.edge_weights(theta);
  RowPlan plan{.net = net,
               .pattern = pattern,
               .X = X,
               .weights = weights,
               .data_column = std::vector<Index>(static_cast<std::size_t>(net.num_nodes()), -1),
               .q = fd.q,
               .d = fd.d};
  const auto data_inputs = net.data_inputs();
  for (std::size_t c = 0; c < data_inputs.size(); ++c) {
    plan.data_column[static_cast<std::size_t>(data_inputs[c])] = static_cast<Index>(c);
  }

  const std::vector<Index> classes = sample_classes(X, fd.distinct_samples);
  fd.upper_rows = fd.q * fd.distinct_samples;
  fd.upper_dphi = dphi_bound(model, theta, options);
  const Activity act = activity(plan, classes);
  const std::vector<char> param_active = active_params(plan, act.edges);
  fd.upper_kernel = kernel_bound(plan, param_active, act.live_samples, options.prime);
  fd.upper = std::min({fd.upper_rows, fd.upper_dphi, fd.upper_kernel});

  const detail::ModField field(options.prime);
  const ModRing ring{field, options.prime};
  fd.pivot_rows = eliminate_rows(plan, ring, param_active, fd.upper, options, fd.rows_used);
  fd.lower = static_cast<Index>(fd.pivot_rows.size());
  fd.rows_to_rank = fd.pivot_rows.empty() ? 0 : fd.pivot_rows.back() + 1;
  fd.status = !fd.pattern_certified  ? FunctionalDimensionStatus::pattern_uncertain
              : fd.lower == fd.upper ? FunctionalDimensionStatus::certified
                                     : FunctionalDimensionStatus::bounds;
  numerical_part(plan, options, fd);
  explain(fd);
  return fd;
}

std::string to_json(const FunctionalDimension& fd, int indent) {
  using detail::number_or_null;
  nlohmann::ordered_json j;
  j["n"] = fd.n;
  j["q"] = fd.q;
  j["d"] = fd.d;
  j["rows"] = fd.rows;
  j["functional_dimension"] = detail::optional_json(fd.rank());
  j["lower"] = fd.lower;
  j["upper"] = fd.upper;
  j["status"] = std::string(to_string(fd.status));
  j["explanation"] = fd.explanation;
  j["upper_rows"] = fd.upper_rows;
  j["upper_dphi"] = fd.upper_dphi;
  j["upper_kernel"] = fd.upper_kernel;
  j["distinct_samples"] = fd.distinct_samples;
  j["rows_to_rank"] = fd.rows_to_rank;
  j["rows_used"] = fd.rows_used;
  j["pivot_rows"] = fd.pivot_rows;
  j["prime"] = fd.prime;
  j["margin"] = number_or_null(fd.margin);
  j["on_kink"] = fd.on_kink;
  j["pattern_certified"] = fd.pattern_certified;
  j["pattern_note"] = fd.pattern_note.empty() ? nlohmann::ordered_json(nullptr)
                                              : nlohmann::ordered_json(fd.pattern_note);
  if (fd.numerical && fd.numerical->status != NumericalRankStatus::failed) {
    const NumericalRank& nr = *fd.numerical;
    j["numerical_rank"] = nr.rank;
    j["numerical_status"] = std::string(to_string(nr.status));
    j["numerical_tolerance"] = number_or_null(nr.tolerance);
    j["numerical_gap"] = number_or_null(nr.gap);
    j["sigma_max"] = number_or_null(nr.sigma(1));
    j["sigma_at_rank"] = number_or_null(nr.sigma(fd.lower));
    j["sigma_after_rank"] = number_or_null(nr.sigma(fd.lower + 1));
    nlohmann::ordered_json tail = nlohmann::ordered_json::array();
    const auto count = static_cast<Index>(nr.singular_values.size());
    for (Index k = std::max<Index>(0, count - 8); k < count; ++k) {
      tail.push_back(number_or_null(nr.singular_values[static_cast<std::size_t>(k)]));
    }
    j["smallest_singular_values"] = tail;
  } else {
    j["numerical_rank"] = nullptr;
    j["numerical_status"] = fd.numerical ? "failed" : "not_computed";
    j["numerical_tolerance"] = nullptr;
    j["numerical_gap"] = nullptr;
    j["sigma_max"] = nullptr;
    j["sigma_at_rank"] = nullptr;
    j["sigma_after_rank"] = nullptr;
    j["smallest_singular_values"] = nullptr;
  }
  j["numerical_note"] = fd.numerical_note.empty() ? nlohmann::ordered_json(nullptr)
                                                  : nlohmann::ordered_json(fd.numerical_note);
  return j.dump(indent);
}

}  // namespace pathlift
