#include "arguments.hpp"

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

/// "module.QualName" of x's type: numpy.ndarray, torch.Tensor, scipy.sparse._csr.csr_matrix.
std::string type_name(const py::handle& x) {
  const py::handle type = reinterpret_cast<PyObject*>(Py_TYPE(x.ptr()));
  const auto name = py::str(type.attr("__qualname__")).cast<std::string>();
  const py::object module = py::getattr(type, "__module__", py::none());
  if (module.is_none() || py::str(module).cast<std::string>() == "builtins") {
    return name;
  }
  return fmt::format("{}.{}", py::str(module).cast<std::string>(), name);
}

}  // namespace

std::string repr_of(const py::handle& x) {
  // An array, a tensor or a sparse matrix: its type, shape and dtype, never its entries.
  if (!PyType_Check(x.ptr()) && py::hasattr(x, "shape") && py::hasattr(x, "dtype")) {
    try {
      // numpy's form "(6, 11)" for every shape type (torch.Size's repr is "torch.Size([6, 11])").
      std::vector<std::string> dims;
      for (const py::handle n : x.attr("shape")) {
        dims.push_back(py::str(n).cast<std::string>());
      }
      if (!dims.empty()) {  // a 0-d array or a numpy scalar reads best as its repr
        return fmt::format("a {} of shape ({}{}) and dtype {}", type_name(x), fmt::join(dims, ", "),
                           dims.size() == 1 ? "," : "",
                           py::str(x.attr("dtype")).cast<std::string>());
      }
    } catch (const py::error_already_set&) {  // a shape that is not a sequence: repr below
    }
  }
  constexpr std::size_t k_max = 100;
  auto repr = py::repr(x).cast<std::string>();
  if (repr.size() <= k_max) {
    return repr;
  }
  repr.resize(k_max - 40);
  // Not inside a UTF-8 sequence: drop its continuation bytes (10xxxxxx), then its lead byte.
  while (!repr.empty() && (static_cast<unsigned char>(repr.back()) & 0xC0U) == 0x80U) {
    repr.pop_back();
  }
  if (!repr.empty() && static_cast<unsigned char>(repr.back()) >= 0xC0U) {
    repr.pop_back();
  }
  const Py_ssize_t length = PyObject_Length(x.ptr());
  if (length < 0) {
    PyErr_Clear();
    return fmt::format("{}... (a {})", repr, type_name(x));
  }
  return fmt::format("{}... (a {} of length {})", repr, type_name(x), length);
}

