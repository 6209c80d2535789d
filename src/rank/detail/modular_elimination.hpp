#pragma once
// Sparse Gaussian elimination modulo a prime, shared by modular_rank() (rank.cpp) and the
// proof's rank bookkeeping (proof.cpp).
//
// Rows arrive as (column, value) lists. Columns are renamed to their position in the pivot
// order; a row's leading position is its smallest one. Phase 1 makes every row whose leading
// position is still free a pivot, with no arithmetic (rows with distinct leading positions
// are in echelon form, hence independent). Phase 2 reduces the other rows against the pivots
// (dense accumulator, min-heap of touched positions) until each vanishes or becomes a pivot.

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "pathlift/types.hpp"
#include "src/core/modular_field.hpp"

namespace pathlift::detail {

struct ModularEliminationResult {
  Index rank = 0;
  Index rows_used = 0;  ///< rows that became pivots in phase 1 plus rows reduced in phase 2
};

/// Loads row r as (column, integer value) pairs into `out` (cleared by the callee).
using ModularRowLoader =
    std::function<void(Index r, std::vector<std::pair<Index, std::int64_t>>& out)>;

/// rank mod `prime` of a rows x cols integer matrix given row by row. `column_order` is the
/// pivot order (empty = identity); `stop_at` < 0 = never stop early. `progress`, when set, is
/// called with the fraction of the rows handled (phase 1 then phase 2), and 1 at the end.
ModularEliminationResult modular_eliminate(Index rows, Index cols, const ModularRowLoader& load_row,
                                           std::uint64_t prime,
                                           const std::vector<EdgeId>& column_order, Index stop_at,
                                           const std::function<void(double)>& progress = {});

}  // namespace pathlift::detail
