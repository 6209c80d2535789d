#pragma once
// The rescaling symmetries as a linear system (docs/rank.md#weight-sharing), shared by the DAG
// (symmetry.cpp) and the layer graph (layer_symmetry.cpp): classes of nodes whose log-scales
// alpha are forced equal (union-find; a pinned class has alpha = 0), and the constraints left
// between the classes, alpha(t) - alpha(s) = alpha(t1) - alpha(s1) for two edges (s -> t),
// (s1 -> t1) of one parameter, deduplicated and ranked exactly over Q.

#include <cstdint>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "pathlift/options.hpp"
#include "pathlift/symmetry.hpp"
#include "pathlift/types.hpp"

namespace pathlift::detail {

/// Union-find over n elements (at most 2^31 - 1); an element may be pinned (alpha = 0), and a
/// class is pinned when one of its elements is.
class SymmetryClasses {
 public:
  explicit SymmetryClasses(Index n);
  [[nodiscard]] Index size() const { return static_cast<Index>(m_parent.size()); }
  void pin(Index v) { m_pinned[static_cast<std::size_t>(find(v))] = 1; }
  Index find(Index v) {
    auto x = static_cast<std::int32_t>(v);
    while (m_parent[static_cast<std::size_t>(x)] != x) {
      auto& p = m_parent[static_cast<std::size_t>(x)];
      p = m_parent[static_cast<std::size_t>(p)];
      x = p;
    }
    return x;
  }
  /// Merges the classes of a and b; true when they were distinct.
  bool unite(Index a, Index b);
  /// Whether the class of root r is pinned.
  [[nodiscard]] bool pinned(Index root) const {
    return m_pinned[static_cast<std::size_t>(root)] != 0;
  }

 private:
  std::vector<std::int32_t> m_parent;
  std::vector<std::uint8_t> m_pinned;
};

/// The constraints left among free classes (by their roots), deduplicated (r and -r are one).
class SymmetryConstraints {
 public:
  /// alpha(t) - alpha(s) = alpha(t1) - alpha(s1), each argument a root of `classes`.
  void add(const SymmetryClasses& classes, Index t, Index s, Index t1, Index s1);
  /// Distinct non-zero constraints.
  [[nodiscard]] Index size() const { return static_cast<Index>(m_rows.size()); }
  /// Their exact rank over Q (FLINT's integer rank of their Gram matrix over the classes they
  /// involve). TooLarge (with the sizes) beyond 20,000 involved classes or max_memory.
  [[nodiscard]] Index rank(const EngineOptions& options) const;

 private:
  Index column(Index root);
  std::unordered_map<Index, Index> m_column;  // root -> column
  std::set<std::vector<std::pair<Index, int>>> m_rows;
  std::vector<std::pair<Index, int>> m_row;
};

/// Each parameter's first edge as (target root, source root), roots below 2^31 as
/// SymmetryClasses holds them; {-1, -1} for an unused one. One pair a parameter: a Buffer
/// (huge pages: on an ImageNet CNN its first touch cost more than the walk that fills it).
using FirstEdges = Buffer<std::pair<std::int32_t, std::int32_t>>;

/// The classes of the parameters' first edges, the free ones numbered in order of first use.
ParameterClasses parameter_classes_of(const SymmetryClasses& classes, const FirstEdges& first,
                                      const SymmetryConstraints& constraints);

/// h_sym = free classes - rank + unused parameters, with the counts.
SymmetryDimension symmetry_dimension(Index free_classes, const SymmetryConstraints& constraints,
                                     Index unused_params, const EngineOptions& options);

}  // namespace pathlift::detail
