#pragma once
// Helpers shared by the bind_<module>.cpp files: numpy views of C++ buffers (zero-copy, the
// buffer kept alive by the array's base), scipy CSR matrices, theta and dtype arguments,
// EngineOptions from keyword arguments; the LayerNetwork Python holds and NetworkArg, the one
// conversion of network arguments (a Network or a LayerNetwork, as a Model).

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // every binding file converts std containers: one rule for all

#include <Eigen/Core>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "pathlift/layers.hpp"
#include "pathlift/model.hpp"
#include "pathlift/network.hpp"
#include "pathlift/paths.hpp"
#include "pathlift/sparse.hpp"
#include "pathlift/types.hpp"

namespace pathlift::python {

namespace py = pybind11;

/// The floating-point types the engine is instantiated for.
enum class Scalar { f64, f32 };

/// float64 (None, "float64", numpy.float64, numpy.dtype("d")) or float32; ValueError otherwise.
Scalar scalar_of(const py::object& dtype);

/// EngineOptions from the `threads`, `max_memory` and `progress` keyword arguments (threads >=
/// 0). progress: None shows the call's progress on stderr when it is a terminal, labelled
/// `label` (pathlift._progress, as the CLI does), False shows nothing, a callable is called as
/// progress(phase, fraction) with the GIL held, at most about 10 times a second besides each
/// phase's start and end. An exception in the callback cannot stop the C++ work: it is reported
/// as unraisable and the callback is dropped, except KeyboardInterrupt, raised again when the
/// call returns.
EngineOptions engine_options(int threads, std::size_t max_memory,
                             const py::object& progress = py::bool_(false), const char* label = "");

/// os.fspath(path) as a string: a str or a pathlib.Path.
std::string fspath(const py::object& path);

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

/// scipy.sparse.csr_matrix((data, indices, indptr), shape) without copying `data` or the column
/// indices (views of the pattern's arrays: read-only when shared with a path set or another
/// matrix, see shared_array). scipy wants indptr and indices of
/// one integer type: while nnz < 2^31 indptr is copied once to int32 (P + 1 entries); beyond,
/// indptr is a view and scipy converts the indices to int64 (its one copy).
py::object make_csr(py::array data, CsrPattern pattern);

/// Whether make_csr assembles the csr_matrix directly (checked once against this scipy's
/// constructor; see common.cpp) instead of calling the validating constructor.
bool csr_assembly_fast_path();

/// The pattern with values `numpy.ones(nnz, dtype)`: the skeleton B as a csr_matrix.
py::object make_pattern_csr(CsrPattern pattern, const py::object& dtype);

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

/// pathlift.LayerNetwork: a layer-graph Model, and the memory limit its unrolling runs under
/// when a function gives none (the max_memory of from_torch and from_onnx).
struct LayerNetworkObject {
  Model model;
  std::size_t max_memory = 0;
};

/// Whether `x` is a torch.nn.Module (without importing torch: a class torch.nn.Module in its
/// type's MRO).
bool is_torch_module(const py::handle& x);

/// The network argument of a function: a pathlift.Network or a pathlift.LayerNetwork (or a
/// Python subclass of either, such as pathlift.torch's network of a module) as a Model, with
/// the Python object it came from. The one conversion of network arguments; the stubs show it
/// as `Network | LayerNetwork`.
class NetworkArg {
 public:
  NetworkArg() = default;
  NetworkArg(Model model, std::size_t unroll_limit, py::object source)
      : m_model(std::move(model)), m_unroll_limit(unroll_limit), m_source(std::move(source)) {}

  [[nodiscard]] const Model& model() const { return *m_model; }

  /// The DAG: the Network itself, or the layer graph unrolled (Model::unrolled, with the GIL
  /// released) within max_memory (0: the LayerNetwork's own limit, else half of physical RAM),
  /// made once and kept by the LayerNetwork. TooLarge (MemoryError) names the node and edge
  /// counts. Functions that need edges call it; the path-free ones never do.
  [[nodiscard]] const Network& dag(std::size_t max_memory = 0) const;
  /// The memory limit dag() unrolls within: max_memory, or the LayerNetwork's own limit.
  [[nodiscard]] std::size_t unroll_limit(std::size_t max_memory = 0) const {
    return max_memory != 0 ? max_memory : m_unroll_limit;
  }

