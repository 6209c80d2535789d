#pragma once
/// \file modular.hpp
/// Exact linear algebra modulo a prime: sparse integer matrices, dense matrices of residues, and
/// their rank modulo p, a certified lower bound of their rank over Q (a minor that is non-zero
/// mod p is non-zero over Q). The rank certificates of rank.hpp are built on these.

#include <cstdint>
#include <vector>

#include "pathlift/mod_p.hpp"
#include "pathlift/sparse.hpp"
#include "pathlift/types.hpp"

namespace pathlift {

/// One stored entry of a SparseIntMatrix row.
struct IntEntry {
  EdgeId col = 0;
  std::int64_t value = 0;
  bool operator==(const IntEntry&) const = default;
};

/// A sparse integer matrix stored by rows: each row lists its non-zero entries by increasing
/// column. Small and mutable (row and column operations of the proof, tests that corrupt an
/// entry); not meant for the path engine's large matrices (use CsrPattern there).
struct SparseIntMatrix {
  Index cols = 0;
  std::vector<std::vector<IntEntry>> row_entries;

  SparseIntMatrix() = default;
  SparseIntMatrix(Index num_rows, Index num_cols);

  [[nodiscard]] Index rows() const { return static_cast<Index>(row_entries.size()); }
  [[nodiscard]] Index nnz() const;
  /// Entry (r, c); 0 when not stored. Throws std::out_of_range outside the matrix.
  [[nodiscard]] std::int64_t at(Index r, Index c) const;
  /// Sets entry (r, c) (a zero removes it). Throws std::out_of_range outside the matrix.
  void set(Index r, Index c, std::int64_t value);
  /// The 0/1 matrix of a pattern (B as integers). Complexity: O(nnz).
  static SparseIntMatrix from_pattern(const CsrPattern& pattern);

  bool operator==(const SparseIntMatrix&) const = default;
};

/// Options of modular_rank().
struct ModularRankOptions {
  /// A prime < 2^63 (default 2^61 - 1). Throws std::invalid_argument otherwise.
  std::uint64_t prime = default_prime;
  /// The pivot order: column_order[i] is the column tried i-th (a permutation of 0..cols-1);
  /// empty = 0, 1, 2, ... A good order makes elimination fill-free (see rank_column_order()).
  std::vector<EdgeId> column_order;
  /// Stop as soon as the rank reaches this value (a known upper bound); -1 = never.
  Index stop_at = -1;
};

/// rank of an integer matrix modulo a prime, by sparse Gaussian elimination: first every row
/// whose leading column (in column_order) is new becomes a pivot with no arithmetic at all
/// (rows with distinct leading columns are independent), then the remaining rows are reduced
/// against the pivots (mod p, sparse rows, dense accumulator) until they vanish or become
/// pivots. rank mod p <= rank over Q, so the result is a certified lower bound of the rank.
/// Complexity: O(nnz) when the first phase finds stop_at pivots; otherwise up to
/// O(rows * rank * cols) modular operations.
Index modular_rank(const SparseIntMatrix& m, const ModularRankOptions& options = {});

/// The same for a 0/1 pattern (B), without converting it.
Index modular_rank(const CsrPattern& pattern, const ModularRankOptions& options = {});

/// rank of a dense matrix of residues modulo its own prime m.prime (any prime < 2^63), by
/// FLINT's nmod_mat_rank (blocked, asymptotically fast elimination; about 6-9x faster than a
/// plain elimination at n = 1,000-2,000), on the calling thread.
/// Throws std::invalid_argument for a prime that is not a prime < 2^63 or a wrong data size.
/// Complexity: O(rows * cols * rank) modular operations at most.
Index modular_rank(const ModMatrix& m);

}  // namespace pathlift
