#include "common.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>

#include "pathlift/error.hpp"
#include "pathlift/limits.hpp"

namespace pathlift::python {

std::string repr_of(const py::handle& x) {
  return py::repr(x).cast<std::string>();
}

py::dtype numpy_dtype(const py::object& dtype) {
  return py::dtype::from_args(dtype);
}

Scalar scalar_of(const py::object& dtype) {
  if (dtype.is_none()) {
    return Scalar::f64;
  }
  py::dtype dt;
  try {
    dt = numpy_dtype(dtype);
  } catch (const py::error_already_set&) {
    throw std::invalid_argument(
        fmt::format("dtype must be float64 or float32 (got {})", repr_of(dtype)));
  }
  if (dt.is(py::dtype::of<double>()) || dt.equal(py::dtype::of<double>())) {
    return Scalar::f64;
  }
  if (dt.equal(py::dtype::of<float>())) {
    return Scalar::f32;
  }
  throw std::invalid_argument(
      fmt::format("dtype must be float64 or float32 (got {})", repr_of(dtype)));
}

EngineOptions engine_options(int threads, std::size_t max_memory) {
  if (threads < 0) {
    throw std::invalid_argument(
        fmt::format("threads must be >= 0 (0 = all cores), got {}", threads));
  }
  EngineOptions o;
  o.threads = threads;
  o.max_memory = max_memory;
  return o;
}

void set_read_only(const py::array& a) {
  a.attr("setflags")(py::arg("write") = false);
}

py::object make_csr(py::array data, CsrPattern pattern) {
  py::module_ sparse = py::module_::import("scipy.sparse");
  constexpr auto int32_max = static_cast<Index>(std::numeric_limits<std::int32_t>::max());
  py::array indptr;
  if (pattern.nnz() <= int32_max && pattern.rows <= int32_max && pattern.cols <= int32_max) {
    const auto offsets = pattern.offsets();
    py::array_t<std::int32_t> small(static_cast<py::ssize_t>(offsets.size()));
    std::int32_t* out = small.mutable_data();
    for (std::size_t i = 0; i < offsets.size(); ++i) {
      out[i] = static_cast<std::int32_t>(offsets[i]);
    }
    indptr = small;
  } else {
    indptr = shared_array<Index>(std::move(pattern.row_offsets), true);
  }
  py::array indices = shared_array<EdgeId>(std::move(pattern.col_indices), true);
  py::object m = sparse.attr("csr_matrix")(
      py::make_tuple(data, indices, indptr),
      py::arg("shape") = py::make_tuple(pattern.rows, pattern.cols), py::arg("copy") = false);
  // Column indices are sorted within each row and never repeat (a path visits an edge once).
  m.attr("has_canonical_format") = true;
  return m;
}

py::object make_pattern_csr(CsrPattern pattern, const py::object& dtype) {
  py::module_ np = py::module_::import("numpy");
  py::array ones = np.attr("ones")(pattern.nnz(), py::arg("dtype") = numpy_dtype(dtype));
  return make_csr(ones, std::move(pattern));
}

void require_dense(Index rows, Index cols, std::size_t scalar_size, std::size_t max_memory) {
  const std::size_t bytes = dense_bytes(rows, cols, scalar_size);
  const std::size_t limit = effective_max_memory(max_memory);
  if (bytes > limit) {
    throw TooLarge(fmt::format(
        "a dense {} x {} matrix needs {} ({} bytes), over the memory limit of {} (max_memory)",
        rows, cols, format_bytes(static_cast<double>(bytes)), bytes,
        format_bytes(static_cast<double>(limit))));
  }
}

template <class T>
py::array_t<T, py::array::c_style | py::array::forcecast> vector_argument(const py::object& x,
                                                                          const char* what,
                                                                          bool finite) {
  using Array = py::array_t<T, py::array::c_style | py::array::forcecast>;
  if (x.is_none()) {
    throw std::invalid_argument(fmt::format("{} is required", what));
  }
  Array a;
  try {
    a = Array::ensure(x);
  } catch (const py::error_already_set&) {
    a = Array();
  }
  if (!a) {
    PyErr_Clear();
    throw std::invalid_argument(
        fmt::format("{} must be a vector of numbers (got {})", what, repr_of(x)));
  }
  if (a.ndim() != 1) {
    throw std::invalid_argument(
        fmt::format("{} must be a 1-D vector (got an array of {} dims)", what, a.ndim()));
  }
  if (finite) {
    const T* v = a.data();
    for (py::ssize_t i = 0; i < a.size(); ++i) {
      if (!std::isfinite(v[i])) {
        throw std::invalid_argument(
            fmt::format("{}[{}] is not finite: {}", what, i, static_cast<double>(v[i])));
      }
    }
  }
  return a;
}

template <class T>
py::array_t<T, py::array::c_style | py::array::forcecast> theta_argument(const py::object& theta,
                                                                         const Network& net) {
  if (theta.is_none()) {
    if (!net.has_weights()) {
      throw std::invalid_argument(
          "theta is required: the network has no stored weights (pass theta, or build the "
          "network with weights)");
    }
    const auto w = net.weights();
    py::array_t<double> stored(static_cast<py::ssize_t>(w.size()), w.data());
    return vector_argument<T>(stored, "theta");
  }
  return vector_argument<T>(theta, "theta");
}

template py::array_t<double, py::array::c_style | py::array::forcecast> vector_argument<double>(
    const py::object&, const char*, bool);
template py::array_t<float, py::array::c_style | py::array::forcecast> vector_argument<float>(
    const py::object&, const char*, bool);
template py::array_t<double, py::array::c_style | py::array::forcecast> theta_argument<double>(
    const py::object&, const Network&);
template py::array_t<float, py::array::c_style | py::array::forcecast> theta_argument<float>(
    const py::object&, const Network&);

}  // namespace pathlift::python
