#include "pathlift/symmetry.hpp"

#include <flint/fmpz_mat.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <numeric>
#include <set>
#include <vector>

#include "pathlift/error.hpp"
#include "pathlift/limits.hpp"

namespace pathlift {

namespace {

/// Union-find over the nodes; a class is pinned (alpha = 0) when it holds an input or output.
class Classes {
 public:
  explicit Classes(const Network& net)
      : m_parent(static_cast<std::size_t>(net.num_nodes())),
        m_pinned(static_cast<std::size_t>(net.num_nodes()), 0) {
    std::iota(m_parent.begin(), m_parent.end(), NodeId{0});
    for (NodeId v = 0; v < net.num_nodes(); ++v) {
      m_pinned[static_cast<std::size_t>(v)] = net.is_hidden(v) ? 0 : 1;
    }
  }
  NodeId find(NodeId v) {
    while (m_parent[static_cast<std::size_t>(v)] != v) {
      auto& p = m_parent[static_cast<std::size_t>(v)];
      p = m_parent[static_cast<std::size_t>(p)];
      v = p;
    }
    return v;
  }
  /// Merges the classes of a and b; true when they were distinct.
  bool unite(NodeId a, NodeId b) {
    a = find(a);
    b = find(b);
    if (a == b) {
      return false;
    }
    if (a > b) {
      std::swap(a, b);
    }
    m_parent[static_cast<std::size_t>(b)] = a;
    m_pinned[static_cast<std::size_t>(a)] |= m_pinned[static_cast<std::size_t>(b)];
    return true;
  }
  bool pinned(NodeId root) const { return m_pinned[static_cast<std::size_t>(root)] != 0; }

