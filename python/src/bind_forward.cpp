// forward.hpp: the forward pass on a batch (node pre-activations, values, outputs as numpy
// views of the Eigen matrices), activation patterns and reproducible random data.

#include <fmt/format.h>

#include <cstdint>
#include <utility>

#include "common.hpp"
#include "forward.hpp"
#include "pathlift/forward.hpp"
#include "results.hpp"

namespace pathlift::python {

namespace {

template <class F>
auto matrix_property(F get) {
  return [get](const py::object& self) { return col_major_view(get(self), self); };
}

}  // namespace

void bind_forward(py::module_& m) {
  py::class_<ForwardResult>(m, "ForwardResult", R"doc(
The forward pass of a network on a batch X (forward). The matrices are read-only float64
views (Fortran order, no copy) kept alive by this object: pre_activations and values are
n x m (one column per node, node order), outputs is n x q (output nodes in node order).
)doc")
      .def_property_readonly("pre_activations",
                             matrix_property([](const py::object& s) -> const Eigen::MatrixXd& {
                               return s.cast<const ForwardResult&>().pre_activations;
                             }),
                             "n x m: column v = sum_{e=(u->v)} theta_e v(u) on every sample (for "
                             "an input node, its value: x_i[c], or 1 for a bias).")
      .def_property_readonly("values",
                             matrix_property([](const py::object& s) -> const Eigen::MatrixXd& {
                               return s.cast<const ForwardResult&>().values;
                             }),
                             "n x m: column v = act_v(pre-activation), the node's value.")
      .def_property_readonly("outputs",
                             matrix_property([](const py::object& s) -> const Eigen::MatrixXd& {
                               return s.cast<const ForwardResult&>().outputs;
                             }),
                             "n x q: f_theta(x_i), the values of the output nodes.")
      .def_property_readonly("num_samples", &ForwardResult::num_samples, "n.")
      .def("__repr__", [](const ForwardResult& f) {
        return fmt::format("<pathlift.ForwardResult: {} samples, {} nodes, {} outputs>",
                           f.num_samples(), f.values.cols(), f.outputs.cols());
      });

  py::class_<ActivationPattern> pattern(m, "ActivationPattern", R"doc(
Which linear piece of every activation each sample uses (activation_pattern): slopes (n x m,
read-only view): 1 where the pre-activation is > 0, else the node's negative slope (ReLU 0,
leaky ReLU a, identity 1), 1 for inputs; margin = min |pre-activation| over samples and kinked
nodes (inf when there is none); on_kink (margin == 0: theta is in the null set Proposition 1
excludes, L is then not unique).
)doc");
  pattern.def_property_readonly("slopes",
                                matrix_property([](const py::object& s) -> const Eigen::MatrixXd& {
                                  return s.cast<const ActivationPattern&>().slopes;
                                }),
                                "n x m slopes (read-only view).");
  def_fields(pattern,
             field("margin", &ActivationPattern::margin,
                   "min |pre-activation| over all samples and kinked nodes; inf if none."));
  pattern
      .def_property_readonly(
          "margin_sample",
          [](const ActivationPattern& p) -> py::object {
            return p.margin_sample >= 0 ? py::object(py::int_(p.margin_sample)) : py::none();
          },
          "The sample where the margin is attained, or None.")
      .def_property_readonly(
          "margin_node",
          [](const ActivationPattern& p) -> py::object {
            return p.margin_node >= 0 ? py::object(py::int_(p.margin_node)) : py::none();
          },
          "The node where the margin is attained, or None.");
  def_fields(pattern, field("on_kink", &ActivationPattern::on_kink,
                            "The warning: margin == 0, some sample sits exactly on a kink."));
  pattern.def("__repr__", [](const ActivationPattern& p) {
    return fmt::format("<pathlift.ActivationPattern: {} samples, margin {:.3g}{}>", p.slopes.rows(),
                       p.margin, p.on_kink ? " (ON A KINK)" : "");
  });

  def_batch_function(
      m, "forward", [](const auto&... args) { return pathlift::forward(args...); },
      R"doc(f_theta on every row of X, node by node in topological order over the whole batch:
v(input) = x_i (bias: 1), v(n) = act_n(sum_{e=(m->n)} theta_e v(m)). Returns a ForwardResult
(pre_activations, values, outputs).

X: n x r (n samples, one column per data input in node order, net.data_inputs; bias nodes
excluded), finite; converted to Fortran-ordered float64 (one copy unless it already is).
theta: d finite numbers; None uses the stored weights. Raises FormatError (ValueError) when X
has the wrong number of columns (both numbers named), ValueError for a NaN/inf in X or theta
or a non-2-D X, TooLarge (MemoryError) when the n x m results exceed max_memory. Results are
identical for any thread count. The GIL is released. Complexity: O(n (m + d)).)doc");

  m.def(
      "activation_pattern",
      [](const NetworkArg& net, const ForwardResult& forward) {
        const Network& dag = net.dag();
        const py::gil_scoped_release release;
        return activation_pattern(dag, forward);
      },
      py::arg("net"), py::arg("forward"),
      "The ActivationPattern of a forward pass (slopes, margin, on_kink). ValueError when the "
      "ForwardResult is not from this network. Complexity: O(n m).");

  m.def(
      "random_data",
      [](const NetworkArg& arg, Index n, Seed seed) {
        const Network& net = arg.dag();
        if (n < 0) {
          throw std::invalid_argument(fmt::format("n must be >= 0, got {}", n));
        }
        Eigen::MatrixXd x;
        {
          py::gil_scoped_release release;
          x = random_data(net, n, seed);
        }
        return owning_col_major(std::move(x));
      },
      py::arg("net"), py::arg("n"), py::arg("seed") = 0,
      "A reproducible batch of n samples with standard normal entries (n x r float64, r = "
      "len(net.data_inputs)), for checks on random data.");
}

}  // namespace pathlift::python
