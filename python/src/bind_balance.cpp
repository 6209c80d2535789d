// pathlift.path_cond, pathlift.enorm and pathlift.parameter_classes (balance.hpp, symmetry.hpp).

#include <fmt/format.h>

#include <string>

#include "common.hpp"
#include "pathlift/balance.hpp"
#include "pathlift/symmetry.hpp"
#include "results.hpp"

namespace pathlift::python {

namespace {

BalanceOptions balance_options(Index max_sweeps, double tolerance, int threads,
                               std::size_t max_memory) {
  BalanceOptions o;
  o.max_sweeps = max_sweeps;
  o.tolerance = tolerance;
  o.engine = engine_options(threads, max_memory);
  check_balance_options(o);
  return o;
}

/// A RuntimeWarning when a balancing asked for sweeps stopped short of its tolerance
/// (converged false), saying the stationarity, the tolerance, the sweeps and what to change:
/// the one home of that warning, so that pathlift.torch.path_cond and enorm, which call these
/// bindings, give it too. max_sweeps = 0 asks for the criterion only: no warning.
void warn_unless_converged(const char* method, const BalanceReport& r, const BalanceOptions& o) {
  if (r.converged || o.max_sweeps == 0) {
    return;
  }
  const std::string head =
      fmt::format("{} did not converge: stationarity {:.3g} > tolerance {:.3g} after ", method,
                  r.stationarity, o.tolerance);
  const std::string message =
      r.sweeps >= o.max_sweeps
          ? head + fmt::format(
                       "max_sweeps = {} sweep{}; the returned theta computes the same "
                       "function but is not yet balanced: pass a larger max_sweeps (or "
                       "call it again on the result to continue)",
                       r.sweeps, r.sweeps == 1 ? "" : "s")
          : head + fmt::format(
                       "{} sweeps, at a fixed point to rounding (no class moves any "
                       "more): float64 does not reach this tolerance here; pass a larger "
                       "tolerance",
                       r.sweeps);
  if (PyErr_WarnEx(PyExc_RuntimeWarning, message.c_str(), 1) != 0) {
    throw py::error_already_set();  // the warning made an error by a filter
  }
}

}  // namespace

void bind_balance(py::module_& m) {
  py::class_<ParameterClasses> classes(m, "ParameterClasses", R"doc(
Where each parameter sits in the rescaling symmetries (parameter_classes): classes (the free
classes: hidden units, or channel classes with weight sharing), target and source (per
parameter, the class its edges enter / leave; -1 pinned, -2 unused), constraints (0: every class
rescales on its own). A rescaling by log-scales alpha multiplies theta_k by
exp(alpha[target[k]] - alpha[source[k]]) and leaves the function unchanged.
)doc");
  def_fields(classes, field("classes", &ParameterClasses::classes, "The free classes."),
             array_field("target", &ParameterClasses::target,
                         "Per parameter: the class its edges enter (-1 pinned, -2 unused)."),
             array_field("source", &ParameterClasses::source,
                         "Per parameter: the class its edges leave (-1 pinned, -2 unused)."),
             field("constraints", &ParameterClasses::constraints,
                   "Constraints left among the classes (0: each rescales on its own)."));
  classes.def("__repr__", [](const ParameterClasses& p) {
    // d parameters: rescaled (an end in a free class), pinned at both ends (input to
    // output: no rescaling moves them), unused (no edge carries them).
    Index pinned = 0;
    Index unused = 0;
    for (std::size_t k = 0; k < p.target.size(); ++k) {
      unused += p.target[k] == -2 ? 1 : 0;
      pinned += p.target[k] == -1 && p.source[k] == -1 ? 1 : 0;
    }
    const auto d = static_cast<Index>(p.target.size());
    return fmt::format(
        "<pathlift.ParameterClasses: {} class{} over d = {} parameter{} ({} rescaled, {} "
        "pinned at both ends, {} unused), {} constraint{}>",
        p.classes, p.classes == 1 ? "" : "es", d, d == 1 ? "" : "s", d - pinned - unused, pinned,
        unused, p.constraints, p.constraints == 1 ? "" : "s");
  });
  m.def(
      "parameter_classes",
      [](const NetworkArg& net, std::size_t max_memory) {
        EngineOptions o;
        o.max_memory = max_memory;
        py::gil_scoped_release release;
        return parameter_classes(net.model(), o);
      },
      py::arg("net"), py::kw_only(), py::arg("max_memory") = 0,
      "The rescaling classes of the parameters (a LayerNetwork is never unrolled).");

  py::class_<BalanceReport> report(m, "BalanceReport", R"doc(
A balancing rescaling (path_cond, enorm): theta (the rescaled theta, the same function),
log_scales (one per class), classes, sweeps, converged, criterion_before, criterion_after,
stationarity (the largest relative violation of the optimum's condition).
)doc");
  def_to_dict(
      report,
      "The JSON form (to_json): `pathlift rescale --json`'s report keys (docs/balance.md).");
  def_fields(
      report,
      array_field("theta", &BalanceReport::theta, "The rescaled theta (the same function)."),
      array_field("log_scales", &BalanceReport::log_scales, "The log-scales alpha, one per class."),
      field("classes", &BalanceReport::classes, "The free classes rescaled."),
      field("sweeps", &BalanceReport::sweeps, "Coordinate-descent sweeps made."),
      field("converged", &BalanceReport::converged, "The stationarity is within the tolerance."),
      field("criterion_before", &BalanceReport::criterion_before, "The objective at theta."),
      field("criterion_after", &BalanceReport::criterion_after,
            "The objective at the rescaled theta."),
      field("stationarity", &BalanceReport::stationarity,
            "The largest relative violation of the optimum's condition over the classes."));
  report.def("__repr__", [](const BalanceReport& r) {
    return fmt::format(
        "<pathlift.BalanceReport: {} classes, {} sweeps{}, criterion {:.6g} -> {:.6g}, "
        "stationarity {:.2g}>",
        r.classes, r.sweeps, r.converged ? "" : " (not converged)", r.criterion_before,
        r.criterion_after, r.stationarity);
  });

  for (const auto& [name, method, fn, doc] :
       {std::tuple{"path_cond", "PathCond", &path_cond,
                   "PathCond (Lebeurrier, Vayer, Gribonval, 2026): the rescaling of the hidden "
                   "units (channel classes with sharing) minimising n log(sum_k G_kk) - sum_k "
                   "log G_kk, G the path kernel's diagonal after rescaling, by coordinate "
                   "descent with exact per-class minimisers, until the stationarity is within "
                   "tolerance (converged) or after max_sweeps. Returns a BalanceReport whose "
                   "theta computes the same function (a RuntimeWarning when it is not "
                   "converged, saying the stationarity, the tolerance and the sweeps); RangeError "
                   "when a rescaled entry would leave float64. docs/balance.md."},
        std::tuple{"enorm", "ENorm", &enorm,
                   "ENorm (Stock et al., 2019): the rescaling minimising sum_k theta_k^2 (every "
                   "class's incoming and outgoing squared norms equal), until the stationarity is "
                   "within tolerance. Returns a BalanceReport whose theta computes the same "
                   "function (a RuntimeWarning when it is not converged). docs/balance.md."}}) {
    m.def(
        name,
        [method = method, fn = fn](const NetworkArg& net, const py::object& theta, Index max_sweeps,
                                   double tolerance, int threads, std::size_t max_memory) {
          const BalanceOptions o = balance_options(max_sweeps, tolerance, threads, max_memory);
          BalanceReport r = with_theta(
              net, theta, [&](std::span<const double> t) { return fn(net.model(), t, o); });
          warn_unless_converged(method, r, o);
          return r;
        },
        py::arg("net"), py::arg("theta") = py::none(), py::kw_only(),
        py::arg("max_sweeps") = BalanceOptions{}.max_sweeps,
        py::arg("tolerance") = BalanceOptions{}.tolerance, py::arg("threads") = 0,
        py::arg("max_memory") = 0, doc);
  }
}

}  // namespace pathlift::python
