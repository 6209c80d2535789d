#include "src/rank/detail/symmetry_system.hpp"

#include <flint/fmpz_mat.h>
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <numeric>

#include "pathlift/error.hpp"
#include "pathlift/limits.hpp"

namespace pathlift::detail {

SymmetryClasses::SymmetryClasses(Index n) {
  if (n > std::numeric_limits<std::int32_t>::max()) {
    throw TooLarge(fmt::format(
        "the rescaling symmetries: {} nodes, more than the 2^31 - 1 their classes hold", n));
  }
  m_parent.resize(static_cast<std::size_t>(n));
  std::iota(m_parent.begin(), m_parent.end(), 0);
  m_pinned.assign(static_cast<std::size_t>(n), 0);
}

bool SymmetryClasses::unite(Index a, Index b) {
  a = find(a);
  b = find(b);
  if (a == b) {
    return false;
  }
  if (a > b) {
    std::swap(a, b);
  }
  m_parent[static_cast<std::size_t>(b)] = static_cast<std::int32_t>(a);
  m_pinned[static_cast<std::size_t>(a)] |= m_pinned[static_cast<std::size_t>(b)];
  return true;
}

Index SymmetryConstraints::column(Index root) {
  return m_column.try_emplace(root, static_cast<Index>(m_column.size())).first->second;
}

void SymmetryConstraints::add(const SymmetryClasses& classes, Index t, Index s, Index t1,
                              Index s1) {
  m_row.clear();
  const auto term = [&](Index root, int sign) {
    if (!classes.pinned(root)) {
      m_row.emplace_back(column(root), sign);
    }
  };
  term(t, 1);
  term(s, -1);
  term(t1, -1);
  term(s1, 1);
  std::sort(m_row.begin(), m_row.end());
  std::vector<std::pair<Index, int>> merged;
  for (const auto& [col, v] : m_row) {
    if (!merged.empty() && merged.back().first == col) {
      merged.back().second += v;
    } else {
      merged.emplace_back(col, v);
    }
  }
  std::erase_if(merged, [](const auto& x) { return x.second == 0; });
  if (merged.empty()) {
    return;
  }
  if (merged.front().second < 0) {  // r and -r are one constraint
    for (auto& x : merged) {
      x.second = -x.second;
    }
  }
  m_rows.insert(std::move(merged));
}

Index SymmetryConstraints::rank(const EngineOptions& options) const {
  if (m_rows.empty()) {
    return 0;
  }
  // Only the classes some constraint involves are columns.
  std::vector<Index> used;
  for (const auto& r : m_rows) {
    for (const auto& [c, v] : r) {
      used.push_back(c);
    }
  }
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
  const auto n = used.size();
  constexpr std::size_t k_max_classes = 20000;
  if (n > k_max_classes) {
    throw TooLarge(fmt::format(
        "the rescaling symmetries: {} constraints among {} node classes are left after merging "
        "the forced equalities, more than the {} classes the exact rank handles",
        m_rows.size(), n, k_max_classes));
  }
  require_bytes(static_cast<double>(n) * static_cast<double>(n) * 16.0, options.max_memory,
                fmt::format("the rescaling symmetries' constraint Gram matrix ({} x {})", n, n));
  const auto at = [&](Index c) {
    return static_cast<std::size_t>(std::lower_bound(used.begin(), used.end(), c) - used.begin());
  };
  // rank(R) = rank(R^T R) over Q; R^T R has small integer entries.
  std::vector<std::int64_t> gram(n * n, 0);
  for (const auto& r : m_rows) {
    for (const auto& [i, a] : r) {
      for (const auto& [j, b] : r) {
        gram[at(i) * n + at(j)] += a * b;
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
  const auto rank = static_cast<Index>(fmpz_mat_rank(m));
  fmpz_mat_clear(m);
  return rank;
}

ParameterClasses parameter_classes_of(const SymmetryClasses& classes, const FirstEdges& first,
                                      const SymmetryConstraints& constraints) {
  ParameterClasses out;
  out.constraints = constraints.size();
  out.target.assign(first.size(), -2);
  out.source.assign(first.size(), -2);
  // Each root's class number, in the order the parameters first meet them (a table over the
  // roots: a hash per parameter end cost more than the rest of the numbering).
  std::vector<std::int32_t> id(static_cast<std::size_t>(classes.size()), -1);
  Index next = 0;
  const auto number = [&](Index root) -> Index {
    if (classes.pinned(root)) {
      return -1;
    }
    auto& slot = id[static_cast<std::size_t>(root)];
    if (slot < 0) {
      slot = static_cast<std::int32_t>(next++);
    }
    return slot;
  };
  for (std::size_t k = 0; k < first.size(); ++k) {
    if (first[k].first >= 0) {
      out.target[k] = number(first[k].first);
      out.source[k] = number(first[k].second);
    }
  }
  out.classes = next;
  return out;
}

SymmetryDimension symmetry_dimension(Index free_classes, const SymmetryConstraints& constraints,
                                     Index unused_params, const EngineOptions& options) {
  SymmetryDimension out;
  out.classes = free_classes;
  out.constraints = constraints.size();
  out.constraint_rank = constraints.rank(options);
  out.unused_params = unused_params;
  out.h_sym = out.classes - out.constraint_rank + out.unused_params;
  return out;
}

}  // namespace pathlift::detail
