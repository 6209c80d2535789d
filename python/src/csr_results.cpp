// The scipy.sparse CSR matrices the bindings return (arrays.hpp): assembled without
// csr_matrix's validation when the installed scipy allows it, index arrays shared with the
// engine's buffers where they fit in 32 bits.

#include "common.hpp"

#include <chrono>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "pathlift/network.hpp"
#include "pathlift/options.hpp"

namespace pathlift::python {

namespace {

/// csr_matrix((data, indices, indptr), shape) validates its arrays: about 12 us a call, most
/// of the time of a small Jacobian. Ours are valid by construction (offsets from 0 to nnz,
/// non-decreasing; column indices sorted, unique within a row and < cols; int32 or int64
/// alike), so the matrix is assembled as that constructor leaves it: csr_matrix.__new__, then
/// its instance attributes. Whether this scipy's constructor leaves exactly those attributes
/// is checked once, on a small matrix built both ways (and fully validated); if not, every
/// call goes through the constructor.
py::object assemble_csr(const py::object& cls, const py::array& data, const py::array& indices,
                        const py::array& indptr, const py::tuple& shape) {
  // Attribute names made into Python strings once, not at every call (leaked, like
  // csr_class(): never destroyed after the interpreter).
  struct Names {
    py::str new_ = "__new__", shape = "_shape", maxprint = "maxprint", data = "data",
            indices = "indices", indptr = "indptr", canonical = "_has_canonical_format",
            sorted = "_has_sorted_indices";
  };
  static const auto* names = new Names();
  static const auto* maxprint = new py::int_(50);
  py::object m = cls.attr(names->new_)(cls);
  m.attr(names->shape) = shape;
  m.attr(names->maxprint) = *maxprint;
  m.attr(names->data) = data;
  m.attr(names->indices) = indices;
  m.attr(names->indptr) = indptr;
  // Column indices are sorted within each row and never repeat (a path visits an edge once):
  // what the has_canonical_format setter records, set directly.
  m.attr(names->canonical) = py::bool_(true);
  m.attr(names->sorted) = py::bool_(true);
  return m;
}

py::object construct_csr(const py::object& cls, const py::array& data, const py::array& indices,
                         const py::array& indptr, const py::tuple& shape) {
  py::object m =
      cls(py::make_tuple(data, indices, indptr), py::arg("shape") = shape, py::arg("copy") = false);
  m.attr("has_canonical_format") = true;
  return m;
}

bool assembly_matches_constructor(const py::object& cls) {
  try {
    py::array_t<double> data(std::vector<py::ssize_t>{3});
    py::array_t<std::int32_t> indices(std::vector<py::ssize_t>{3});
    py::array_t<std::int32_t> indptr(std::vector<py::ssize_t>{3});
    const double dv[] = {1.5, 2.0, -3.0};
    const std::int32_t iv[] = {0, 2, 1};
    const std::int32_t pv[] = {0, 2, 3};
    std::copy(dv, dv + 3, data.mutable_data());
    std::copy(iv, iv + 3, indices.mutable_data());
    std::copy(pv, pv + 3, indptr.mutable_data());
    const py::tuple shape = py::make_tuple(2, 3);
    const py::object slow = construct_csr(cls, data, indices, indptr, shape);
    const py::object fast = assemble_csr(cls, data, indices, indptr, shape);
    fast.attr("check_format")(py::arg("full_check") = true);
    const py::object keys = py::module_::import("builtins").attr("vars");
    const py::object slow_keys = py::module_::import("builtins").attr("sorted")(keys(slow));
    const py::object fast_keys = py::module_::import("builtins").attr("sorted")(keys(fast));
    return slow_keys.equal(fast_keys) && fast.attr("shape").equal(slow.attr("shape")) &&
           py::module_::import("numpy")
               .attr("array_equal")(fast.attr("toarray")(), slow.attr("toarray")())
               .cast<bool>();
  } catch (const py::error_already_set&) {
    return false;
  }
}

}  // namespace

/// scipy.sparse.csr_matrix, imported once (a leaked reference: it must outlive no interpreter,
/// and destroying it at exit, after the interpreter, would crash).
const py::object& csr_class() {
  static const auto* cls = new py::object(py::module_::import("scipy.sparse").attr("csr_matrix"));
  return *cls;
}

bool csr_assembly_fast_path() {
  static const bool fast = assembly_matches_constructor(csr_class());
  return fast;
}

namespace {

py::array to_int32(std::span<const Index> offsets) {
  py::array_t<std::int32_t> small(static_cast<py::ssize_t>(offsets.size()));
  std::int32_t* out = small.mutable_data();
  for (std::size_t i = 0; i < offsets.size(); ++i) {
    out[i] = static_cast<std::int32_t>(offsets[i]);
  }
  return small;
}

/// The int32 indptr of row offsets shared with a path set, converted once: a path set's
/// offsets are the row offsets of its skeleton and of every Jacobian computed from it, and
/// converting them again at each call was a tenth of a small Jacobian's time. The last few
/// conversions are kept (read-only, shared by the matrices) while their offsets live; entries
/// whose offsets are gone are dropped at the next call. Offsets that nothing else holds (a
/// matrix computed from a network) and large ones are converted each time, not kept.
py::array shared_indptr32(const std::shared_ptr<const Buffer<Index>>& offsets) {
  constexpr std::size_t k_entries = 8;
  constexpr std::size_t k_max_rows = std::size_t{1} << 20;
  struct Entry {
    std::weak_ptr<const Buffer<Index>> source;
    py::object array;
  };
  // Leaked: touched under the GIL only, and never destroyed after the interpreter.
  static auto* cache = new std::vector<Entry>();
  std::erase_if(*cache, [](const Entry& e) { return e.source.expired(); });
  for (const Entry& e : *cache) {
    if (e.source.lock() == offsets) {
      return py::reinterpret_borrow<py::array>(e.array);
    }
  }
  py::array converted = to_int32(*offsets);
  if (offsets.use_count() > 1 && offsets->size() <= k_max_rows) {
    set_read_only(converted);
    if (cache->size() == k_entries) {
      cache->erase(cache->begin());
    }
    cache->push_back(Entry{offsets, converted});
  }
  return converted;
}

}  // namespace

py::object make_csr(py::array data, CsrPattern pattern) {
  const py::object& cls = csr_class();
  py::array indptr;
  const bool small_indices = fits_int32_indices(pattern);
  if (small_indices) {
    indptr = shared_indptr32(pattern.row_offsets);
  } else {
    indptr = shared_array<Index>(std::move(pattern.row_offsets), true);
  }
  py::array indices = shared_array<EdgeId>(std::move(pattern.col_indices), true);
  const py::tuple shape = py::make_tuple(pattern.rows, pattern.cols);
  // Large matrices (int64 offsets, int32 columns) go through the constructor, which gives
  // both arrays one index type as scipy's routines expect.
  return small_indices && csr_assembly_fast_path()
             ? assemble_csr(cls, data, indices, indptr, shape)
             : construct_csr(cls, data, indices, indptr, shape);
}

namespace {

template <class T>
py::array ones(Index n) {
  py::array_t<T> a(static_cast<py::ssize_t>(n));
  std::fill_n(a.mutable_data(), n, T(1));
  return a;
}

}  // namespace

py::object make_pattern_csr(CsrPattern pattern, const py::object& dtype) {
  const py::dtype dt = numpy_dtype(dtype);
  const Index nnz = pattern.nnz();
  py::array values;
  if (dt.equal(py::dtype::of<double>())) {
    values = ones<double>(nnz);
  } else if (dt.equal(py::dtype::of<float>())) {
    values = ones<float>(nnz);
  } else {
    values = py::module_::import("numpy").attr("ones")(nnz, py::arg("dtype") = dt);
  }
  return make_csr(values, std::move(pattern));
}

}  // namespace pathlift::python