  /// theta when a function's theta is None: the object's `weights` attribute (a Network's or a
  /// LayerNetwork's stored theta; the module's current parameters for a network of a PyTorch
  /// module). ValueError when there are none.
  [[nodiscard]] py::object stored_theta() const;
  /// The object's `weights` attribute: theta, or None.
  [[nodiscard]] py::object model_weights() const { return m_source.attr("weights"); }

 private:
  std::optional<Model> m_model;
  std::size_t m_unroll_limit = 0;
  py::object m_source;
};

/// theta for `net`: the argument, or net.stored_theta() when it is None, as a contiguous
/// array of T checked by check_theta (d finite numbers; ValueError naming the entry). `what`
/// names the argument in messages ("theta2" for a second parameter vector).
template <class T>
py::array_t<T, py::array::c_style | py::array::forcecast> theta_argument(
    const py::object& theta, const NetworkArg& net, const char* what = "theta");

/// f(theta) with theta = theta_argument<double>(theta, net) as a span, called with the GIL
/// released: the shape of every function of (net, theta).
template <class F>
auto with_theta(const NetworkArg& net, const py::object& theta, F&& f) {
  const auto t = theta_argument<double>(theta, net);
  py::gil_scoped_release release;
  return f(as_span<double>(t));
}

/// An index, or None for a negative one (the library's "none" value).
inline py::object index_or_none(Index x) {
  return x >= 0 ? py::object(py::int_(x)) : py::object(py::none());
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

}  // namespace pathlift::python

namespace pybind11::detail {

/// NetworkArg from a pathlift.Network or a pathlift.LayerNetwork (see NetworkArg). Nothing is
/// unrolled here.
template <>
struct type_caster<pathlift::python::NetworkArg> {
  PYBIND11_TYPE_CASTER(pathlift::python::NetworkArg, const_name("Network | LayerNetwork"));

  bool load(handle src, bool /*convert*/) {
    using pathlift::python::LayerNetworkObject;
    type_caster_base<pathlift::Network> net;
    if (net.load(src, false)) {
      std::shared_ptr<const pathlift::Network> shared;
      try {
        copyable_holder_caster<pathlift::Network, std::shared_ptr<pathlift::Network>> held;
        if (held.load(src, false)) {
          shared = static_cast<std::shared_ptr<pathlift::Network>>(held);
        }
      } catch (const cast_error&) {
        // A Network viewed inside another object (a proof step's network): not owned here, and
        // kept alive for the call by `source` below.
      }
      if (shared == nullptr) {
        shared = std::shared_ptr<const pathlift::Network>(
            static_cast<const pathlift::Network*>(net.value), [](const pathlift::Network*) {});
      }
      value = {pathlift::Model(std::move(shared)), 0, reinterpret_borrow<object>(src)};
      return true;
    }
    make_caster<LayerNetworkObject> layers;
    if (layers.load(src, false)) {
      const auto& obj = cast_op<const LayerNetworkObject&>(layers);
      value = {obj.model, obj.max_memory, reinterpret_borrow<object>(src)};
      return true;
    }
    if (pathlift::python::is_torch_module(src)) {
      throw type_error(
          "expected a pathlift network (Network or LayerNetwork), got a torch.nn.Module: "
          "pathlift.from_torch(model) makes one that follows the module's parameters; inside a "
          "training loop, pathlift.torch.path_norm(model) and pathlift.torch.kernel_diagonal"
          "(model) take the module itself");
    }
    return false;
  }

  static handle cast(const pathlift::python::NetworkArg&, return_value_policy, handle) {
    throw std::logic_error("a NetworkArg is an argument, never a result");
  }
};

}  // namespace pybind11::detail
