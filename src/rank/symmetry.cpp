#include "pathlift/symmetry.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "pathlift/error.hpp"
#include "src/rank/detail/symmetry_system.hpp"

namespace pathlift {

namespace {

using detail::SymmetryClasses;

/// The symmetries of `net` restricted to the edges with keep[e] != 0 (all when keep is empty):
/// the kept edges must be exactly those of the input-to-output paths of the kept subnetwork
/// (the nodes without kept edges drop out).
SymmetryDimension dag_symmetry(const Network& net, const std::vector<std::uint8_t>& keep,
                               const EngineOptions& options,
                               ParameterClasses* classes_out = nullptr) {
  const auto kept = [&](EdgeId e) { return keep.empty() || keep[static_cast<std::size_t>(e)]; };
  const Index d = net.num_params();
  const bool per_edge = net.one_parameter_per_edge();
  if (per_edge && keep.empty() && classes_out == nullptr) {
    SymmetryDimension out;
    out.h_sym = net.num_hidden();  // every alpha is allowed (Theorem 1)
    out.classes = out.h_sym;
    return out;
  }
  SymmetryClasses cls(net.num_nodes());
  for (NodeId v = 0; v < net.num_nodes(); ++v) {
    if (!net.is_hidden(v)) {
      cls.pin(v);
    }
  }
  std::vector<EdgeId> one(1);
  const auto edges = [&](Index k) -> std::span<const EdgeId> {
    if (per_edge) {
      one[0] = static_cast<EdgeId>(k);
      return one;
    }
    return net.param_edges(k);
  };
  for (EdgeId e = 0; e < net.num_edges(); ++e) {
    if (kept(e) && net.edge_param(e) == kFixedEdge) {
      cls.unite(net.source(e), net.target(e));
    }
  }
  // The forced equalities, to a fixed point: c_k = 0 when an edge of k joins a class to itself
  // or two pinned classes (then every edge of k joins equal log-scales); equal sources (or both
  // pinned) force equal targets, and the other way round.
  for (bool changed = true; changed && !per_edge;) {
    changed = false;
    for (Index k = 0; k < d; ++k) {
      const auto es = edges(k);
      EdgeId e1 = -1;
      bool zero = false;
      for (const EdgeId e : es) {
        if (!kept(e)) {
          continue;
        }
        e1 = e1 < 0 ? e : e1;
        const Index s = cls.find(net.source(e));
        const Index t = cls.find(net.target(e));
        zero = zero || s == t || (cls.pinned(s) && cls.pinned(t));
      }
      if (e1 < 0) {
        continue;
      }
      for (const EdgeId e : es) {
        if (!kept(e)) {
          continue;
        }
        if (zero) {
          changed |= cls.unite(net.source(e), net.target(e));
          continue;
        }
        const Index s1 = cls.find(net.source(e1));
        const Index d1 = cls.find(net.target(e1));
        const Index s = cls.find(net.source(e));
        const Index t = cls.find(net.target(e));
        if (s == s1 || (cls.pinned(s) && cls.pinned(s1))) {
          changed |= cls.unite(t, d1);
        } else if (t == d1 || (cls.pinned(t) && cls.pinned(d1))) {
          changed |= cls.unite(s, s1);
        }
      }
    }
  }
  // The free classes: of the hidden nodes with a kept edge.
  std::vector<std::uint8_t> seen(static_cast<std::size_t>(net.num_nodes()), 0);
  Index free_classes = 0;
  for (EdgeId e = 0; e < net.num_edges(); ++e) {
    if (!kept(e)) {
      continue;
    }
    for (const NodeId v : {net.source(e), net.target(e)}) {
      const Index r = cls.find(v);
      if (!cls.pinned(r) && seen[static_cast<std::size_t>(r)] == 0) {
        seen[static_cast<std::size_t>(r)] = 1;
        ++free_classes;
      }
    }
  }
  detail::SymmetryConstraints rows;
  Index unused = 0;
  detail::FirstEdges first(classes_out != nullptr ? static_cast<std::size_t>(d) : 0, {-1, -1});
  for (Index k = 0; k < d; ++k) {
    EdgeId e1 = -1;
    for (const EdgeId e : edges(k)) {
      if (!kept(e)) {
        continue;
      }
      if (e1 < 0) {
        e1 = e;
        if (classes_out != nullptr) {
          first[static_cast<std::size_t>(k)] = {static_cast<std::int32_t>(cls.find(net.target(e))),
                                                static_cast<std::int32_t>(cls.find(net.source(e)))};
        }
        continue;
      }
      rows.add(cls, cls.find(net.target(e)), cls.find(net.source(e)), cls.find(net.target(e1)),
               cls.find(net.source(e1)));
    }
    unused += e1 < 0 ? 1 : 0;
  }
  if (classes_out != nullptr) {
    *classes_out = detail::parameter_classes_of(cls, first, rows);
  }
  return detail::symmetry_dimension(free_classes, rows, unused, options);
}

}  // namespace

SymmetryDimension rescaling_symmetry_dimension(const Network& net, const EngineOptions& options) {
  return dag_symmetry(net, {}, options);
}

ParameterClasses parameter_classes(const Network& net, const EngineOptions& options) {
  ParameterClasses out;
  (void)dag_symmetry(net, {}, options, &out);
  return out;
}

ZeroPatternRank jacobian_rank_by_zero_pattern(const Network& net, std::span<const double> theta,
                                              const EngineOptions& options) {
  check_theta(net, theta);
  const Index m = net.num_edges();
  const auto nonzero = [&](EdgeId e) {
    const Index k = net.edge_param(e);
    return k == kFixedEdge ? net.fixed_weight(e) != 0.0 : theta[static_cast<std::size_t>(k)] != 0.0;
  };
  // From an input by non-zero edges (forward), to an output by non-zero edges (backward).
  const auto topo = net.topological_order();
  std::vector<std::uint8_t> from_input(static_cast<std::size_t>(net.num_nodes()), 0);
  std::vector<std::uint8_t> to_output(static_cast<std::size_t>(net.num_nodes()), 0);
  for (const NodeId v : topo) {
    bool r = net.in_edges(v).empty();
    for (const EdgeId e : net.in_edges(v)) {
      r = r || (nonzero(e) && from_input[static_cast<std::size_t>(net.source(e))] != 0);
    }
    from_input[static_cast<std::size_t>(v)] = r ? 1 : 0;
  }
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    const NodeId v = *it;
    bool r = net.is_output(v);
    for (const EdgeId e : net.out_edges(v)) {
      r = r || (nonzero(e) && to_output[static_cast<std::size_t>(net.target(e))] != 0);
    }
    to_output[static_cast<std::size_t>(v)] = r ? 1 : 0;
  }
  ZeroPatternRank out;
  std::vector<std::uint8_t> keep(static_cast<std::size_t>(m), 0);
  std::vector<std::uint8_t> single(static_cast<std::size_t>(net.num_params()), 0);
  for (EdgeId e = 0; e < m; ++e) {
    const bool ends = from_input[static_cast<std::size_t>(net.source(e))] != 0 &&
                      to_output[static_cast<std::size_t>(net.target(e))] != 0;
    if (nonzero(e)) {
      keep[static_cast<std::size_t>(e)] = ends ? 1 : 0;
    } else if (ends && net.edge_param(e) != kFixedEdge) {
      single[static_cast<std::size_t>(net.edge_param(e))] = 1;
    }
  }
  out.zero_params = static_cast<Index>(std::count(theta.begin(), theta.end(), 0.0));
  out.single_zero_params = static_cast<Index>(std::count(single.begin(), single.end(), 1));
  out.h_sym_nonzero = dag_symmetry(net, keep, options).h_sym;
  out.rank = net.num_params() - out.h_sym_nonzero + out.single_zero_params;
  return out;
}

}  // namespace pathlift