namespace {

/// Whether x is a torch.Tensor (a Parameter or another subclass included), found without
/// importing torch: a class named Tensor of module torch in its type's MRO.
bool is_torch_tensor(const py::handle& x) {
  const py::handle type = reinterpret_cast<PyObject*>(Py_TYPE(x.ptr()));
  for (const py::handle cls : py::tuple(type.attr("__mro__"))) {
    const py::object module = py::getattr(cls, "__module__", py::none());
    if (py::str(cls.attr("__name__")).cast<std::string>() == "Tensor" && !module.is_none() &&
        py::str(module).cast<std::string>() == "torch") {
      return true;
    }
  }
  return false;
}

[[noreturn]] void refuse_complex(const py::handle& x, const char* what) {
  throw std::invalid_argument(
      fmt::format("{} must be real numbers, got {} (complex numbers are refused rather than "
                  "cast, which would drop their imaginary part)",
                  what, repr_of(x)));
}

/// A strided tensor as a numpy array: detached, on the CPU, float16 and bfloat16 through
/// float64 (numpy has no bfloat16). No copy for a CPU tensor of another dtype.
py::object tensor_to_numpy(const py::object& t, const char* what) {
  py::object d = t.attr("detach")();
  if (d.attr("is_complex")().cast<bool>()) {
    refuse_complex(t, what);
  }
  if (py::str(d.attr("device").attr("type")).cast<std::string>() != "cpu") {
    d = d.attr("cpu")();
  }
  const auto dtype = py::str(d.attr("dtype")).cast<std::string>();
  if (dtype == "torch.float16" || dtype == "torch.bfloat16") {
    d = d.attr("double")();
  }
  if (py::hasattr(d, "resolve_neg")) {  // a negative view (torch >= 1.10) has no numpy form
    d = d.attr("resolve_neg")();
  }
  return d.attr("numpy")();
}

bool is_strided(const py::object& t) {
  return py::str(t.attr("layout")).cast<std::string>() == "torch.strided";
}

/// Refuses an array whose entries are not numbers (the casts would read the text "1.5" of a
/// str array, or an object array of str, as a number): complex (refuse_complex), str, bytes,
/// void, datetime, and object arrays holding a str or bytes.
void require_numbers(const py::array& a, const py::handle& x, const char* what) {
  // dtype.kind through Python: GCC 12 sees a null dereference in pybind11's kind().
  const auto kind_text = py::str(a.attr("dtype").attr("kind")).cast<std::string>();
  const char kind = kind_text.empty() ? '?' : kind_text[0];
  if (kind == 'c') {
    refuse_complex(x, what);
  }
  bool text = kind == 'U' || kind == 'S' || kind == 'V' || kind == 'M' || kind == 'm';
  if (kind == 'O') {
    for (const py::handle item : a.attr("flat")) {
      if (py::isinstance<py::str>(item) || py::isinstance<py::bytes>(item)) {
        text = true;
        break;
      }
    }
  }
  if (text) {
    // repr_of shows an array's dtype itself; a list or a tuple gets numpy's here
    throw std::invalid_argument(
        fmt::format("{} must be numbers, got {}{}", what, repr_of(x),
                    py::hasattr(x, "dtype")
                        ? std::string()
                        : fmt::format(" of dtype {}", py::str(a.dtype()).cast<std::string>())));
  }
}

}  // namespace

