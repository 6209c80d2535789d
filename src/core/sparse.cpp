#include "pathlift/sparse.hpp"

#include <limits>
#include <string_view>

#include "pathlift/limits.hpp"

namespace pathlift {

bool fits_int32_indices(const CsrPattern& pattern) {
  constexpr auto int32_max = static_cast<Index>(std::numeric_limits<std::int32_t>::max());
  return pattern.nnz() <= int32_max && pattern.rows <= int32_max && pattern.cols <= int32_max;
}

std::size_t dense_bytes(Index rows, Index cols, std::size_t scalar_size) {
  const double bytes =
      static_cast<double>(rows) * static_cast<double>(cols) * static_cast<double>(scalar_size);
  if (!(bytes < static_cast<double>(std::numeric_limits<std::size_t>::max()))) {
    return std::numeric_limits<std::size_t>::max();
  }
  return static_cast<std::size_t>(bytes);
}

namespace {

template <class T>
using Dense = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// The dense form of `pattern` with value(k) at stored entry k, refused over the limit.
template <class T, class Value>
Dense<T> densify(const CsrPattern& pattern, std::size_t max_memory, std::string_view what,
                 const Value& value) {
  require_dense(pattern.rows, pattern.cols, sizeof(T), max_memory, what);
  Dense<T> out = Dense<T>::Zero(pattern.rows, pattern.cols);
  const auto off = pattern.offsets();
  const auto idx = pattern.indices();
  for (Index r = 0; r < pattern.rows; ++r) {
    for (Index k = off[static_cast<std::size_t>(r)]; k < off[static_cast<std::size_t>(r) + 1];
         ++k) {
      out(r, idx[static_cast<std::size_t>(k)]) = value(static_cast<std::size_t>(k));
    }
  }
  return out;
}

}  // namespace

Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> to_dense(
    const CsrPattern& pattern, const EngineOptions& options) {
  return densify<double>(pattern, options.max_memory, "the dense 0/1 copy of a sparsity pattern",
                         [](std::size_t) { return 1.0; });
}

template <class T>
Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> to_dense(
    const CsrMatrix<T>& m, const EngineOptions& options) {
  return densify<T>(m.pattern, options.max_memory, "the dense copy of a sparse matrix",
                    [&](std::size_t k) { return m.values[k]; });
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
    const CsrMatrix<double>&, const EngineOptions&);
template Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> to_dense(
    const CsrMatrix<float>&, const EngineOptions&);
template Eigen::SparseMatrix<double, Eigen::RowMajor, Index> to_eigen(const CsrMatrix<double>&);
template Eigen::SparseMatrix<float, Eigen::RowMajor, Index> to_eigen(const CsrMatrix<float>&);

}  // namespace pathlift
