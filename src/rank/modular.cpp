#include "pathlift/modular.hpp"

#include <flint/nmod_mat.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "src/core/modular_field.hpp"
#include "src/rank/detail/modular_elimination.hpp"

namespace pathlift {

// ---------------------------------------------------------------------------------------------
// SparseIntMatrix
// ---------------------------------------------------------------------------------------------

SparseIntMatrix::SparseIntMatrix(Index num_rows, Index num_cols)
    : cols(num_cols), row_entries(static_cast<std::size_t>(num_rows)) {
  if (num_rows < 0 || num_cols < 0) {
    throw std::invalid_argument(
        fmt::format("a sparse matrix cannot have {} rows and {} columns", num_rows, num_cols));
  }
}

Index SparseIntMatrix::nnz() const {
  Index n = 0;
  for (const auto& row : row_entries) {
    n += static_cast<Index>(row.size());
  }
  return n;
}

namespace {

void check_entry(const SparseIntMatrix& m, Index r, Index c) {
  if (r < 0 || r >= m.rows() || c < 0 || c >= m.cols) {
    throw std::out_of_range(
        fmt::format("entry ({}, {}) is outside the {} x {} matrix", r, c, m.rows(), m.cols));
  }
}

}  // namespace

std::int64_t SparseIntMatrix::at(Index r, Index c) const {
  check_entry(*this, r, c);
  const auto& row = row_entries[static_cast<std::size_t>(r)];
  const auto it = std::lower_bound(row.begin(), row.end(), c,
                                   [](const IntEntry& e, Index col) { return e.col < col; });
  return (it != row.end() && it->col == c) ? it->value : 0;
}

void SparseIntMatrix::set(Index r, Index c, std::int64_t value) {
  check_entry(*this, r, c);
  auto& row = row_entries[static_cast<std::size_t>(r)];
  const auto it = std::lower_bound(row.begin(), row.end(), c,
                                   [](const IntEntry& e, Index col) { return e.col < col; });
  if (it != row.end() && it->col == c) {
    if (value == 0) {
      row.erase(it);
    } else {
      it->value = value;
    }
  } else if (value != 0) {
    row.insert(it, IntEntry{static_cast<EdgeId>(c), value});
  }
}

SparseIntMatrix SparseIntMatrix::from_pattern(const CsrPattern& pattern) {
  SparseIntMatrix m(pattern.rows, pattern.cols);
  for (Index r = 0; r < pattern.rows; ++r) {
    auto& row = m.row_entries[static_cast<std::size_t>(r)];
    const auto cols = pattern.row(r);
    row.reserve(cols.size());
    for (const EdgeId c : cols) {
      row.push_back({c, 1});
    }
  }
  return m;
}

// ---------------------------------------------------------------------------------------------
// Modular rank
// ---------------------------------------------------------------------------------------------

Index modular_rank(const SparseIntMatrix& m, const ModularRankOptions& options) {
  for (Index r = 0; r < m.rows(); ++r) {
    for (const auto& e : m.row_entries[static_cast<std::size_t>(r)]) {
      if (e.col < 0 || e.col >= m.cols) {
        throw std::out_of_range(
            fmt::format("modular rank: row {} has column {} outside 0..{}", r, e.col, m.cols - 1));
      }
    }
  }
  const detail::ModularRowLoader load = [&](Index r, auto& out) {
    for (const auto& e : m.row_entries[static_cast<std::size_t>(r)]) {
      out.emplace_back(e.col, e.value);
    }
  };
  return detail::modular_eliminate(m.rows(), m.cols, load, options.prime, options.column_order,
                                   options.stop_at)
      .rank;
}

Index modular_rank(const CsrPattern& pattern, const ModularRankOptions& options) {
  const detail::ModularRowLoader load = [&](Index r, auto& out) {
    for (const EdgeId c : pattern.row(r)) {
      out.emplace_back(c, 1);
    }
  };
  return detail::modular_eliminate(pattern.rows, pattern.cols, load, options.prime,
                                   options.column_order, options.stop_at)
      .rank;
}

Index modular_rank(const ModMatrix& m) {
  detail::modular_require_prime(m.prime, "modular rank of a dense matrix");
  if (m.rows < 0 || m.cols < 0 || static_cast<Index>(m.data.size()) != m.rows * m.cols) {
    throw std::invalid_argument(
        fmt::format("modular rank: a {} x {} matrix needs {} residues, it has {}", m.rows, m.cols,
                    m.rows * m.cols, m.data.size()));
  }
  if (m.rows == 0 || m.cols == 0) {
    return 0;
  }
  nmod_mat_t a;
  nmod_mat_init(a, m.rows, m.cols, m.prime);
  for (Index i = 0; i < m.rows; ++i) {
    for (Index j = 0; j < m.cols; ++j) {
      nmod_mat_entry(a, i, j) = m.at(i, j) % m.prime;
    }
  }
  const auto rank = static_cast<Index>(nmod_mat_rank(a));
  nmod_mat_clear(a);
  return rank;
}

}  // namespace pathlift
