#pragma once
// The conversion of the bindings' arguments: array_of (numpy, torch tensors, lists), X's
// array, vectors, scipy sparse matrices, dtypes, paths; ValueError naming the argument for
// anything else. theta, which needs its network, is common.hpp's theta_argument.

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <Eigen/Core>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "pathlift/sparse.hpp"
#include "pathlift/types.hpp"

namespace pathlift::python {

namespace py = pybind11;

/// The floating-point types the engine is instantiated for.
enum class Scalar { f64, f32 };

/// float64 (None, "float64", numpy.float64, numpy.dtype("d")) or float32; ValueError otherwise.
Scalar scalar_of(const py::object& dtype);

/// os.fspath(path) as a string: a str or a pathlib.Path.
std::string fspath(const py::object& path);

/// Data X (array_of: numpy, a torch.Tensor, ...) as a Fortran-ordered float64 array, the layout
/// Eigen::MatrixXd maps without a copy (converted once otherwise). ValueError unless 2-D (n x r).
/// The width and finiteness are checked by the engine (FormatError / ValueError naming the
/// numbers).
py::array_t<double, py::array::f_style | py::array::forcecast> data_argument(const py::object& x);

/// The Eigen view of a checked data argument.
inline Eigen::Map<const Eigen::MatrixXd> as_matrix(
    const py::array_t<double, py::array::f_style | py::array::forcecast>& a) {
  return {a.data(), static_cast<Eigen::Index>(a.shape(0)), static_cast<Eigen::Index>(a.shape(1))};
}

/// A scipy sparse matrix (or a sparse torch tensor, or anything scipy.sparse.csr_matrix accepts
/// after array_of, e.g. a dense array or tensor) as a CsrMatrix<double> with sorted, summed
/// column indices: one copy. `what` names it in messages. ValueError for a matrix with complex
/// or non-finite values or more than 2^31 - 1 columns.
CsrMatrix<double> csr_argument(const py::object& m, const char* what);

/// A 0/1 sparse matrix (the skeleton B as scipy or numpy) as a CsrPattern: one copy of the
/// indices. Explicit zeros are dropped; ValueError for any stored value other than 0 or 1.
CsrPattern pattern_argument(const py::object& m, const char* what);

/// A vector argument (array_of: numpy, a torch.Tensor, a list, ...) as a contiguous 1-D array
/// of T (converted if needed); ValueError unless it is 1-D real numbers. The length and finiteness
/// of a theta are the library's check (check_theta), so the message is the one C++ gives. `what`
/// names the argument in messages.
template <class T>
py::array_t<T, py::array::c_style | py::array::forcecast> vector_argument(const py::object& x,
                                                                          const char* what);

/// The span of a checked 1-D array.
template <class T>
std::span<const T> as_span(const py::array_t<T, py::array::c_style | py::array::forcecast>& a) {
  return {a.data(), static_cast<std::size_t>(a.size())};
}

/// x for messages, never a whole array: an array, a tensor or a sparse matrix as its type, shape
/// and dtype ("a torch.Tensor of shape (66,) and dtype torch.float32"), anything else as its
/// repr, cut to 100 characters (with its type and length when cut).
std::string repr_of(const py::handle& x);

/// The one conversion of array arguments (theta, X, vectors, dense matrices), before the cast to
/// the function's dtype: a numpy array as it is; a torch.Tensor (without importing torch: a
/// class torch.Tensor in its type's MRO) detached, moved to the CPU, float16 and bfloat16 made
/// float64, and viewed as numpy (no copy for a CPU tensor); anything else through
/// numpy.asarray, or as it is when numpy cannot read it (the caller's conversion then names
/// what it expected). ValueError naming `what` for complex numbers, whose imaginary part a
/// cast would drop, for entries that are not numbers (str, bytes, an object array holding
/// text: numpy would read "1.5" as 1.5), and for a sparse tensor.
py::object array_of(const py::object& x, const char* what);

/// numpy.dtype(dtype).
py::dtype numpy_dtype(const py::object& dtype);

/// The ValueError of a `prime=` int outside [0, 2^63) (`text`: the int as Python writes it).
[[noreturn]] void prime_out_of_range(const std::string& text);
/// The ValueError of a `seed=` int outside [0, 2^64).
[[noreturn]] void seed_out_of_range(const std::string& text);

/// A Python int (or anything with __index__, such as numpy.uint64, never a float) as an
/// unsigned integer below 2^bits (63 or 64): false when `src` is not an int (pybind11's
/// TypeError then), `out_of_range(the int as Python writes it)` when outside.
bool load_unsigned(pybind11::handle src, int bits, std::uint64_t& value,
                   void (*out_of_range)(const std::string&));

/// An unsigned int argument below 2^Bits whose other ints are a ValueError naming them
/// (OutOfRange), where pybind11's caster of std::uint64_t would refuse them with a TypeError
/// listing the function's signatures.
template <int Bits, void (*OutOfRange)(const std::string&)>
class UnsignedArg {
 public:
  constexpr UnsignedArg(std::uint64_t value = 0) : m_value(value) {}  // NOLINT: implicit, an int
  constexpr operator std::uint64_t() const { return m_value; }        // NOLINT: implicit, an int

 private:
  std::uint64_t m_value;
};

/// A `prime=` argument: an int in [0, 2^63), which the library then checks is a prime.
using Prime = UnsignedArg<63, prime_out_of_range>;
/// A `seed=` argument: an int in [0, 2^64) (the CLI's --seed range).
using Seed = UnsignedArg<64, seed_out_of_range>;

}  // namespace pathlift::python

namespace pybind11::detail {

/// An UnsignedArg from a Python int: see UnsignedArg.
template <int Bits, void (*OutOfRange)(const std::string&)>
struct type_caster<pathlift::python::UnsignedArg<Bits, OutOfRange>> {
  using Arg = pathlift::python::UnsignedArg<Bits, OutOfRange>;
  PYBIND11_TYPE_CASTER(Arg, const_name("int"));

  bool load(handle src, bool /*convert*/) {
    std::uint64_t v = 0;
    if (!pathlift::python::load_unsigned(src, Bits, v, OutOfRange)) {
      return false;
    }
    value = Arg(v);
    return true;
  }

  static handle cast(Arg src, return_value_policy /*policy*/, handle /*parent*/) {
    return PyLong_FromUnsignedLongLong(src);
  }
};

}  // namespace pybind11::detail