py::object array_of(const py::object& x, const char* what) {
  if (py::isinstance<py::array>(x)) {
    require_numbers(py::reinterpret_borrow<py::array>(x), x, what);
    return x;
  }
  if (is_torch_tensor(x)) {
    if (!is_strided(x)) {
      throw std::invalid_argument(
          fmt::format("{} must be a dense tensor, got {} of layout {} (call .to_dense())", what,
                      repr_of(x), py::str(x.attr("layout")).cast<std::string>()));
    }
    return tensor_to_numpy(x, what);
  }
  static const auto* asarray = new py::object(py::module_::import("numpy").attr("asarray"));
  py::object a;
  try {
    a = (*asarray)(x);
  } catch (const py::error_already_set&) {
    return x;  // not numbers: the caller's conversion says what was expected
  }
  require_numbers(py::reinterpret_borrow<py::array>(a), x, what);
  return a;
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

namespace {

/// `x` (array_of: a tensor converted, complex refused) as an array of type Array (converted if
/// needed); ValueError `message(repr_of(x))` when it cannot be converted.
template <class Array, class Message>
Array converted_array(const py::object& x, const char* what, const Message& message) {
  Array a;
  try {
    a = Array::ensure(array_of(x, what));
  } catch (const py::error_already_set&) {
    a = Array();
  }
  if (!a) {
    PyErr_Clear();
    throw std::invalid_argument(message(repr_of(x)));
  }
  return a;
}

}  // namespace

py::array_t<double, py::array::f_style | py::array::forcecast> data_argument(const py::object& x) {
  using Array = py::array_t<double, py::array::f_style | py::array::forcecast>;
  if (x.is_none()) {
    throw std::invalid_argument("X is required (n samples x r inputs)");
  }
  const auto a = converted_array<Array>(x, "X", [](const std::string& repr) {
    return fmt::format("X must be a 2-D array of numbers (n samples x r inputs), got {}", repr);
  });
  if (a.ndim() != 2) {
    throw std::invalid_argument(
        fmt::format("X must be 2-D (n samples x r inputs), got {}", repr_of(x)));
  }
  return a;
}

namespace {

/// A matrix argument as something scipy.sparse.csr_matrix takes without losing anything: a
/// scipy sparse matrix as it is, a sparse torch tensor (COO or CSR) as a scipy matrix of its
/// entries, anything else through array_of. ValueError for complex entries.
py::object matrix_of(const py::object& m, const char* what) {
  const py::module_ sparse = py::module_::import("scipy.sparse");
  if (is_torch_tensor(m) && !is_strided(m)) {
    const py::object t = m.attr("detach")();
    if (t.attr("is_complex")().cast<bool>()) {
      refuse_complex(m, what);
    }
    const auto layout = py::str(t.attr("layout")).cast<std::string>();
    const py::tuple shape(m.attr("shape"));
    if (layout == "torch.sparse_csr") {
      return sparse.attr("csr_matrix")(
          py::make_tuple(tensor_to_numpy(t.attr("values")(), what),
                         tensor_to_numpy(t.attr("col_indices")(), what),
                         tensor_to_numpy(t.attr("crow_indices")(), what)),
          py::arg("shape") = shape);
    }
    if (layout == "torch.sparse_coo") {
      const py::object c = t.attr("coalesce")();
      const py::object ij = tensor_to_numpy(c.attr("indices")(), what);
      return sparse.attr("coo_matrix")(
          py::make_tuple(tensor_to_numpy(c.attr("values")(), what),
                         py::make_tuple(ij[py::int_(0)], ij[py::int_(1)])),
          py::arg("shape") = shape);
    }
    throw std::invalid_argument(fmt::format(
        "{} must be a scipy.sparse matrix, an array or a dense, COO or CSR tensor, got {} of "
        "layout {}",
        what, repr_of(m), layout));
  }
  if (sparse.attr("issparse")(m).cast<bool>()) {
    if (py::str(m.attr("dtype").attr("kind")).cast<std::string>() == "c") {
      refuse_complex(m, what);
    }
    return m;
  }
  return array_of(m, what);
}

std::pair<Index, Index> shape_of(const py::object& m) {
  const auto shape = py::tuple(m.attr("shape"));
  return {shape[0].cast<Index>(), shape[1].cast<Index>()};
}

/// scipy.sparse.csr_matrix(m, dtype=float64) in canonical format (sorted, no duplicates),
/// copied first when it has to be changed (the caller's matrix is never modified).
py::object canonical_csr(const py::object& m, const char* what, bool drop_zeros) {
  py::module_ sparse = py::module_::import("scipy.sparse");
  py::module_ np = py::module_::import("numpy");
  py::object csr;
  try {
    csr = sparse.attr("csr_matrix")(matrix_of(m, what), py::arg("dtype") = np.attr("float64"));
  } catch (const py::error_already_set& e) {
    throw std::invalid_argument(
        fmt::format("{} must be a scipy.sparse matrix or a 2-D array ({})", what, e.what()));
  }
  if (!csr.attr("has_canonical_format").cast<bool>() || drop_zeros) {
    csr = csr.attr("copy")();
    csr.attr("sum_duplicates")();
    if (drop_zeros) {
      csr.attr("eliminate_zeros")();
    }
  }
  const auto shape = shape_of(csr);
  if (shape.second > static_cast<Index>(std::numeric_limits<EdgeId>::max())) {
    throw std::invalid_argument(
        fmt::format("{} has {} columns, more than 2^31 - 1", what, shape.second));
  }
  return csr;
}

/// indptr and indices of a canonical csr_matrix as the engine's buffers (one copy).
CsrPattern pattern_of(const py::object& csr) {
  using I64 = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>;
  const auto shape = shape_of(csr);
  const auto indptr = I64::ensure(csr.attr("indptr"));
  const auto indices = I64::ensure(csr.attr("indices"));
  auto offsets = std::make_shared<Buffer<Index>>(static_cast<std::size_t>(indptr.size()));
  std::copy(indptr.data(), indptr.data() + indptr.size(), offsets->begin());
  auto cols = std::make_shared<Buffer<EdgeId>>(static_cast<std::size_t>(indices.size()));
  std::transform(indices.data(), indices.data() + indices.size(), cols->begin(),
                 [](std::int64_t c) { return static_cast<EdgeId>(c); });
  CsrPattern p;
  p.rows = shape.first;
  p.cols = shape.second;
  p.row_offsets = std::move(offsets);
  p.col_indices = std::move(cols);
  return p;
}

}  // namespace

CsrMatrix<double> csr_argument(const py::object& m, const char* what) {
  const py::object csr = canonical_csr(m, what, false);
  using F64 = py::array_t<double, py::array::c_style | py::array::forcecast>;
  const auto data = F64::ensure(csr.attr("data"));
  CsrMatrix<double> out;
  out.pattern = pattern_of(csr);
  out.values.resize(static_cast<std::size_t>(data.size()));
  for (py::ssize_t i = 0; i < data.size(); ++i) {
    if (!std::isfinite(data.data()[i])) {
      throw std::invalid_argument(
          fmt::format("{} has a non-finite entry: {}", what, data.data()[i]));
    }
    out.values[static_cast<std::size_t>(i)] = data.data()[i];
  }
  return out;
}

CsrPattern pattern_argument(const py::object& m, const char* what) {
  const py::object csr = canonical_csr(m, what, true);
  using F64 = py::array_t<double, py::array::c_style | py::array::forcecast>;
  const auto data = F64::ensure(csr.attr("data"));
  for (py::ssize_t i = 0; i < data.size(); ++i) {
    if (data.data()[i] != 1.0) {
      throw std::invalid_argument(fmt::format(
          "{} must be a 0/1 matrix (the skeleton B): it has an entry {}", what, data.data()[i]));
    }
  }
  return pattern_of(csr);
}

template <class T>
py::array_t<T, py::array::c_style | py::array::forcecast> vector_argument(const py::object& x,
                                                                          const char* what) {
  using Array = py::array_t<T, py::array::c_style | py::array::forcecast>;
  if (x.is_none()) {
    throw std::invalid_argument(fmt::format("{} is required", what));
  }
  const auto a = converted_array<Array>(x, what, [&](const std::string& repr) {
    return fmt::format("{} must be a vector of numbers (got {})", what, repr);
  });
  if (a.ndim() != 1) {
    throw std::invalid_argument(fmt::format("{} must be a 1-D vector (got {})", what, repr_of(x)));
  }
  return a;
}

std::string fspath(const py::object& path) {
  return py::str(py::module_::import("os").attr("fspath")(path)).cast<std::string>();
}

void prime_out_of_range(const std::string& text) {
  // The library's words for a modulus that is no prime (modular arithmetic's check).
  throw py::value_error(fmt::format("prime: the modulus {} is not a prime below 2^63", text));
}

void seed_out_of_range(const std::string& text) {
  throw py::value_error(fmt::format("seed: {} is not a seed, an integer from 0 to 2^64 - 1", text));
}

bool load_unsigned(py::handle src, int bits, std::uint64_t& value,
                   void (*out_of_range)(const std::string&)) {
  if (!src || PyFloat_Check(src.ptr()) || PyIndex_Check(src.ptr()) == 0) {
    return false;  // not an int: pybind11's TypeError, as for any argument of the wrong type
  }
  const auto i = py::reinterpret_steal<py::object>(PyNumber_Index(src.ptr()));
  if (!i) {
    throw py::error_already_set();
  }
  const auto length = i.attr("bit_length")().cast<std::size_t>();
  const bool negative = PyObject_RichCompareBool(i.ptr(), py::int_(0).ptr(), Py_LT) == 1;
  if (negative || length > static_cast<std::size_t>(bits)) {
    // The int as Python writes it, unless it is too long to print (its size then).
    out_of_range(length <= 128 ? py::str(i).cast<std::string>()
                               : std::string(negative ? "-" : "") + "(an int of " +
                                     std::to_string(length) + " bits)");
  }
  value = PyLong_AsUnsignedLongLong(i.ptr());
  if (PyErr_Occurred() != nullptr) {
    throw py::error_already_set();
  }
  return true;
}

template py::array_t<double, py::array::c_style | py::array::forcecast> vector_argument<double>(
    const py::object&, const char*);
template py::array_t<float, py::array::c_style | py::array::forcecast> vector_argument<float>(
    const py::object&, const char*);

}  // namespace pathlift::python
