// lifting.hpp: the path-lifting Phi, the skeleton B and the Jacobian dPhi, as numpy arrays
// and scipy.sparse.csr_matrix viewing the C++ buffers (no copy of values or column indices).

#include <memory>
#include <stdexcept>
#include <utility>

#include "common.hpp"
#include "pathlift/counting.hpp"
#include "pathlift/lifting.hpp"
#include "pathlift/limits.hpp"
#include "pathlift/paths.hpp"

namespace pathlift::python {

namespace {

using PathSetPtr = std::shared_ptr<PathSet>;

const PathSet& deref(const PathSetPtr& paths) {
  if (!paths) {
    throw std::invalid_argument("paths is None");
  }
  return *paths;
}

/// Refuses a dense P x d result over the limit before anything is computed.
void precheck_dense(const Network& net, std::size_t scalar_size, std::size_t max_memory) {
  const Count p = count_paths_total(net);
  if (p.exact()) {
    require_dense(static_cast<Index>(p.value()), net.num_params(), scalar_size, max_memory,
                  "the dense P x d result");
  }
}

template <class T>
py::object matrix_result(CsrMatrix<T>&& j, bool dense, std::size_t max_memory) {
  if (dense) {
    Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> full;
    {
      py::gil_scoped_release release;
      full = to_dense(j, EngineOptions{.max_memory = max_memory});
      j = CsrMatrix<T>{};
    }
    return owning_matrix<T>(std::move(full));
  }
  py::array values = owning_array(std::move(j.values));
  return make_csr(values, std::move(j.pattern));
}

template <class T>
py::object phi_of_net(const NetworkArg& arg, const Network& net, const py::object& theta,
                      const EngineOptions& o) {
  const auto t = theta_argument<T>(theta, arg);
  Buffer<T> phi;
  {
    py::gil_scoped_release release;
    phi = path_lifting<T>(net, as_span<T>(t), o);
  }
  return owning_array(std::move(phi));
}

template <class T>
py::object phi_of_paths(const PathSet& paths, const py::object& theta, const EngineOptions& o) {
  const auto t = vector_argument<T>(theta, "theta");
  Buffer<T> phi;
  {
    py::gil_scoped_release release;
    phi = path_lifting<T>(paths, as_span<T>(t), o);
  }
  return owning_array(std::move(phi));
}

template <class T>
using DenseOf = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

template <class T>
py::object jacobian_of_net(const NetworkArg& arg, const Network& net, const py::object& theta,
                           bool dense, const EngineOptions& o) {
  const auto t = theta_argument<T>(theta, arg);
  if (dense) {
    // dPhi filled row by row from the path set (smaller than the sparse dPhi): no sparse
    // intermediate.
    DenseOf<T> full;
    {
      py::gil_scoped_release release;
      check_theta_size(net, static_cast<std::size_t>(t.size()));
      precheck_dense(net, sizeof(T), o.max_memory);
      const PathSet paths = enumerate_paths(net, o);
      full = dense_jacobian<T>(paths, as_span<T>(t), o);
    }
    return owning_matrix<T>(std::move(full));
  }
  CsrMatrix<T> j;
  {
    py::gil_scoped_release release;
    j = jacobian<T>(net, as_span<T>(t), o);
  }
  return matrix_result<T>(std::move(j), false, o.max_memory);
}

template <class T>
py::object jacobian_of_paths(const PathSet& paths, const py::object& theta, bool dense,
                             const EngineOptions& o) {
  const auto t = vector_argument<T>(theta, "theta");
  if (dense) {
    require_dense(paths.size(), paths.num_edges, sizeof(T), o.max_memory,
                  "the dense Jacobian dPhi");
    DenseOf<T> full;
    {
      py::gil_scoped_release release;
      full = dense_jacobian<T>(paths, as_span<T>(t), o);
    }
    return owning_matrix<T>(std::move(full));
  }
  CsrMatrix<T> j;
  {
    py::gil_scoped_release release;
    j = jacobian<T>(paths, as_span<T>(t), o);
  }
  return matrix_result<T>(std::move(j), false, o.max_memory);
}

template <class T>
py::object paper_formula(const PathSet& paths, const py::object& phi, const py::object& theta,
                         bool dense, const EngineOptions& o) {
  const auto f = vector_argument<T>(phi, "phi");
  const auto t = vector_argument<T>(theta, "theta");
  if (dense) {
    require_dense(paths.size(), paths.num_edges, sizeof(T), o.max_memory,
                  "the dense Jacobian dPhi");
  }
  CsrMatrix<T> j;
  {
    py::gil_scoped_release release;
    j = jacobian_paper_formula<T>(paths, as_span<T>(f), as_span<T>(t), o);
  }
  return matrix_result<T>(std::move(j), dense, o.max_memory);
}

template <class T>
py::object paper_formula_of_net(const NetworkArg& arg, const Network& net, const py::object& theta,
                                bool dense, const EngineOptions& o) {
  const auto t = theta_argument<T>(theta, arg);
  CsrMatrix<T> j;
  {
    py::gil_scoped_release release;
    check_theta_size(net, static_cast<std::size_t>(t.size()));
    if (dense) {
      precheck_dense(net, sizeof(T), o.max_memory);
    }
    const PathSet paths = enumerate_paths(net, o);
    const Buffer<T> phi = path_lifting<T>(paths, as_span<T>(t), o);
    j = jacobian_paper_formula<T>(paths, std::span<const T>(phi), as_span<T>(t), o);
  }
  return matrix_result<T>(std::move(j), dense, o.max_memory);
}

py::object skeleton_result(CsrPattern&& b, const py::object& dtype, bool dense,
                           std::size_t max_memory) {
  if (dense) {
    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> full;
    {
      py::gil_scoped_release release;
      full = to_dense(b, EngineOptions{.max_memory = max_memory});
      b = CsrPattern{};
    }
    py::array out = owning_matrix<double>(std::move(full));
    const py::dtype dt = numpy_dtype(dtype);
    if (!dt.equal(py::dtype::of<double>())) {
      return out.attr("astype")(dt);
    }
    return out;
  }
  return make_pattern_csr(std::move(b), dtype);
}

constexpr const char* engine_doc =
    "\n\nthreads: OpenMP threads, 0 = all cores (results are identical for any count). "
    "max_memory: bytes, 0 = half of physical RAM; work over the limit raises TooLarge "
    "(MemoryError) with P, nnz and the bytes needed. The GIL is released while computing.";

void bind_lifting_paths(py::module_& m) {
  // Each function takes a PathSet or a Network. pybind11 tries overloads in the order they are
  // defined, and a failed try costs about 0.6 us: the PathSet form, the one called in loops
  // (theta changing, paths fixed), comes first.
  m.def(
      "path_lifting",
      [](const PathSetPtr& paths, const py::object& theta, const py::object& dtype, int threads,
         const py::object& progress, std::size_t max_memory) {
        const EngineOptions o = engine_options(threads, max_memory, progress, "path_lifting");
        return scalar_of(dtype) == Scalar::f64 ? phi_of_paths<double>(deref(paths), theta, o)
                                               : phi_of_paths<float>(deref(paths), theta, o);
      },
      py::arg("paths"), py::arg("theta"), py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("threads") = 0, py::arg("progress") = py::none(), py::arg("max_memory") = 0,
      "Phi from an enumerated PathSet: one product per path, the values of the Network form "
      "below up to rounding. Complexity: O(nnz).");

  m.def(
      "path_lifting",
      [](const NetworkArg& arg, const py::object& theta, const py::object& dtype, int threads,
         const py::object& progress, std::size_t max_memory) {
        const Network& net = arg.dag(max_memory);
        const EngineOptions o = engine_options(threads, max_memory, progress, "path_lifting");
        return scalar_of(dtype) == Scalar::f64 ? phi_of_net<double>(arg, net, theta, o)
                                               : phi_of_net<float>(arg, net, theta, o);
      },
      py::arg("net"), py::arg("theta") = py::none(), py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("threads") = 0, py::arg("progress") = py::none(), py::arg("max_memory") = 0,
      (std::string(
           R"doc(The path-lifting Phi(theta) (paper, Definition 1): Phi_p = prod of theta_e over the edges
of path p, for every path in canonical order. A numpy array of P values (float64, or float32
with dtype=numpy.float32), owning the C++ buffer (no copy).

theta: d finite numbers (converted to dtype); None uses the network's stored weights.
ValueError for a wrong length, a non-1-D theta or a NaN/inf entry.
Complexity: O(P) after O(m + d) set-up. )doc") +
       engine_doc)
          .c_str());
  m.def(
      "skeleton",
      [](const PathSetPtr& paths, const py::object& dtype, bool dense, int threads,
         const py::object& progress, std::size_t max_memory) {
        const EngineOptions o = engine_options(threads, max_memory, progress, "skeleton");
        const PathSet& ps = deref(paths);
        if (dense) {
          require_dense(ps.size(), ps.num_edges, sizeof(double), max_memory,
                        "the dense skeleton B");
        }
        CsrPattern b;
        {
          py::gil_scoped_release release;
          b = skeleton(ps, o);
        }
        return skeleton_result(std::move(b), dtype, dense, max_memory);
      },
      py::arg("paths"), py::kw_only(), py::arg("dtype") = py::none(), py::arg("dense") = false,
      py::arg("threads") = 0, py::arg("progress") = py::none(), py::arg("max_memory") = 0,
      "B from an enumerated PathSet; its arrays are shared with the path set when the walk "
      "order is sorted (feed-forward networks).");

  m.def(
      "skeleton",
      [](const NetworkArg& arg, const py::object& dtype, bool dense, int threads,
         const py::object& progress, std::size_t max_memory) {
        const Network& net = arg.dag(max_memory);
        const EngineOptions o = engine_options(threads, max_memory, progress, "skeleton");
        CsrPattern b;
        {
          py::gil_scoped_release release;
          if (dense) {
            precheck_dense(net, sizeof(double), max_memory);
          }
          b = skeleton(net, o);
        }
        return skeleton_result(std::move(b), dtype, dense, max_memory);
      },
      py::arg("net"), py::kw_only(), py::arg("dtype") = py::none(), py::arg("dense") = false,
      py::arg("threads") = 0, py::arg("progress") = py::none(), py::arg("max_memory") = 0,
      (std::string(
           R"doc(The skeleton B (paper, Definition 2), P x d: B[p, k] = 1 iff edge k is on path p. A
scipy.sparse.csr_matrix whose data are numpy.ones(nnz, dtype) (default float64) and whose
indices view the C++ column indices (no copy; read-only when shared with a PathSet; indptr is
an int32 copy while nnz < 2^31, made once per path set). dense=True returns a dense numpy array instead (refused over max_memory).
Complexity: O(nnz). )doc") +
       engine_doc)
          .c_str());
}

void bind_lifting_jacobians(py::module_& m) {
  m.def(
      "jacobian",
      [](const PathSetPtr& paths, const py::object& theta, const py::object& dtype, bool dense,
         int threads, const py::object& progress, std::size_t max_memory) {
        const EngineOptions o = engine_options(threads, max_memory, progress, "jacobian");
        return scalar_of(dtype) == Scalar::f64
                   ? jacobian_of_paths<double>(deref(paths), theta, dense, o)
                   : jacobian_of_paths<float>(deref(paths), theta, dense, o);
      },
      py::arg("paths"), py::arg("theta"), py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("dense") = false, py::arg("threads") = 0, py::arg("progress") = py::none(),
      py::arg("max_memory") = 0,
      "dPhi from an enumerated PathSet; its pattern shares the skeleton's arrays. dense=True "
      "fills a dense P x d array directly from the path set (no sparse intermediate).");

  m.def(
      "jacobian",
      [](const NetworkArg& arg, const py::object& theta, const py::object& dtype, bool dense,
         int threads, const py::object& progress, std::size_t max_memory) {
        const Network& net = arg.dag(max_memory);
        const EngineOptions o = engine_options(threads, max_memory, progress, "jacobian");
        return scalar_of(dtype) == Scalar::f64 ? jacobian_of_net<double>(arg, net, theta, dense, o)
                                               : jacobian_of_net<float>(arg, net, theta, dense, o);
      },
      py::arg("net"), py::arg("theta") = py::none(), py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("dense") = false, py::arg("threads") = 0, py::arg("progress") = py::none(),
      py::arg("max_memory") = 0,
      (std::string(R"doc(The Jacobian dPhi/dtheta (paper, Proposition 2), P x d with B's pattern:
dPhi[p, k] = prod of theta_e over the edges e != k of path p (prefix x suffix products: exact
when some theta_k = 0). A scipy.sparse.csr_matrix (float64, or float32 with
dtype=numpy.float32) whose data array owns the C++ values and whose indices view the C++
column indices: no copy, except indptr copied to int32 while nnz < 2^31 (once per path set,
shared by the matrices computed from it). Arrays shared
with a PathSet (and the other matrices built from it) are read-only.
Rows follow the canonical path order, columns the parameters. dense=True returns a dense
P x d numpy array instead, filled directly from the paths (no sparse intermediate; refused
over max_memory before anything is computed).

theta: d finite numbers; None uses the network's stored weights. ValueError for a wrong
length, a non-1-D theta or a NaN/inf entry. Complexity: O(nnz). )doc") +
       engine_doc)
          .c_str());
  m.def(
      "jacobian_paper_formula",
      [](const PathSetPtr& paths, const py::object& phi, const py::object& theta,
         const py::object& dtype, bool dense, int threads, const py::object& progress,
         std::size_t max_memory) {
        const EngineOptions o =
            engine_options(threads, max_memory, progress, "jacobian_paper_formula");
        return scalar_of(dtype) == Scalar::f64
                   ? paper_formula<double>(deref(paths), phi, theta, dense, o)
                   : paper_formula<float>(deref(paths), phi, theta, dense, o);
      },
      py::arg("paths"), py::arg("phi"), py::arg("theta"), py::kw_only(),
      py::arg("dtype") = py::none(), py::arg("dense") = false, py::arg("threads") = 0,
      py::arg("progress") = py::none(), py::arg("max_memory") = 0,
      "The paper's formula diag(Phi) B diag(1/theta) (Proposition 2), for comparison with "
      "jacobian(): inf/NaN where some theta_k is 0. phi has P entries (path_lifting).");
  m.def(
      "jacobian_paper_formula",
      [](const NetworkArg& arg, const py::object& theta, const py::object& dtype, bool dense,
         int threads, const py::object& progress, std::size_t max_memory) {
        const Network& net = arg.dag(max_memory);
        const EngineOptions o =
            engine_options(threads, max_memory, progress, "jacobian_paper_formula");
        return scalar_of(dtype) == Scalar::f64
                   ? paper_formula_of_net<double>(arg, net, theta, dense, o)
                   : paper_formula_of_net<float>(arg, net, theta, dense, o);
      },
      py::arg("net"), py::arg("theta") = py::none(), py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("dense") = false, py::arg("threads") = 0, py::arg("progress") = py::none(),
      py::arg("max_memory") = 0,
      "diag(Phi) B diag(1/theta) for a network: enumerates the paths and computes Phi first.");
}

}  // namespace

void bind_lifting(py::module_& m) {
  bind_lifting_paths(m);
  bind_lifting_jacobians(m);
}

}  // namespace pathlift::python