 private:
  std::vector<NodeId> m_parent;
  std::vector<std::uint8_t> m_pinned;
};

/// One pass of the forced equalities; true when some classes merged.
bool merge_pass(const Network& net, const ParameterMap& map, Classes& cls) {
  bool changed = false;
  for (Index k = 0; k < map.num_params; ++k) {
    const Index first = map.offsets[static_cast<std::size_t>(k)];
    const Index last = map.offsets[static_cast<std::size_t>(k) + 1];
    if (last - first < 1) {
      continue;
    }
    // c_k = 0 is forced when one edge of k joins a class to itself or two pinned classes:
    // then every edge of k joins equal log-scales.
    bool zero = false;
    for (Index c = first; c < last && !zero; ++c) {
      const EdgeId e = map.edges[static_cast<std::size_t>(c)];
      const NodeId s = cls.find(net.source(e));
      const NodeId t = cls.find(net.target(e));
      zero = s == t || (cls.pinned(s) && cls.pinned(t));
    }
    if (zero) {
      for (Index c = first; c < last; ++c) {
        const EdgeId e = map.edges[static_cast<std::size_t>(c)];
        changed |= cls.unite(net.source(e), net.target(e));
      }
      continue;
    }
    const EdgeId e1 = map.edges[static_cast<std::size_t>(first)];
    for (Index c = first + 1; c < last; ++c) {
      const EdgeId e = map.edges[static_cast<std::size_t>(c)];
      const NodeId s1 = cls.find(net.source(e1));
      const NodeId d1 = cls.find(net.target(e1));
      const NodeId s = cls.find(net.source(e));
      const NodeId t = cls.find(net.target(e));
      // alpha(t) - alpha(s) = alpha(d1) - alpha(s1): equal sources (or both pinned) force
      // equal targets, and the other way round.
      if (s == s1 || (cls.pinned(s) && cls.pinned(s1))) {
        changed |= cls.unite(t, d1);
      } else if (t == d1 || (cls.pinned(t) && cls.pinned(d1))) {
        changed |= cls.unite(s, s1);
      }
    }
  }
  return changed;
}

}  // namespace

SymmetryDimension rescaling_symmetry_dimension(const Network& net, const EngineOptions& options) {
  SymmetryDimension out;
  const auto& map = net.parameter_map();
  if (!map) {
    out.h_sym = net.num_hidden();  // every alpha is allowed (Theorem 1)
    out.classes = out.h_sym;
    return out;
  }
  Classes cls(net);
  for (EdgeId e = 0; e < net.num_edges(); ++e) {
    if (map->edge_params[static_cast<std::size_t>(e)] == kFixedEdge) {
      cls.unite(net.source(e), net.target(e));
    }
  }
  while (merge_pass(net, *map, cls)) {
  }
  // The free classes, numbered.
  std::vector<Index> column(static_cast<std::size_t>(net.num_nodes()), -1);
  for (NodeId v = 0; v < net.num_nodes(); ++v) {
    const NodeId r = cls.find(v);
    if (!cls.pinned(r) && column[static_cast<std::size_t>(r)] < 0) {
      column[static_cast<std::size_t>(r)] = out.classes++;
    }
  }
  // The constraints left, each a sparse integer row over the free classes, deduplicated.
  std::set<std::vector<std::pair<Index, int>>> rows;
  std::vector<std::pair<Index, int>> row;
  const auto term = [&](NodeId v, int sign) {
    const Index c = column[static_cast<std::size_t>(cls.find(v))];
    if (c >= 0) {
      row.emplace_back(c, sign);
    }
  };
  for (Index k = 0; k < map->num_params; ++k) {
    const Index first = map->offsets[static_cast<std::size_t>(k)];
    const Index last = map->offsets[static_cast<std::size_t>(k) + 1];
    if (first == last) {
      ++out.unused_params;
      continue;
    }
    const EdgeId e1 = map->edges[static_cast<std::size_t>(first)];
    for (Index c = first + 1; c < last; ++c) {
      const EdgeId e = map->edges[static_cast<std::size_t>(c)];
      row.clear();
      term(net.target(e), 1);
      term(net.source(e), -1);
      term(net.target(e1), -1);
      term(net.source(e1), 1);
      std::sort(row.begin(), row.end());
      std::vector<std::pair<Index, int>> merged;
      for (const auto& [col, v] : row) {
        if (!merged.empty() && merged.back().first == col) {
          merged.back().second += v;
        } else {
          merged.emplace_back(col, v);
        }
      }
      std::erase_if(merged, [](const auto& x) { return x.second == 0; });
      if (merged.empty()) {
        continue;
      }
      if (merged.front().second < 0) {  // r and -r are one constraint
        for (auto& x : merged) {
          x.second = -x.second;
        }
      }
      rows.insert(std::move(merged));
    }
  }
  out.constraints = static_cast<Index>(rows.size());
  constexpr Index k_max_classes = 20000;
  if (out.classes > k_max_classes) {
    throw TooLarge(fmt::format(
        "the rescaling symmetries: {} node classes and {} constraints are left after merging "
        "the forced equalities, more than the {} classes the exact rank handles",
        out.classes, out.constraints, k_max_classes));
  }
  require_bytes(static_cast<double>(out.classes) * static_cast<double>(out.classes) * 16.0,
                options.max_memory,
                fmt::format("the rescaling symmetries' constraint Gram matrix ({} x {})",
                            out.classes, out.classes));
  if (out.classes > 0 && out.constraints > 0) {
    // rank(R) = rank(R^T R) over Q; R^T R has small integer entries.
    const auto n = static_cast<std::size_t>(out.classes);
    std::vector<std::int64_t> gram(n * n, 0);
    for (const auto& r : rows) {
      for (const auto& [i, a] : r) {
        for (const auto& [j, b] : r) {
          gram[static_cast<std::size_t>(i) * n + static_cast<std::size_t>(j)] += a * b;
        }
      }
    }
    fmpz_mat_t m;
    fmpz_mat_init(m, static_cast<slong>(n), static_cast<slong>(n));
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        fmpz_set_si(fmpz_mat_entry(m, static_cast<slong>(i), static_cast<slong>(j)),
                    static_cast<slong>(gram[i * n + j]));
      }
    }
    out.constraint_rank = static_cast<Index>(fmpz_mat_rank(m));
    fmpz_mat_clear(m);
  }
  out.h_sym = out.classes - out.constraint_rank + out.unused_params;
  return out;
}

}  // namespace pathlift
