#include "src/rank/detail/modular_elimination.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <queue>
#include <stdexcept>

namespace pathlift::detail {

namespace {

using Entry = std::pair<Index, std::uint64_t>;  // (position, value in internal form)

class Eliminator {
 public:
  Eliminator(const ModField& field, Index cols)
      : m_f(field),
        m_pivot_at(static_cast<std::size_t>(cols), -1),
        m_acc(static_cast<std::size_t>(cols), 0),
        m_queued(static_cast<std::size_t>(cols), 0) {}

  [[nodiscard]] Index rank() const { return static_cast<Index>(m_pivots.size()); }

  // Phase 1: `row` (sorted by position, no zero) becomes a pivot if its leading position is
  // free.
  bool try_direct(std::vector<Entry>& row) {
    if (row.empty() || m_pivot_at[static_cast<std::size_t>(row.front().first)] >= 0) {
      return false;
    }
    add_pivot(row);
    return true;
  }

  // Phase 2: reduces `row` against the pivots; true when a non-zero remainder became a pivot.
  bool reduce(const std::vector<Entry>& row) {
    for (const auto& [pos, value] : row) {
      push(pos);
      m_acc[static_cast<std::size_t>(pos)] = m_f.add(m_acc[static_cast<std::size_t>(pos)], value);
    }
    while (!m_heap.empty()) {
      const Index j = m_heap.top();
      m_heap.pop();
      m_queued[static_cast<std::size_t>(j)] = 0;
      const std::uint64_t a = m_acc[static_cast<std::size_t>(j)];
      if (a == 0) {
        continue;
      }
      const Index piv = m_pivot_at[static_cast<std::size_t>(j)];
      if (piv < 0) {
        // New pivot: j and every queued position still non-zero.
        std::vector<Entry> remainder;
        remainder.emplace_back(j, a);
        m_acc[static_cast<std::size_t>(j)] = 0;
        while (!m_heap.empty()) {
          const Index k = m_heap.top();
          m_heap.pop();
          m_queued[static_cast<std::size_t>(k)] = 0;
          const std::uint64_t v = m_acc[static_cast<std::size_t>(k)];
          if (v != 0) {
            remainder.emplace_back(k, v);
            m_acc[static_cast<std::size_t>(k)] = 0;
          }
        }
        add_pivot(remainder);
        return true;
      }
      // acc -= a * pivot (the pivot's leading value is 1, so acc[j] becomes 0).
      for (const auto& [pos, value] : m_pivots[static_cast<std::size_t>(piv)]) {
        auto& slot = m_acc[static_cast<std::size_t>(pos)];
        slot = m_f.sub(slot, m_f.mul(a, value));
        if (pos != j) {
          push(pos);
        }
      }
    }
    return false;
  }

 private:
  void push(Index pos) {
    if (m_queued[static_cast<std::size_t>(pos)] == 0) {
      m_queued[static_cast<std::size_t>(pos)] = 1;
      m_heap.push(pos);
    }
  }

  void add_pivot(std::vector<Entry>& row) {
    const std::uint64_t lead = row.front().second;
    if (lead != m_f.one()) {
      const std::uint64_t inv = m_f.inv(lead);
      for (auto& entry : row) {
        entry.second = m_f.mul(entry.second, inv);
      }
    }
    m_pivot_at[static_cast<std::size_t>(row.front().first)] = static_cast<Index>(m_pivots.size());
    m_pivots.push_back(std::move(row));
  }

  const ModField& m_f;
  std::vector<Index> m_pivot_at;
  std::vector<std::vector<Entry>> m_pivots;
  std::vector<std::uint64_t> m_acc;
  std::vector<std::uint8_t> m_queued;
  std::priority_queue<Index, std::vector<Index>, std::greater<>> m_heap;
};

}  // namespace

ModularEliminationResult modular_eliminate(Index rows, Index cols, const ModularRowLoader& load_row,
                                           std::uint64_t prime,
                                           const std::vector<EdgeId>& column_order, Index stop_at,
                                           const std::function<void(double)>& progress) {
  const ModField field(prime);
  std::vector<Index> position(static_cast<std::size_t>(cols));
  if (column_order.empty()) {
    for (Index c = 0; c < cols; ++c) {
      position[static_cast<std::size_t>(c)] = c;
    }
  } else {
    if (static_cast<Index>(column_order.size()) != cols) {
      throw std::invalid_argument(
          fmt::format("modular rank: the column order has {} entries for {} columns",
                      column_order.size(), cols));
    }
    std::vector<std::uint8_t> seen(static_cast<std::size_t>(cols), 0);
    for (std::size_t i = 0; i < column_order.size(); ++i) {
      const EdgeId c = column_order[i];
      if (c < 0 || c >= cols || seen[static_cast<std::size_t>(c)] != 0) {
        throw std::invalid_argument(fmt::format(
            "modular rank: the column order is not a permutation of 0..{} (entry {} is {})",
            cols - 1, i, c));
      }
      seen[static_cast<std::size_t>(c)] = 1;
      position[static_cast<std::size_t>(c)] = static_cast<Index>(i);
    }
  }

  Eliminator elim(field, cols);
  ModularEliminationResult result;
  const auto done = [&] { return stop_at >= 0 && elim.rank() >= stop_at; };
  std::vector<std::pair<Index, std::int64_t>> raw;
  std::vector<Entry> row;
  const auto load = [&](Index r) {
    raw.clear();
    load_row(r, raw);
    row.clear();
    for (const auto& [c, v] : raw) {
      if (c < 0 || c >= cols) {
        throw std::out_of_range(
            fmt::format("modular rank: row {} has column {} outside 0..{}", r, c, cols - 1));
      }
      const std::uint64_t x = field.from_int(v);
      if (x != 0) {
        row.emplace_back(position[static_cast<std::size_t>(c)], x);
      }
    }
    std::sort(row.begin(), row.end());
    // Merge repeated columns (a row given with the same column twice).
    std::size_t out = 0;
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (out > 0 && row[out - 1].first == row[i].first) {
        row[out - 1].second = field.add(row[out - 1].second, row[i].second);
        if (row[out - 1].second == 0) {
          --out;
        }
      } else {
        row[out++] = row[i];
      }
    }
    row.resize(out);
  };

  // Phase 1 is one pass over the rows; phase 2 is reported over the deferred rows.
  const auto report = [&](Index done_rows, Index total, double start, double span) {
    if (progress && (done_rows & 0xFFFF) == 0) {
      progress(start + span * static_cast<double>(done_rows) / static_cast<double>(total));
    }
  };
  std::vector<Index> deferred;
  for (Index r = 0; r < rows && !done(); ++r) {
    report(r, rows, 0.0, 0.5);
    load(r);
    if (elim.try_direct(row)) {
      ++result.rows_used;
    } else if (!row.empty()) {
      deferred.push_back(r);
    }
  }
  for (std::size_t i = 0; i < deferred.size(); ++i) {
    if (done()) {
      break;
    }
    report(static_cast<Index>(i), static_cast<Index>(deferred.size()), 0.5, 0.5);
    const Index r = deferred[i];
    load(r);
    elim.reduce(row);
    ++result.rows_used;
  }
  result.rank = elim.rank();
  if (progress) {
    progress(1.0);
  }
  return result;
}

}  // namespace pathlift::detail
