#pragma once
/// \file sparse.hpp
/// Compressed sparse row matrices, the layout scipy and Eigen share: row offsets (rows + 1),
/// column indices (sorted within each row) and values. The skeleton B is a pattern (its values
/// are implicit ones); the Jacobian dPhi is a matrix with B's pattern, sharing B's arrays.

#include <Eigen/Core>
#include <Eigen/SparseCore>
#include <memory>
#include <span>

#include "pathlift/options.hpp"
#include "pathlift/types.hpp"

namespace pathlift {

/// The sparsity pattern of a CSR matrix. The arrays are shared (not copied) between a path
/// set, its skeleton B and the Jacobians computed from it.
struct CsrPattern {
  Index rows = 0;
  Index cols = 0;
  std::shared_ptr<const Buffer<Index>> row_offsets;   ///< rows + 1 entries, from 0 to nnz
  std::shared_ptr<const Buffer<EdgeId>> col_indices;  ///< nnz entries, increasing in each row

  [[nodiscard]] Index nnz() const { return rows == 0 ? 0 : offsets().back(); }
  [[nodiscard]] std::span<const Index> offsets() const { return *row_offsets; }
  [[nodiscard]] std::span<const EdgeId> indices() const { return *col_indices; }
  /// Column indices of row r.
  [[nodiscard]] std::span<const EdgeId> row(Index r) const {
    const auto off = offsets();
    return indices().subspan(static_cast<std::size_t>(off[static_cast<std::size_t>(r)]),
                             static_cast<std::size_t>(off[static_cast<std::size_t>(r) + 1] -
                                                      off[static_cast<std::size_t>(r)]));
  }
};

/// A CSR matrix: a pattern and one value per stored entry.
template <class T>
struct CsrMatrix {
  CsrPattern pattern;
  Buffer<T> values;  ///< parallel to pattern.indices()

  [[nodiscard]] Index rows() const { return pattern.rows; }
  [[nodiscard]] Index cols() const { return pattern.cols; }
  [[nodiscard]] Index nnz() const { return pattern.nnz(); }
};

/// Whether the indices of a CSR pattern fit int32, as scipy chooses for a csr_matrix: nnz, rows
/// and columns all at most 2^31 - 1 (else they are int64).
bool fits_int32_indices(const CsrPattern& pattern);

/// Bytes a dense rows x cols matrix of T needs (saturating at SIZE_MAX).
std::size_t dense_bytes(Index rows, Index cols, std::size_t scalar_size);

/// The pattern as a dense 0/1 matrix (row-major). Throws TooLarge, with the sizes, when it
/// needs more than options.max_memory bytes (0: the default limit, half of physical RAM).
Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> to_dense(
    const CsrPattern& pattern, const EngineOptions& options = {});

/// The matrix as a dense row-major matrix, under the same limit as above.
template <class T>
Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> to_dense(
    const CsrMatrix<T>& m, const EngineOptions& options = {});

/// A copy as an Eigen sparse matrix (row-major, 64-bit indices), for Eigen's algorithms.
template <class T>
Eigen::SparseMatrix<T, Eigen::RowMajor, Index> to_eigen(const CsrMatrix<T>& m);
/// The pattern as an Eigen sparse matrix of ones.
Eigen::SparseMatrix<double, Eigen::RowMajor, Index> to_eigen(const CsrPattern& pattern);

extern template Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> to_dense(
    const CsrMatrix<double>&, const EngineOptions&);
extern template Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> to_dense(
    const CsrMatrix<float>&, const EngineOptions&);
extern template Eigen::SparseMatrix<double, Eigen::RowMajor, Index> to_eigen(
    const CsrMatrix<double>&);
extern template Eigen::SparseMatrix<float, Eigen::RowMajor, Index> to_eigen(
    const CsrMatrix<float>&);

}  // namespace pathlift
