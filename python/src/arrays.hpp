#pragma once
// The bindings' results as numpy arrays and scipy matrices: zero-copy views of C++ buffers (the
// buffer kept alive by the array's base), owning arrays, CSR matrices (csr_results.cpp).

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <Eigen/Core>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "pathlift/paths.hpp"
#include "pathlift/sparse.hpp"
#include "pathlift/types.hpp"

namespace pathlift::python {

namespace py = pybind11;

/// Marks an array read-only (for views of buffers shared between results).
void set_read_only(const py::array& a);

/// A 1-D array owning `items` (moved to the heap; freed with the array). No copy.
template <class T, class Alloc>
py::array_t<T> owning_array(std::vector<T, Alloc>&& items) {
  auto* heap = new std::vector<T, Alloc>(std::move(items));
  py::capsule owner(heap, [](void* p) { delete static_cast<std::vector<T, Alloc>*>(p); });
  return py::array_t<T>({static_cast<py::ssize_t>(heap->size())}, {sizeof(T)}, heap->data(), owner);
}

/// A 1-D view of a shared buffer; the array keeps it alive. Read-only when other results share
/// the buffer (a path set and the matrices built from it), so that writing through one cannot
/// change another; writable when `buffer` is the only owner and `writable_if_unique` is set.
template <class T>
py::array_t<T> shared_array(std::shared_ptr<const Buffer<T>> buffer,
                            bool writable_if_unique = false) {
  const T* data = buffer->data();
  const auto n = static_cast<py::ssize_t>(buffer->size());
  const bool writable = writable_if_unique && buffer.use_count() == 1;
  auto* holder = new std::shared_ptr<const Buffer<T>>(std::move(buffer));
  py::capsule owner(holder,
                    [](void* p) { delete static_cast<std::shared_ptr<const Buffer<T>>*>(p); });
  // The buffers are created non-const (make_shared<Buffer<T>>), so writing is well defined.
  py::array_t<T> a({n}, {sizeof(T)}, const_cast<T*>(data), owner);
  if (!writable) {
    set_read_only(a);
  }
  return a;
}

/// A read-only 1-D view of memory owned by the Python object `base`.
template <class T>
py::array_t<T> view_array(std::span<const T> items, const py::handle& base) {
  py::array_t<T> a({static_cast<py::ssize_t>(items.size())}, {sizeof(T)}, items.data(), base);
  set_read_only(a);
  return a;
}

/// The getter of a read-only view of an array member of a bound object (PathSet::start,
/// OutputGrouping::order, ...): the view keeps the object alive. No copy.
template <class Self, class Member>
auto member_view(Member Self::*member) {
  return [member](const py::object& self) {
    using T = typename Member::value_type;
    return view_array<T>(std::span<const T>(self.cast<const Self&>().*member), self);
  };
}

/// A row-major dense matrix as a 2-D array owning it (moved to the heap). No copy.
template <class T>
py::array_t<T> owning_matrix(
    Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>&& m) {
  using M = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  auto* heap = new M(std::move(m));
  py::capsule owner(heap, [](void* p) { delete static_cast<M*>(p); });
  const auto rows = static_cast<py::ssize_t>(heap->rows());
  const auto cols = static_cast<py::ssize_t>(heap->cols());
  return py::array_t<T>(
      {rows, cols},
      {static_cast<py::ssize_t>(sizeof(T)) * cols, static_cast<py::ssize_t>(sizeof(T))},
      heap->data(), owner);
}

/// A column-major dense matrix (Eigen's default) as a 2-D Fortran-ordered array owning it.
/// No copy.
py::array_t<double> owning_col_major(Eigen::MatrixXd&& m);

/// A read-only 2-D view of a column-major matrix owned by the Python object `base`.
py::array_t<double> col_major_view(const Eigen::MatrixXd& m, const py::handle& base);

/// A rows x cols row-major array owning `items` (rows * cols of them). No copy.
template <class T, class Alloc>
py::array_t<T> owning_row_major(std::vector<T, Alloc>&& items, Index rows, Index cols) {
  auto* heap = new std::vector<T, Alloc>(std::move(items));
  py::capsule owner(heap, [](void* p) { delete static_cast<std::vector<T, Alloc>*>(p); });
  const auto r = static_cast<py::ssize_t>(rows);
  const auto c = static_cast<py::ssize_t>(cols);
  return py::array_t<T>(
      {r, c}, {static_cast<py::ssize_t>(sizeof(T)) * c, static_cast<py::ssize_t>(sizeof(T))},
      heap->data(), owner);
}

/// A 1-D int64 array copying `items` (small index lists of results: sets of edges, orders).
template <class T>
py::array_t<std::int64_t> index_array(const std::vector<T>& items) {
  py::array_t<std::int64_t> a(static_cast<py::ssize_t>(items.size()));
  std::int64_t* out = a.mutable_data();
  for (std::size_t i = 0; i < items.size(); ++i) {
    out[i] = static_cast<std::int64_t>(items[i]);
  }
  return a;
}

/// scipy.sparse.csr_matrix((data, indices, indptr), shape) without copying `data` or the column
/// indices (views of the pattern's arrays: read-only when shared with a path set or another
/// matrix, see shared_array). scipy wants indptr and indices of
/// one integer type: while nnz < 2^31 indptr is copied once to int32 (P + 1 entries); beyond,
/// indptr is a view and scipy converts the indices to int64 (its one copy).
py::object make_csr(py::array data, CsrPattern pattern);

/// Whether make_csr assembles the csr_matrix directly (checked once against this scipy's
/// constructor; see csr_results.cpp) instead of calling the validating constructor.
bool csr_assembly_fast_path();

/// The pattern with values `numpy.ones(nnz, dtype)`: the skeleton B as a csr_matrix.
py::object make_pattern_csr(CsrPattern pattern, const py::object& dtype);

/// An index, or None for a negative one (the library's "none" value).
inline py::object index_or_none(Index x) {
  return x >= 0 ? py::object(py::int_(x)) : py::object(py::none());
}

}  // namespace pathlift::python
