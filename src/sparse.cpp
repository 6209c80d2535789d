#include "pathlift/sparse.hpp"

#include <fmt/format.h>

#include <limits>

#include "pathlift/error.hpp"
#include "pathlift/limits.hpp"

namespace pathlift {

std::size_t dense_bytes(Index rows, Index cols, std::size_t scalar_size) {
  const double bytes =
      static_cast<double>(rows) * static_cast<double>(cols) * static_cast<double>(scalar_size);
  if (!(bytes < static_cast<double>(std::numeric_limits<std::size_t>::max()))) {
    return std::numeric_limits<std::size_t>::max();
  }
  return static_cast<std::size_t>(bytes);
}

namespace {

void require_dense(Index rows, Index cols, std::size_t scalar_size, std::size_t max_memory) {
  const std::size_t bytes = dense_bytes(rows, cols, scalar_size);
  const std::size_t limit = effective_max_memory(max_memory);
  if (bytes > limit) {
    throw TooLarge(fmt::format(
        "a dense {} x {} matrix needs {} ({} bytes), over the memory limit of {} (--max-memory)",
        rows, cols, format_bytes(static_cast<double>(bytes)), bytes,
        format_bytes(static_cast<double>(limit))));
  }
}

}  // namespace

Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> to_dense(
    const CsrPattern& pattern, std::size_t max_memory) {
  require_dense(pattern.rows, pattern.cols, sizeof(double), max_memory);
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> out =
      Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>::Zero(pattern.rows,
                                                                                   pattern.cols);
  const auto off = pattern.offsets();
  const auto idx = pattern.indices();
  for (Index r = 0; r < pattern.rows; ++r) {
    for (Index k = off[static_cast<std::size_t>(r)]; k < off[static_cast<std::size_t>(r) + 1];
         ++k) {
      out(r, idx[static_cast<std::size_t>(k)]) = 1.0;
    }
  }
  return out;
}

template <class T>
Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> to_dense(const CsrMatrix<T>& m,
                                                                           std::size_t max_memory) {
  require_dense(m.rows(), m.cols(), sizeof(T), max_memory);
  Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> out =
      Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>::Zero(m.rows(), m.cols());
  const auto off = m.pattern.offsets();
  const auto idx = m.pattern.indices();
  for (Index r = 0; r < m.rows(); ++r) {
    for (Index k = off[static_cast<std::size_t>(r)]; k < off[static_cast<std::size_t>(r) + 1];
         ++k) {
      out(r, idx[static_cast<std::size_t>(k)]) = m.values[static_cast<std::size_t>(k)];
    }
  }
  return out;
}

template <class T>
Eigen::SparseMatrix<T, Eigen::RowMajor, Index> to_eigen(const CsrMatrix<T>& m) {
  Eigen::SparseMatrix<T, Eigen::RowMajor, Index> out(m.rows(), m.cols());
  const auto off = m.pattern.offsets();
  const auto idx = m.pattern.indices();
  out.resizeNonZeros(m.nnz());
  std::copy(off.begin(), off.end(), out.outerIndexPtr());
  std::copy(idx.begin(), idx.end(), out.innerIndexPtr());
  std::copy(m.values.begin(), m.values.end(), out.valuePtr());
  return out;
}

Eigen::SparseMatrix<double, Eigen::RowMajor, Index> to_eigen(const CsrPattern& pattern) {
  CsrMatrix<double> ones{pattern, Buffer<double>(static_cast<std::size_t>(pattern.nnz()), 1.0)};
  return to_eigen(ones);
}

template Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> to_dense(
    const CsrMatrix<double>&, std::size_t);
template Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> to_dense(
    const CsrMatrix<float>&, std::size_t);
template Eigen::SparseMatrix<double, Eigen::RowMajor, Index> to_eigen(const CsrMatrix<double>&);
template Eigen::SparseMatrix<float, Eigen::RowMajor, Index> to_eigen(const CsrMatrix<float>&);

}  // namespace pathlift
