// pathlift.conservation_laws (conservation.hpp): the quantities gradient flow conserves, one per
// rescaling class.

#include <fmt/format.h>

#include <string>

#include "common.hpp"
#include "pathlift/conservation.hpp"
#include "results.hpp"

namespace pathlift::python {

void bind_conservation(py::module_& m) {
  py::class_<ConservationLaws> cls(m, "ConservationLaws", R"doc(
The conservation laws of gradient flow at theta (conservation_laws): law i, described by
descriptions[i], has value values[i] (sum of the squares of the parameters entering its class
minus those leaving it) and scale squares[i] (their sum). independent = classes + unused laws,
d - rank(dPhi) at a theta without zero weights. as_dict() maps each description to its value;
to_dict() is the JSON form. docs/dynamics.md.)doc");
  def_fields(cls,
             array_field("values", &ConservationLaws::values,
                         "Each law's value (a float64 array): squares in minus squares out."),
             array_field("squares", &ConservationLaws::squares,
                         "Each law's squares in plus squares out (a float64 array), its scale."),
             field("descriptions", &ConservationLaws::descriptions,
                   "What each law is about (a list): its nodes, or its channels and layers."),
             field("independent", &ConservationLaws::independent,
                   "The number of laws, all independent: d - rank(dPhi) at a theta without "
                   "zero weights."),
             field("classes", &ConservationLaws::classes, "Laws of rescaling classes (first)."),
             field("unused", &ConservationLaws::unused,
                   "Laws theta_k^2 of the parameters that no edge carries (last)."),
             field("unrolled", &ConservationLaws::unrolled,
                   "The classes are the unrolled DAG's (a layer graph's were coupled)."));
  cls.def("__len__", [](const ConservationLaws& r) { return r.values.size(); })
      .def(
          "as_dict",
          [](const ConservationLaws& r) {
            py::dict d;
            for (std::size_t i = 0; i < r.values.size(); ++i) {
              d[py::str(r.descriptions[i])] = r.values[i];
            }
            return d;
          },
          "{description: value} in order.");
  def_to_dict(cls, "The JSON form.");
  cls.def("__repr__", [](const ConservationLaws& r) {
    return fmt::format(
        "<pathlift.ConservationLaws: {} independent law{} ({} class{}, {} unused "
        "parameter{})>",
        r.independent, r.independent == 1 ? "" : "s", r.classes, r.classes == 1 ? "" : "es",
        r.unused, r.unused == 1 ? "" : "s");
  });

  m.def(
      "conservation_laws",
      [](const NetworkArg& net, const py::object& theta, std::size_t max_memory) {
        EngineOptions o;
        o.max_memory = net.unroll_limit(max_memory);
        return with_theta(net, theta, [&](std::span<const double> t) {
          return conservation_laws(net.model(), t, o);
        });
      },
      py::arg("net"), py::arg("theta") = py::none(), py::kw_only(), py::arg("max_memory") = 0,
      R"doc(The quantities that gradient flow of any loss conserves (Marcotte, Gribonval, Peyre,
2023): one per rescaling class h of parameter_classes (a hidden unit; a channel class with
sharing), Q_h = sum of theta_k^2 over the parameters entering h (a unit's bias included) minus
the sum over those leaving it, and theta_k^2 for a parameter that no edge carries. There are
d - rank(dPhi) of them at a theta without zero weights (the rank theorem), all independent;
under SGD with step eta they drift by O(eta^2) a step. A LayerNetwork is not unrolled (but
where its classes are coupled by constraints that unrolling merges). Returns a
ConservationLaws. ValueError for a bad theta or classes coupled by weights shared between
layers, RangeError when a law's sum of squares is beyond float64. docs/dynamics.md.)doc");
}

}  // namespace pathlift::python
