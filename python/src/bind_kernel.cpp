// kernel.hpp: the path kernel K = dPhi^T dPhi and the Gram matrix B^T B by dynamic programming
// (no path enumerated): the diagonal, matrix-free products, the full matrix, the trace, the top
// eigenvalues, and B^T B exactly (uint64) or modulo a prime. The path-free ones also take a
// LayerNetwork and run on its layer graph without unrolling (layer_dp.hpp).

#include <fmt/format.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common.hpp"
#include "norms.hpp"
#include "pathlift/kernel.hpp"
#include "pathlift/layer_dp.hpp"
#include "pathlift/limits.hpp"
#include "pathlift/magnitude.hpp"
#include "pathlift/path_free.hpp"
#include "results.hpp"

namespace pathlift::python {

namespace {

/// v as a C-contiguous float64 array of d rows (1-D, or 2-D with one column per vector).
py::array_t<double, py::array::c_style | py::array::forcecast> vectors_argument(const py::object& v,
                                                                                Index d) {
  using Array = py::array_t<double, py::array::c_style | py::array::forcecast>;
  Array a;
  try {
    a = Array::ensure(array_of(v, "v"));
  } catch (const py::error_already_set&) {
    a = Array();
  }
  if (!a) {
    PyErr_Clear();
    throw std::invalid_argument(
        fmt::format("v must be a vector (or d x k matrix) of numbers, got {}", repr_of(v)));
  }
  if (a.ndim() != 1 && a.ndim() != 2) {
    throw std::invalid_argument(
        fmt::format("v must be 1-D (d) or 2-D (d x k), got an array of {} dims", a.ndim()));
  }
  if (a.shape(0) != d) {
    throw std::invalid_argument(
        fmt::format("v has {} rows but the network has {} edges", a.shape(0), d));
  }
  const double* x = a.data();
  for (py::ssize_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(x[i])) {
      throw std::invalid_argument(fmt::format("v has a non-finite entry: {}", x[i]));
    }
  }
  return a;
}

/// K V through `apply` (column-major d x k blocks, run with the GIL released) for the checked
/// vectors `vs`: a 1-D array of d entries back for d numbers, a d x k array for a d x k block.
py::object block_product(const std::function<void(const double*, double*, Index)>& apply,
                         const py::array_t<double, py::array::c_style | py::array::forcecast>& vs) {
  const auto d = static_cast<Index>(vs.shape(0));
  const Index k = vs.ndim() == 1 ? 1 : static_cast<Index>(vs.shape(1));
  // Left uninitialised: the product writes every entry (a d-long vector costs its page faults
  // once, not a clearing pass more).
  Buffer<double> out(static_cast<std::size_t>(d * k));
  if (k == 1) {  // a vector (or a d x 1 block) is its own column: no copy
    {
      py::gil_scoped_release release;
      apply(vs.data(), out.data(), 1);
    }
    if (vs.ndim() == 1) {
      return py::object(owning_array(std::move(out)));
    }
    return py::object(owning_row_major(std::move(out), d, 1));
  }
  Buffer<double> block(static_cast<std::size_t>(d * k));
  for (Index i = 0; i < d; ++i) {
    for (Index c = 0; c < k; ++c) {
      block[static_cast<std::size_t>(c * d + i)] = vs.data()[i * k + c];
    }
  }
  {
    py::gil_scoped_release release;
    apply(block.data(), out.data(), k);
  }
  for (Index i = 0; i < d; ++i) {
    for (Index c = 0; c < k; ++c) {
      block[static_cast<std::size_t>(i * k + c)] = out[static_cast<std::size_t>(c * d + i)];
    }
  }
  return py::object(owning_row_major(std::move(block), d, k));
}

/// K on a network with its own copy of theta: ModelKernelOperator kept across products. Made
/// with the GIL held (it holds Python references); the operator is built by build(), which
/// may run without the GIL. Products are serialised (the operators reuse their buffers).
class KernelProducts {
 public:
  KernelProducts(NetworkArg net, std::vector<double> theta)
      : m_net(std::move(net)), m_theta(std::move(theta)) {}
  void build(const EngineOptions& options) { m_op.emplace(m_net.model(), m_theta, options); }
  [[nodiscard]] Index size() const { return m_net.model().num_params(); }
  void apply(const double* v, double* out, Index k) const {
    const std::lock_guard<std::mutex> lock(m_mutex);
    m_op->apply(v, out, k);
  }

