#include "src/rank/detail/functional_kernel.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "pathlift/error.hpp"
#include "pathlift/mod_p.hpp"
#include "pathlift/symmetry.hpp"
#include "src/core/modular_field.hpp"
#include "src/rank/detail/modular_elimination.hpp"

namespace pathlift::detail {

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

namespace {

/// The residue in [0, p) of a double (a dyadic rational), as a kernel vector's entry.
std::int64_t residue_of(const ModField& field, double x) {
  return static_cast<std::int64_t>(field.to_residue(field.from_dyadic(x)));
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

/// With shared parameters, the rescaling of each class of parameter_classes (symmetry.hpp)
/// when the classes are independent: theta_k grows by lambda on the parameters entering the
/// class and shrinks by 1/lambda on those leaving it, a symmetry of f (positive homogeneity,
/// the pattern unchanged), so its tangent theta_k ([k enters] - [k leaves]) is in J_X's
/// kernel. Skipped when the classes keep constraints or are too many to compute.
void append_class_rescalings(const RowPlan& plan, std::uint64_t prime,
                             std::vector<std::vector<std::pair<Index, std::int64_t>>>& vectors) {
  const Network& net = plan.net;
  ParameterClasses pc;
  try {
    pc = parameter_classes(net);
  } catch (const TooLarge&) {
    return;
  }
  if (pc.constraints != 0) {
    return;
  }
  const ModField field(prime);
  const auto residue = [&](double x) { return residue_of(field, x); };
  std::vector<std::vector<std::pair<Index, std::int64_t>>> by_class(
      static_cast<std::size_t>(pc.classes));
  // theta_k, each parameter's value: the weight of any of its edges.
  std::vector<double> value(static_cast<std::size_t>(net.num_params()), 0.0);
  for (EdgeId e = 0; e < net.num_edges(); ++e) {
    if (net.edge_param(e) != kFixedEdge) {
      value[static_cast<std::size_t>(net.edge_param(e))] = plan.weights[e];
    }
  }
  for (Index k = 0; k < net.num_params(); ++k) {
    const Index in = pc.target[static_cast<std::size_t>(k)];
    const Index out = pc.source[static_cast<std::size_t>(k)];
    if (in == out) {
      continue;  // enters and leaves one class (or neither): unchanged
    }
    const double t = value[static_cast<std::size_t>(k)];
    if (in >= 0) {
      by_class[static_cast<std::size_t>(in)].emplace_back(k, residue(t));
    }
    if (out >= 0) {
      by_class[static_cast<std::size_t>(out)].emplace_back(k, residue(-t));
    }
  }
  for (auto& v : by_class) {
    std::erase_if(v, [](const auto& x) { return x.second == 0; });
    if (!v.empty()) {
      vectors.push_back(std::move(v));  // by increasing parameter already
    }
  }
}

}  // namespace

/// The kernel bound on rank J_X (FunctionalDimension::upper_kernel): d minus the rank mod p
/// (a lower bound of their rank over Q) of kernel vectors that are known exactly:
/// - e_k for a parameter that carries no active edge (its column of J_X is zero);
/// - with shared parameters, the rescaling of each class (append_class_rescalings);
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
  if (!net.one_parameter_per_edge()) {
    append_class_rescalings(plan, prime, vectors);
  } else {
    const ModField field(prime);
    const auto residue = [&](double x) { return residue_of(field, x); };
    // Per node of a block: its incoming edges by source node and its outgoing edges by target
    // node (the same sources and targets for every node of the block), with the residues of
    // their weights, and of minus them, once.
    struct Side {
      std::vector<EdgeId> in;
      std::vector<EdgeId> out;
      std::vector<std::int64_t> in_weight;
      std::vector<std::int64_t> out_minus_weight;
    };
    const auto side_of = [&](NodeId v) {
      Side side{.in = {net.in_edges(v).begin(), net.in_edges(v).end()},
                .out = {net.out_edges(v).begin(), net.out_edges(v).end()},
                .in_weight = {},
                .out_minus_weight = {}};
      std::sort(side.in.begin(), side.in.end(),
                [&](EdgeId a, EdgeId b) { return net.source(a) < net.source(b); });
      std::sort(side.out.begin(), side.out.end(),
                [&](EdgeId a, EdgeId b) { return net.target(a) < net.target(b); });
      for (const EdgeId e : side.in) {
        side.in_weight.push_back(residue(plan.weights[e]));
      }
      for (const EdgeId e : side.out) {
        side.out_minus_weight.push_back(residue(-plan.weights[e]));
      }
      return side;
    };
    for (const std::vector<NodeId>& block : linear_blocks(plan)) {
      append_translations(plan, block, residue, vectors);
      std::vector<Side> sides;
      for (const NodeId v : block) {
        sides.push_back(side_of(v));
      }
      for (const Side& a : sides) {
        for (const Side& b : sides) {
          // The tangent along E_ab: w(u -> a) moves by w(u -> b), w(b -> t) by -w(a -> t).
          std::vector<std::pair<Index, std::int64_t>> v;
          for (std::size_t t = 0; t < a.in.size(); ++t) {
            v.emplace_back(a.in[t], b.in_weight[t]);
          }
          for (std::size_t t = 0; t < b.out.size(); ++t) {
            v.emplace_back(b.out[t], a.out_minus_weight[t]);
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

}  // namespace pathlift::detail
