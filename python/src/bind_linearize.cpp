// linearize.hpp: the map L of Proposition 1 (f_theta(X) = L Phi(theta)) as a scipy CSR matrix
// viewing the C++ buffers, and its verification against the forward pass.

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

#include "common.hpp"
#include "forward.hpp"
#include "pathlift/lifting.hpp"
#include "pathlift/linearize.hpp"
#include "results.hpp"

namespace pathlift::python {

namespace {

using LinearizationPtr = std::shared_ptr<Linearization>;

/// L of a Linearization as a csr_matrix whose data view the C++ values (kept alive, read-only:
/// the Linearization still uses them) and whose indices view the shared column indices.
py::object map_csr(const LinearizationPtr& lin) {
  const Buffer<double>& v = lin->map.values;
  auto* holder = new LinearizationPtr(lin);
  py::capsule owner(holder, [](void* p) { delete static_cast<LinearizationPtr*>(p); });
  py::array_t<double> data({static_cast<py::ssize_t>(v.size())}, {sizeof(double)}, v.data(), owner);
  set_read_only(data);
  return make_csr(data, lin->map.pattern);
}

LinearizationCheckOptions check_options(double tolerance_f, double tolerance_grad,
                                        Index grad_samples, Index grad_params, Seed seed,
                                        int threads, std::size_t max_memory) {
  if (grad_samples < 0 || grad_params < 0) {
    throw std::invalid_argument(fmt::format(
        "grad_samples and grad_params must be >= 0 (got {} and {})", grad_samples, grad_params));
  }
  return {.tolerance_f = tolerance_f,
          .tolerance_grad = tolerance_grad,
          .grad_samples = grad_samples,
          .grad_params = grad_params,
          .seed = seed,
          .engine = engine_options(threads, max_memory)};
}

constexpr const char* check_doc =
    "\n\ntolerance_f, tolerance_grad: the largest relative errors accepted for f = L Phi and "
    "for df/dtheta = L dPhi. grad_samples x all outputs x grad_params entries of the gradient "
    "are compared with central finite differences of forward() (chosen by seed). threads: 0 = "
    "all cores; max_memory: bytes, 0 = half of RAM (TooLarge over it). The GIL is released.";

void bind_linearization_types(py::module_& m) {
  py::class_<Linearization, LinearizationPtr>(m, "Linearization", R"doc(
A forward pass, its activation pattern and the map L of Proposition 1 (linearize).
L is a scipy.sparse.csr_matrix of shape (n q) x P: row i q + j (sample i, output j), column p
(path p in canonical order) holds c_p^i x_i[start(p)] when path p ends at output j, where
c_p^i is the product of the slopes of the nodes p enters. f_theta(X) = (L @ Phi).reshape(n, q)
and df/dtheta = L @ dPhi.
)doc")
      .def_property_readonly(
          "L", &map_csr,
          "The map L, (n q) x P csr_matrix; data and indices view the C++ buffers (read-only: "
          "shared with this object), indptr is one int32 copy while nnz < 2^31. Each access "
          "returns a new csr_matrix on the same buffers.")
      .def_property_readonly(
          "forward", [](const LinearizationPtr& l) -> const ForwardResult& { return l->forward; },
          "The ForwardResult L was built from (no copy; keeps this object alive).")
      .def_property_readonly(
          "pattern",
          [](const LinearizationPtr& l) -> const ActivationPattern& { return l->pattern; },
          "The ActivationPattern (no copy; keeps this object alive).")
      .def_property_readonly(
          "shape",
          [](const LinearizationPtr& l) { return py::make_tuple(l->map.rows(), l->map.cols()); },
          "(n q, P).")
      .def_property_readonly(
          "nnz", [](const LinearizationPtr& l) { return l->map.nnz(); }, "Stored entries of L.")
      .def("__repr__", [](const LinearizationPtr& l) {
        return fmt::format("<pathlift.Linearization: L is {} x {}, nnz {}, margin {:.3g}>",
                           l->map.rows(), l->map.cols(), l->map.nnz(), l->pattern.margin);
      });

  py::class_<LinearizationCheck> check(m, "LinearizationCheck", R"doc(
What verify_linearization / check_linearization found: sizes, the margin, the largest relative
errors of f = L Phi (all entries) and of df/dtheta = L dPhi (sampled entries, against finite
differences), and a status: 'ok', 'inconclusive' (some gradient entries could not be
checked), 'on_kink' (margin 0: L not unique) or 'mismatch' (an error above its tolerance).
to_dict() gives the CLI's `linearize --json` object.
)doc");
  def_fields(check, field("n", &LinearizationCheck::n, "Samples."),
             field("q", &LinearizationCheck::q, "Outputs."),
             field("P", &LinearizationCheck::P, "Paths (columns of L)."),
             field("nnz_L", &LinearizationCheck::nnz_L, "Stored entries of L."),
             field("margin", &LinearizationCheck::margin,
                   "min |pre-activation| over samples and ReLU nodes (inf if none)."),
             field("max_err_f", &LinearizationCheck::max_err_f,
                   "Largest relative error between f_theta(X) and L Phi(theta)."),
             field("max_err_grad", &LinearizationCheck::max_err_grad,
                   "Largest relative error between L dPhi and finite differences (NaN when nothing "
                   "was checked)."),
             field("grad_entries", &LinearizationCheck::grad_entries, "Gradient entries compared."),
             field("grad_skipped", &LinearizationCheck::grad_skipped,
                   "Gradient entries skipped (no pattern-preserving finite-difference step)."),
             field("message", &LinearizationCheck::message,
                   "One line explaining a status other than 'ok' (empty when ok)."));
  def_to_dict(check,
              "The CLI's `linearize --json` object: keys n, q, P, nnz_L, margin, max_err_f, "
              "max_err_grad, status (None for a non-finite number).");
  check
      .def_property_readonly(
          "status", [](const LinearizationCheck& c) { return to_string(c.status); },
          "'ok', 'inconclusive', 'on_kink' or 'mismatch'.")
      .def("__repr__", [](const LinearizationCheck& c) {
        return fmt::format(
            "<pathlift.LinearizationCheck: {}, max_err_f {:.3g}, max_err_grad {:.3g}>",
            to_string(c.status), c.max_err_f, c.max_err_grad);
      });
}

void bind_linearize_functions(py::module_& m) {
  m.def(
      "linear_map",
      [](const NetworkArg& arg, const py::object& X, const ActivationPattern& pattern, int threads,
         const py::object& progress, std::size_t max_memory) {
        const Network& net = arg.dag(max_memory);
        const EngineOptions o = engine_options(threads, max_memory, progress, "linear_map");
        const auto x = data_argument(X);
        CsrMatrix<double> l;
        {
          py::gil_scoped_release release;
          l = linear_map(net, as_matrix(x), pattern, o);
        }
        py::array values = owning_array(std::move(l.values));
        return make_csr(values, std::move(l.pattern));
      },
      py::arg("net"), py::arg("X"), py::arg("pattern"), py::kw_only(), py::arg("threads") = 0,
      py::arg("progress") = py::none(), py::arg("max_memory") = 0,
      R"doc(The map L of Proposition 1 from a batch X and its ActivationPattern (from
activation_pattern(net, forward(net, theta, X))): a scipy.sparse.csr_matrix (n q) x P whose
data own the C++ values and whose indices view the C++ column indices (no copy; indptr one
int32 copy while nnz < 2^31). Row i q + j, column p: c_p^i x_i[start(p)] when p ends at output
j; zeros are not stored. Built without any dense (n q) x P array, in parallel over samples
(identical for any thread count). FormatError / ValueError for data that does not fit the
network or a pattern of the wrong shape; TooLarge (MemoryError) when P >= 2^31 or L exceeds
max_memory. The GIL is released.)doc");

