// pathlift.generalization_bound (generalization.hpp): the path-norm toolkit's Theorem 3.1 with
// its constants read from the model.

#include <fmt/format.h>

#include "common.hpp"
#include "pathlift/generalization.hpp"
#include "results.hpp"

namespace pathlift::python {

void bind_generalization(py::module_& m) {
  py::class_<GeneralizationBound> cls(m, "GeneralizationBound", R"doc(
The generalization bound of the path-norm toolkit (Gonon et al., ICLR 2024, Theorem 3.1 and
Remark 3.1), each ingredient named as the paper names it: D (the longest input-to-output path,
edges; D_exact False when it is an upper bound from the layers), P (the distinct k of the
k-max-pooling neurons: max pooling k = 1, k-max pooling, GroupSort), K (most inputs of such a
neuron), M (most of them on one path),
d_in, d_out, n, B, C, coefficient = 4 C max(B, 1) / sqrt(n), l1_path_norm, bound = coefficient
x l1_path_norm, and C_sharp, coefficient_sharp, bound_sharp (Remark 3.1). Large values are floats
(inf beyond double's range) with their log10 beside them. assumptions: the theorem's hypotheses,
one sentence each. to_dict(): the JSON form `pathlift bound --json` prints.
)doc");
  def_fields(cls, field("D", &GeneralizationBound::depth, "The depth: the longest path (edges)."),
             field("D_exact", &GeneralizationBound::depth_exact,
                   "False when D is an upper bound from the layers (the bound stays valid)."),
             field("P", &GeneralizationBound::max_pool_types,
                   "The distinct k of the k-max-pooling neurons (max pooling: k = 1)."),
             field("K", &GeneralizationBound::max_pool_kernel,
                   "The most inputs of a *-max-pooling neuron (1 without one)."),
             field("M", &GeneralizationBound::max_pools_on_a_path,
                   "The most *-max-pooling neurons on one path (Remark 3.1)."),
             field("d_in", &GeneralizationBound::inputs, "Input dimension (bias excluded)."),
             field("d_out", &GeneralizationBound::outputs, "Output dimension."),
             field("n", &GeneralizationBound::samples, "Training samples."),
             field("B", &GeneralizationBound::input_bound, "The bound on ||x||_inf."),
             field("C", &GeneralizationBound::constant, "Theorem 3.1's C."),
             field("coefficient", &GeneralizationBound::coefficient,
                   "4 C max(B, 1) / sqrt(n), which multiplies the L1 path-norm."),
             field("C_sharp", &GeneralizationBound::sharp_constant, "Remark 3.1's C."),
             field("coefficient_sharp", &GeneralizationBound::sharp_coefficient,
                   "4 C_sharp max(B, 1) / sqrt(n)."));
  const auto scaled = [&cls](const char* name, const char* log_name,
                             ScaledReal GeneralizationBound::*member, const char* doc) {
    cls.def_property_readonly(
        name, [member](const GeneralizationBound& r) { return (r.*member).value(); }, doc);
    cls.def_property_readonly(
        log_name, [member](const GeneralizationBound& r) { return (r.*member).log10(); },
        "log10 of it, right far beyond double's range.");
  };
  scaled("l1_path_norm", "log10_l1_path_norm", &GeneralizationBound::path_norm,
         "||Phi(theta)||_1, a float (inf beyond double's range).");
  scaled("bound", "log10_bound", &GeneralizationBound::bound,
         "coefficient x ||Phi(theta)||_1: the bound on the expected generalization gap.");
  scaled("bound_sharp", "log10_bound_sharp", &GeneralizationBound::sharp_bound,
         "coefficient_sharp x ||Phi(theta)||_1 (Remark 3.1).");
  cls.def_property_readonly(
      "assumptions", [](const GeneralizationBound&) { return generalization_assumptions(); },
      "The hypotheses of the theorem, one sentence each.");
  def_to_dict(cls, "The JSON form (pathlift bound --json's keys after its header).");
  cls.def("__repr__", [](const GeneralizationBound& r) {
    return fmt::format(
        "<pathlift.GeneralizationBound: D={} P={} K={} C={:.6g} coefficient={:.6g} "
        "log10 bound={:.6f}>",
        r.depth, r.max_pool_types, r.max_pool_kernel, r.constant, r.coefficient, r.bound.log10());
  });

  m.def(
      "generalization_bound",
      [](const NetworkArg& net, const py::object& theta, double n, double input_bound, int threads,
         const py::object& progress, std::size_t max_memory) {
        GeneralizationBoundOptions o;
        o.samples = n;
        o.input_bound = input_bound;
        o.engine = engine_options(threads, max_memory, progress, "generalization_bound");
        return with_theta(net, theta, [&](std::span<const double> t) {
          return generalization_bound(net.model(), t, o);
        });
      },
      py::arg("net"), py::arg("theta") = py::none(), py::kw_only(), py::arg("n"),
      py::arg("input_bound"), py::arg("threads") = 0, py::arg("progress") = py::none(),
      py::arg("max_memory") = 0,
      R"doc(The generalization bound of the path-norm toolkit (Theorem 3.1, and Remark 3.1's
sharpened form) with every constant read from the model (a LayerNetwork is never unrolled):
E[test loss - training loss] <= 4 C max(B, 1) / sqrt(n) x ||Phi(theta)||_1 with
C = sqrt(D log((3 + 2P) K) + log((3 + 2P) / (1 + P) (d_in + 1) d_out)), for the cross-entropy
loss, n i.i.d. samples with ||x||_inf <= B. n: the number of training samples; input_bound: B
(pathlift.torch.generalization_bound reads both from a DataLoader). theta: d numbers, None for
the network's weights. Returns a GeneralizationBound. ValueError for n <= 0 or not whole, B < 0, a bad theta,
or a leaky ReLU (outside the theorem: named). docs/generalization.md.)doc");
}

}  // namespace pathlift::python