 private:
  NetworkArg m_net;
  std::vector<double> m_theta;
  std::optional<ModelKernelOperator> m_op;
  mutable std::mutex m_mutex;
};

void bind_kernel_sums(py::module_& m) {
  m.def(
      "kernel_diagonal",
      [](const NetworkArg& net, const py::object& theta, int threads, const py::object& progress,
         std::size_t max_memory) {
        const EngineOptions o = engine_options(threads, max_memory, progress, "kernel_diagonal");
        return owning_array(with_theta(net, theta, [&](std::span<const double> t) {
          return kernel_diagonal(net.model(), t, o);
        }));
      },
      py::arg("net"), py::arg("theta") = py::none(), py::kw_only(), py::arg("threads") = 0,
      py::arg("progress") = py::none(), py::arg("max_memory") = 0,
      R"doc(The diagonal of the path kernel K = dPhi^T dPhi: K[k, k] = sum over the paths p
through edge k of (prod_{e in p, e != k} theta_e)^2 = A(src k) B(dst k) (forward x backward sums
of theta^2, docs/conventions.md#path-free), exact at theta_k = 0, without enumerating a path. A
float64 numpy array of d entries (owning the C++ buffer); RangeError (an ArithmeticError) when
an entry overflows float64 or underflows (kernel_trace, computed with a scale, works at any
magnitude): never inf or a lost 0.
On a LayerNetwork, layer by layer without unrolling (a forward, a backward and a
weight-gradient pass per layer; a module applied twice on one path is unrolled for it, within
max_memory). theta: d finite numbers; None uses the stored weights. ValueError for a bad theta.
threads: 0 = all cores. Complexity: O(m + d). The GIL is released.)doc");

  m.def(
      "kernel_trace",
      [](const NetworkArg& net, const py::object& theta, bool scaled, int threads,
         const py::object& progress) {
        const EngineOptions o = engine_options(threads, 0, progress, "kernel_trace");
        return scaled_result(
            with_theta(net, theta,
                       [&](std::span<const double> t) { return kernel_trace(net.model(), t, o); }),
            scaled, "trace(K)");
      },
      py::arg("net"), py::arg("theta") = py::none(), py::kw_only(), py::arg("scaled") = false,
      py::arg("threads") = 0, py::arg("progress") = py::none(),
      "trace(K) = sum_k K[k, k]: a float; RangeError (an ArithmeticError) when it overflows or "
      "underflows float64, where scaled=True gives a ScaledReal, exact far beyond it (.log10, "
      ".mantissa, .exponent). A LayerNetwork is not unrolled. Complexity: O(m + d).");

  m.def(
      "kernel_matvec",
      [](const NetworkArg& net, const py::object& theta, const py::object& v, int threads,
         const py::object& progress) {
        const EngineOptions o = engine_options(threads, 0, progress, "kernel_matvec");
        const auto t = theta_argument<double>(theta, net);
        const auto vs = vectors_argument(v, net.model().num_params());
        std::optional<ModelKernelOperator> op;
        {
          py::gil_scoped_release release;
          // One operator: what does not depend on v is computed once for all the columns.
          op.emplace(net.model(), as_span<double>(t), o);
        }
        return block_product([&](const double* x, double* y, Index k) { op->apply(x, y, k); }, vs);
      },
      py::arg("net"), py::arg("theta"), py::arg("v"), py::kw_only(), py::arg("threads") = 0,
      py::arg("progress") = py::none(),
      R"doc(K v = dPhi^T (dPhi v) without forming dPhi: one forward and one backward pass over
the DAG in the (value, derivative) semiring (docs/conventions.md#path-free), O(m + d) per vector
whatever the number of paths; on a LayerNetwork, layer by layer without unrolling. v: d finite
numbers (a float64 array of d entries is returned), or a d x k block (a d x k array is
returned): on a LayerNetwork the sums that do not depend on v are computed once for the whole
block, so each further column costs about two thirds of a single product.
theta: d finite numbers, or None for the stored weights. For repeated products use
kernel_operator (which keeps those sums). ValueError for a wrong size or a non-finite entry;
RangeError (an ArithmeticError) when an entry of K v overflows float64 or is subnormal, or
when K v is all 0 while diag(K) has a 0 that may be an underflow.
threads: 0 = all cores. The GIL is released.)doc");
}

void bind_kernel_matrices(py::module_& m) {
  py::class_<KernelProducts>(m, "_KernelProducts",
                             "K on a network, kept across products: the engine of "
                             "pathlift.kernel_operator (use that).")
      .def(py::init([](const NetworkArg& net, const py::object& theta, int threads) {
             const auto t = theta_argument<double>(theta, net);
             std::vector<double> values(t.data(), t.data() + t.size());
             const EngineOptions o = engine_options(threads, 0, py::none(), "kernel_operator");
             auto products = std::make_unique<KernelProducts>(net, std::move(values));
             {
               py::gil_scoped_release release;
               products->build(o);
             }
             return products;
           }),
           py::arg("net"), py::arg("theta") = py::none(), py::kw_only(), py::arg("threads") = 0)
      .def_property_readonly(
          "d", [](const KernelProducts& p) { return p.size(); }, "The size of K (d).")
      .def(
          "matmat",
          [](const KernelProducts& p, const py::object& v) {
            return block_product([&p](const double* x, double* y, Index k) { p.apply(x, y, k); },
                                 vectors_argument(v, p.size()));
          },
          py::arg("v"),
          "K v for d numbers, or K V for a d x k block (one sweep of the block product); "
          "ValueError for a wrong size or a non-finite entry, RangeError when an entry "
          "overflows float64. The GIL is released.");

  m.def(
      "kernel",
      [](const NetworkArg& net, const py::object& theta, int threads, const py::object& progress,
         std::size_t max_memory) {
        const EngineOptions o = engine_options(threads, max_memory, progress, "kernel");
        (void)net.dag(max_memory);  // unrolled within the LayerNetwork's limit, and kept
        return owning_matrix<double>(with_theta(
            net, theta, [&](std::span<const double> t) { return kernel(net.model(), t, o); }));
      },
      py::arg("net"), py::arg("theta") = py::none(), py::kw_only(), py::arg("threads") = 0,
      py::arg("progress") = py::none(), py::arg("max_memory") = 0,
      R"doc(The full path kernel K = dPhi^T dPhi (d x d, symmetric, float64, dense numpy array
owning the C++ matrix) without enumerating paths: K[i, j] = theta_i theta_j A(src i)
M(dst i, src j) B(dst j) for edges on a common path, 0 otherwise; exact at zero weights.
TooLarge (MemoryError) when d x d doubles exceed max_memory (0: half of RAM); ValueError for
a bad theta; RangeError when an entry is beyond float64 (kernel_trace(scaled=True) gives the
magnitude). threads: 0 = all cores (identical results for any count). The GIL is released.
Complexity: O(m (m + d) + d^2).)doc");

  m.def(
      "skeleton_gram",
      [](const NetworkArg& net, int threads, const py::object& progress, std::size_t max_memory) {
        const EngineOptions o = engine_options(threads, max_memory, progress, "skeleton_gram");
        const Network& dag = net.dag(max_memory);
        CountMatrix g;
        {
          py::gil_scoped_release release;
          g = skeleton_gram_exact(dag, o);
        }
        return owning_matrix<std::uint64_t>(std::move(g));
      },
      py::arg("net"), py::kw_only(), py::arg("threads") = 0, py::arg("progress") = py::none(),
      py::arg("max_memory") = 0,
      R"doc(B^T B (d x d) exactly, as a uint64 numpy array: entry (i, j) = the number of paths
through both edges i and j (diagonal: paths through i), i.e. K at theta = 1, by dynamic
programming (no path enumerated). rank(B^T B) = rank(B). Raises CountOverflow
(OverflowError) naming the first entry beyond 64 bits (skeleton_gram_mod works modulo a
prime instead), TooLarge (MemoryError) when d x d entries exceed max_memory.
Complexity: O(m (m + d) + d^2). The GIL is released.)doc");

  m.def(
      "skeleton_gram_mod",
      [](const NetworkArg& net, Prime prime, int threads, const py::object& progress,
         std::size_t max_memory) {
        const EngineOptions o = engine_options(threads, max_memory, progress, "skeleton_gram_mod");
        const Network& dag = net.dag(max_memory);
        ModMatrix g;
        {
          py::gil_scoped_release release;
          g = skeleton_gram_mod(dag, prime, o);
        }
        return owning_row_major(std::move(g.data), g.rows, g.cols);
      },
      py::arg("net"), py::arg("prime") = default_prime, py::kw_only(), py::arg("threads") = 0,
      py::arg("progress") = py::none(), py::arg("max_memory") = 0,
      R"doc(B^T B modulo prime (residues in [0, prime), a d x d uint64 numpy array), by dynamic
programming: never overflows, so the skeleton of a network with 10^30 paths is fine. Its rank
modulo a prime is a certified lower bound of rank(B) (certify_rank_from_gram).
prime: a prime below 2^63, default 2^61 - 1.
ValueError otherwise; TooLarge (MemoryError) when d x d residues exceed max_memory.
Complexity: O(m (m + d) + d^2). The GIL is released.)doc");
}

void bind_kernel_eigenpairs(py::module_& m) {
  py::class_<KernelEigenvalues> eigenvalues(m, "KernelEigenvalues",
                                            "The largest eigenvalues of the path kernel "
                                            "(kernel_top_eigenvalues) and how they were obtained.");
  def_to_dict(eigenvalues,
              "The result as a dict, the library's JSON form that `pathlift kernel --top-eig N "
              "--json` prints: keys eigenvalues, status, method ('dense' or 'lanczos'), "
              "products, iterations (None for a non-finite eigenvalue).");
  eigenvalues
      .def_property_readonly(
          "values",
          [](const KernelEigenvalues& e) {
            std::vector<double> v(e.values.data(), e.values.data() + e.values.size());
            return owning_array(std::move(v));
          },
          "float64 array: the converged eigenvalues, largest first.")
      .def_property_readonly(
          "status", [](const KernelEigenvalues& e) { return std::string(to_string(e.status)); },
          "'converged', 'not_converged' (values holds the converged ones) or "
          "'numerical_issue'.")
      .def_property_readonly(
          "vectors",
          [](const py::object& self) -> py::object {
            const auto& e = self.cast<const KernelEigenvalues&>();
            if (e.vectors.size() == 0) {
              return py::none();
            }
            return col_major_view(e.vectors, self);
          },
          "d x k float64 array (a read-only view of the result's memory): the unit "
          "eigenvectors, column j for values[j] (entry of largest magnitude positive); None "
          "unless asked for (vectors=True).")
      .def_property_readonly(
          "residuals",
          [](const KernelEigenvalues& e) -> py::object {
            if (e.residuals.size() == 0) {
              return py::none();
            }
            std::vector<double> r(e.residuals.data(), e.residuals.data() + e.residuals.size());
            return owning_array(std::move(r));
          },
          "float64 array: ||K v - lambda v|| / lambda of each pair, from a fresh product "
          "(always with Lanczos and LOBPCG, with the dense method when vectors=True); None "
          "otherwise.")
      .def_property_readonly(
          "method", [](const KernelEigenvalues& e) { return std::string(to_string(e.method)); },
          "'dense', 'lanczos' or 'lobpcg': the method that produced the values.");
  def_fields(eigenvalues,
             field("iterations", &KernelEigenvalues::iterations,
                   "Lanczos restarts or LOBPCG iterations (0 for the dense method)."),
             field("products", &KernelEigenvalues::products,
                   "Kernel products K v computed (0 for the dense method)."),
             field("dense", &KernelEigenvalues::dense, "True when the dense method was used."));
  eigenvalues.def("__repr__", [](const KernelEigenvalues& e) {
    return fmt::format("<pathlift.KernelEigenvalues: {} values, {}, {}>", e.values.size(),
                       to_string(e.status), to_string(e.method));
  });

  m.def(
      "kernel_top_eigenvalues",
      [](const NetworkArg& net, const py::object& theta, Index count, const std::string& method,
         Index max_iterations, double tolerance, Index subspace, bool vectors, int threads,
         const py::object& progress, std::size_t max_memory) {
        const EigenOptions o{
            .method = parse_eigen_method(method),
            .max_iterations = max_iterations,
            .tolerance = tolerance,
            .subspace = subspace,
            .vectors = vectors,
            .engine = engine_options(threads, max_memory, progress, "kernel_top_eigenvalues")};
        return with_theta(net, theta, [&](std::span<const double> t) {
          return kernel_top_eigenvalues(net.model(), t, count, o);
        });
      },
      py::arg("net"), py::arg("theta") = py::none(), py::arg("count") = 1, py::kw_only(),
      py::arg("method") = "auto", py::arg("max_iterations") = EigenOptions{}.max_iterations,
      py::arg("tolerance") = EigenOptions{}.tolerance, py::arg("subspace") = 0,
      py::arg("vectors") = false, py::arg("threads") = 0, py::arg("progress") = py::none(),
      py::arg("max_memory") = 0,
      R"doc(The count largest eigenvalues of the path kernel K (symmetric positive semi-definite),
and with vectors=True its eigenvectors (result.vectors, d x count) and their residuals
||K v - lambda v|| / lambda (result.residuals), K never formed: thick-restart block Lanczos or
LOBPCG on block products K V (the sums that do not depend on V computed once), or Eigen's
dense solver on kernel() for small d. method: 'auto' (dense for d <= 256 or count > d / 2,
block Lanczos otherwise, and dense again when the iteration is inconclusive and d x d fits),
'lanczos' (needs count < d), 'lobpcg' or 'dense'. Block Lanczos takes a block of one vector
(the fewest products) followed by a multiplicity check (Lanczos on K deflated by the
eigenvectors found, from a new random start: an eigenvalue it finds above the count-th is a
missed copy and joins), or of count vectors when the network has twin units (equal incoming
weights from the same sources: a permutation symmetry, how eigenvalues repeat in practice):
repeated eigenvalues come out as often as they repeat among the top count, with every method.
On a LayerNetwork, the
matrix-free methods run on the layer graph without unrolling; 'dense' unrolls it (TooLarge,
with the sizes, over max_memory). max_iterations: the iteration cap of every method (Lanczos
restarts, LOBPCG iterations; the CLI's --max-iterations). tolerance: both stop when every
||K v - lambda v|| <= tolerance * lambda (plus a roundoff floor of 64 eps sqrt(d)
lambda_max), confirmed by fresh products. subspace: Lanczos's basis (0: max(2 count + 1,
count + 20), narrowed to max_memory), or LOBPCG's block size (0: count + max(2, count // 2)).
Returns a
KernelEigenvalues (values, vectors, residuals, status, method, iterations, products): a status,
not an exception, when the iteration does not converge. ValueError unless 1 <= count <= d, or
for a bad theta; TooLarge (MemoryError) when the method needs more than max_memory. progress:
a callable(phase, fraction); both iterations report their residual's way down to the
tolerance. The GIL is released.)doc");
}

}  // namespace

void bind_kernel(py::module_& m) {
  bind_kernel_sums(m);
  bind_kernel_matrices(m);
  bind_kernel_eigenpairs(m);
}

}  // namespace pathlift::python