  def_batch_function(
      m, "linearize",
      [](const auto&... args) { return std::make_shared<Linearization>(linearize(args...)); },
      R"doc(forward(), activation_pattern() and linear_map() in one call: a Linearization with
.forward, .pattern and .L ((n q) x P scipy CSR, zero-copy), so that
f_theta(X) = (lin.L @ path_lifting(net, theta)).reshape(n, q) and
df/dtheta = lin.L @ jacobian(net, theta) (Proposition 1, at a theta where no pre-activation
is 0: check lin.pattern.margin > 0).
X: n x r data (see forward). theta: d finite numbers; None uses the stored weights. Errors as
forward and linear_map. The GIL is released.

Example::

    net = pathlift.feed_forward(3, [8, 8], 2)
    theta = pathlift.normal_weights(net.d, 1)
    X = pathlift.random_data(net, 100, 2)
    lin = pathlift.linearize(net, theta, X)
    f = (lin.L @ pathlift.path_lifting(net, theta)).reshape(100, 2)  # == forward(...).outputs)doc");

  m.def(
      "verify_linearization",
      [](const NetworkArg& arg, const py::object& theta, const py::object& X,
         const LinearizationPtr& lin, const py::object& phi, const py::object& J,
         double tolerance_f, double tolerance_grad, Index grad_samples, Index grad_params,
         Seed seed, int threads, std::size_t max_memory) {
        const Network& net = arg.dag(max_memory);
        if (!lin) {
          throw std::invalid_argument("lin is None");
        }
        const LinearizationCheckOptions o = check_options(tolerance_f, tolerance_grad, grad_samples,
                                                          grad_params, seed, threads, max_memory);
        const auto t = theta_argument<double>(theta, arg);
        const auto x = data_argument(X);
        std::optional<py::array_t<double, py::array::c_style | py::array::forcecast>> phi_arg;
        if (!phi.is_none()) {
          phi_arg = vector_argument<double>(phi, "phi");
        }
        std::optional<CsrMatrix<double>> j_arg;
        if (!J.is_none()) {
          j_arg = csr_argument(J, "J");
        }
        py::gil_scoped_release release;
        Buffer<double> phi_own;
        std::span<const double> phi_span;
        if (phi_arg) {
          phi_span = as_span<double>(*phi_arg);
        } else {
          phi_own = path_lifting<double>(net, as_span<double>(t), o.engine);
          phi_span = phi_own;
        }
        if (!j_arg) {
          j_arg = jacobian<double>(net, as_span<double>(t), o.engine);
        }
        return verify_linearization(net, as_span<double>(t), as_matrix(x), *lin, phi_span, *j_arg,
                                    o);
      },
      py::arg("net"), py::arg("theta"), py::arg("X"), py::arg("lin"), py::kw_only(),
      py::arg("phi") = py::none(), py::arg("J") = py::none(),
      py::arg("tolerance_f") = LinearizationCheckOptions{}.tolerance_f,
      py::arg("tolerance_grad") = LinearizationCheckOptions{}.tolerance_grad,
      py::arg("grad_samples") = LinearizationCheckOptions{}.grad_samples,
      py::arg("grad_params") = LinearizationCheckOptions{}.grad_params, py::arg("seed") = 0,
      py::arg("threads") = 0, py::arg("max_memory") = 0,
      (std::string(R"doc(Verifies Proposition 1 for lin = linearize(net, theta, X): f_theta(X) =
L Phi(theta) on every entry, and df/dtheta = L dPhi against central finite differences of the
forward pass on a sample of entries. phi (P entries) and J (dPhi, P x d, scipy or dense) are
computed when omitted. Returns a LinearizationCheck (n, q, P, nnz_L, margin, max_err_f,
max_err_grad, status, ...). ValueError when the sizes disagree.)doc") +
       check_doc)
          .c_str());

  m.def(
      "check_linearization",
      [](const NetworkArg& arg, const py::object& theta, const py::object& X, double tolerance_f,
         double tolerance_grad, Index grad_samples, Index grad_params, Seed seed, int threads,
         std::size_t max_memory) {
        const Network& net = arg.dag(max_memory);
        const LinearizationCheckOptions o = check_options(tolerance_f, tolerance_grad, grad_samples,
                                                          grad_params, seed, threads, max_memory);
        const auto t = theta_argument<double>(theta, arg);
        const auto x = data_argument(X);
        py::gil_scoped_release release;
        return check_linearization(net, as_span<double>(t), as_matrix(x), o);
      },
      py::arg("net"), py::arg("theta"), py::arg("X"), py::kw_only(),
      py::arg("tolerance_f") = LinearizationCheckOptions{}.tolerance_f,
      py::arg("tolerance_grad") = LinearizationCheckOptions{}.tolerance_grad,
      py::arg("grad_samples") = LinearizationCheckOptions{}.grad_samples,
      py::arg("grad_params") = LinearizationCheckOptions{}.grad_params, py::arg("seed") = 0,
      py::arg("threads") = 0, py::arg("max_memory") = 0,
      (std::string(R"doc(linearize(), path_lifting(), jacobian() and verify_linearization() in
one call (what `pathlift linearize` and `report` run): a LinearizationCheck; .to_dict() is
the CLI's JSON. X: n x r data; theta: d finite numbers or None for the stored weights.)doc") +
       check_doc)
          .c_str());
}

}  // namespace

void bind_linearize(py::module_& m) {
  bind_linearization_types(m);
  bind_linearize_functions(m);
}

}  // namespace pathlift::python
