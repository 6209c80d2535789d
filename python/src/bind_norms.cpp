// norms.hpp: path-norms and their gradient by dynamic programming, on a Network or
// (layer_dp.hpp) on a LayerNetwork's layer graph without unrolling. A value that fits in a double
// is a Python float, the nearest double (inf beyond 1.8e308, 0 below 4.9e-324), with its exact
// log10 beside it; the ScaledReal itself is there too.

#include <fmt/format.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <string_view>
#include <vector>

#include "norms.hpp"
#include "pathlift/error.hpp"
#include "pathlift/path_free.hpp"
#include "results.hpp"

namespace pathlift::python {

namespace {

std::string scaled_string(const ScaledReal& x) {
  if (x.fits_double()) {
    return fmt::format("{}", x.value());
  }
  return fmt::format("{}10^{:.6f}", x.mantissa < 0 ? "-" : "", x.log10());
}

py::list log10_list(const std::vector<ScaledReal>& xs) {
  py::list out;
  for (const ScaledReal& x : xs) {
    out.append(x.log10());
  }
  return out;
}

py::list float_list(const std::vector<ScaledReal>& xs) {
  py::list out;
  for (const ScaledReal& x : xs) {
    out.append(x.value());
  }
  return out;
}

}  // namespace

py::object scaled_result(const ScaledReal& x, bool scaled, std::string_view what) {
  if (scaled) {
    return py::cast(x);
  }
  if (!x.fits_double()) {
    throw RangeError(fmt::format("{} is {}, beyond float64: pass scaled=True for a ScaledReal",
                                 what, scaled_string(x)));
  }
  return py::float_(x.value());
}

namespace {

void bind_norm_types(py::module_& m) {
  py::class_<ScaledReal> scaled(m, "ScaledReal", R"doc(
A real number that may lie outside double's range: mantissa * 2**exponent. The path-free
computations return a plain float when the value fits in a double and a ScaledReal otherwise
(an L1 path-norm of 10^400, say): use .log10 (exact to rounding whatever the exponent);
float(x) is +-inf beyond double's range (0 below it).
)doc");
  scaled.def(py::init([](double mantissa, std::int64_t exponent) {
               if (!std::isfinite(mantissa)) {
                 throw std::invalid_argument("ScaledReal: the mantissa must be finite");
               }
               ScaledReal x = ScaledReal::from_double(mantissa);
               x.exponent += exponent;
               return x;
             }),
             py::arg("mantissa") = 0.0, py::arg("exponent") = 0,
             "mantissa * 2**exponent (normalised).");
  def_fields(scaled, field("mantissa", &ScaledReal::mantissa, "The mantissa (0 for zero)."),
             field("exponent", &ScaledReal::exponent, "The binary exponent."));
  scaled
      .def_property_readonly("value", &ScaledReal::value,
                             "The number as a float: +-inf beyond double's range, 0 (or a "
                             "subnormal) below it.")
      .def_property_readonly("log10", &ScaledReal::log10,
                             "log10 |x|, exact to rounding whatever the exponent; -inf for 0.")
      .def_property_readonly("fits_double", &ScaledReal::fits_double,
                             "True when .value represents the number without overflow or "
                             "underflow.")
      .def_property_readonly("is_zero", &ScaledReal::is_zero, "True for 0.")
      .def("__float__", &ScaledReal::value)
      .def("__str__", &scaled_string)
      .def("__repr__", [](const ScaledReal& x) {
        return fmt::format("pathlift.ScaledReal({}, {})  # {}", x.mantissa, x.exponent,
                           scaled_string(x));
      });

  py::class_<PathNorm> norm(m, "PathNorm", R"doc(
The L^s path-norm ||Phi(theta)||_s = (sum_p |Phi_p|^s)^(1/s) and its parts (path_norm).
Every value is a float: the nearest double, inf beyond double's range (1.8e308) and 0 below it
(4.9e-324); its log10 beside it (log10, log10_sum, log10_per_output, log10_per_input) is right in
every case, and `scaled` is the norm as a ScaledReal (mantissa and binary exponent).
)doc");
  def_fields(norm, field("s", &PathNorm::s, "The exponent s (0: the path count)."));
  norm.def_property_readonly(
          "norm", [](const PathNorm& n) { return n.norm.value(); },
          "||Phi||_s = sum^(1/s) (for s = 0: P), a float (inf beyond double's range: see log10).")
      .def_property_readonly(
          "value", [](const PathNorm& n) { return n.norm.value(); }, "The same as norm.")
      .def_property_readonly(
          "scaled", [](const PathNorm& n) { return n.norm; },
          "The norm as a ScaledReal, exact far beyond double's range.")
      .def_property_readonly(
          "log10", [](const PathNorm& n) { return n.norm.log10(); },
          "log10 of the norm, right far beyond double's range (-inf for a zero norm).")
      .def_property_readonly(
          "sum", [](const PathNorm& n) { return n.sum.value(); },
          "sum_p |Phi_p|^s (for s = 0: P), a float (see log10_sum).")
      .def_property_readonly(
          "log10_sum", [](const PathNorm& n) { return n.sum.log10(); }, "log10 of sum.")
      .def_property_readonly(
          "per_output", [](const PathNorm& n) { return float_list(n.per_output); },
          "The norm of Phi restricted to the paths ending at each output, in output order "
          "(net.outputs): floats (see log10_per_output).")
      .def_property_readonly(
          "log10_per_output", [](const PathNorm& n) { return log10_list(n.per_output); },
          "log10 of each per_output entry.")
      .def_property_readonly(
          "per_input",
          [](const PathNorm& n) -> py::object {
            if (n.per_input.empty()) {
              return py::none();
            }
            return float_list(n.per_input);
          },
          "The norm of Phi restricted to the paths starting at each input (bias included), in "
          "input order (net.inputs); None unless path_norm(..., per_input=True).")
      .def_property_readonly(
          "log10_per_input",
          [](const PathNorm& n) -> py::object {
            if (n.per_input.empty()) {
              return py::none();
            }
            return log10_list(n.per_input);
          },
          "log10 of each per_input entry, or None.")
      .def("__float__", [](const PathNorm& n) { return n.norm.value(); })
      .def("__repr__", [](const PathNorm& n) {
        return fmt::format("<pathlift.PathNorm: s = {}, norm = {}>", n.s, scaled_string(n.norm));
      });
}

void bind_norm_functions(py::module_& m) {
  m.def(
      "path_norm",
      [](const NetworkArg& net, const py::object& theta, const py::object& s_arg, bool per_input,
         int threads, const py::object& progress, std::size_t max_memory) -> py::object {
        if (!theta.is_none() && !py::isinstance<py::array>(theta) &&
            (py::isinstance<py::float_>(theta) || py::isinstance<py::int_>(theta))) {
          throw std::invalid_argument(
              fmt::format("theta must be a 1-D vector of d numbers, got the number {}: to give the "
                          "exponent, write path_norm(net, s={})",
                          py::str(theta).cast<std::string>(), py::str(theta).cast<std::string>()));
        }
        // One exponent (a PathNorm), or several (a list, one pass each).
        const bool several = !py::isinstance<py::float_>(s_arg) &&
                             !py::isinstance<py::int_>(s_arg) &&
                             py::isinstance<py::iterable>(s_arg);
        std::vector<double> exponents;
        try {
          exponents = several ? s_arg.cast<std::vector<double>>()
                              : std::vector<double>{s_arg.cast<double>()};
        } catch (const py::cast_error&) {
          throw std::invalid_argument(
              fmt::format("s must be a number or a list of numbers (s >= 0, inf for max_p "
                          "|Phi_p|), got {}",
                          py::repr(s_arg).cast<std::string>()));
        }
        if (several && exponents.empty()) {
          throw std::invalid_argument("s: an empty list of exponents");
        }
        const EngineOptions o = engine_options(threads, max_memory, progress, "path_norm");
        const PathNormDetail parts =
            per_input ? PathNormDetail::inputs_and_outputs : PathNormDetail::outputs;
        const bool infinite =
            std::any_of(exponents.begin(), exponents.end(), [](double x) { return std::isinf(x); });
        if (per_input || infinite) {
          // The DAG's per-node sums and the max-plus DP: unrolled here (the LayerNetwork's
          // limit), GIL released.
          (void)net.dag(max_memory);
        }
        std::vector<PathNorm> norms = with_theta(net, theta, [&](std::span<const double> t) {
          std::vector<PathNorm> out;
          for (const double x : exponents) {
            out.push_back(path_norm(net.model(), t, x, parts, o));
          }
          return out;
        });
        if (!several) {
          return py::cast(std::move(norms.front()));
        }
        return py::cast(std::move(norms));
      },
      py::arg("net"), py::arg("theta") = py::none(), py::arg("s") = 1.0, py::kw_only(),
      py::arg("per_input") = false, py::arg("threads") = 0, py::arg("progress") = py::none(),
      py::arg("max_memory") = 0,
      R"doc(The L^s path-norm ||Phi(theta)||_s = (sum_p |Phi_p|^s)^(1/s) by dynamic programming
(docs/conventions.md#path-free: sum_{o in O} F(o), forward sums of |theta_e|^s with inputs and
bias counting 1), without enumerating a path: networks with 10^100 paths are fine; a
LayerNetwork layer by layer, never unrolled (one forward pass with the weights |theta|^s).
s = 0 gives the path count P; s = inf (math.inf) gives max_p |Phi_p| by a max-plus DP (on the
unrolled DAG of a LayerNetwork, within its memory limit). Overflow-safe (one binary exponent per
node): a norm beyond 1e308 has norm = inf and the right .log10 (and .scaled). Returns a
PathNorm (norm, log10, sum, per_output, per_input); with a list of exponents (s=[1, 2,
math.inf]) a list of PathNorm, one per exponent. For a PyTorch model, pathlift.from_torch(model) first, or
pathlift.torch.path_norm(model) for a differentiable tensor.

theta: d finite numbers; None uses the network's weights. s: >= 0 (inf allowed), or a list.
per_input: also the norm per input node (one more backward pass; a LayerNetwork is unrolled
for it, within max_memory). threads: 0 = all cores.
ValueError for a wrong theta (size named) or a bad s. The GIL is released.
Complexity: O(m + d), one pass over the edges (two with per_input).)doc");

  m.def(
      "path_norm_gradient",
      [](const NetworkArg& net, const py::object& theta, double s, int threads,
         const py::object& progress) {
        const EngineOptions o = engine_options(threads, 0, progress, "path_norm_gradient");
        return owning_array(with_theta(net, theta, [&](std::span<const double> t) {
          return path_norm_gradient(net.model(), t, s, o);
        }));
      },
      py::arg("net"), py::arg("theta") = py::none(), py::arg("s") = 1.0, py::kw_only(),
      py::arg("threads") = 0, py::arg("progress") = py::none(),
      R"doc(The gradient of the L^s path-norm ||Phi(theta)||_s with respect to theta: a float64
numpy array of d entries, d/dtheta_k = ||Phi||_s^(1-s) sum over the edges e carrying k of
|theta_k|^(s-1) sign(theta_k) F_s(src e) G_s(dst e), with path_norm's forward and backward sums
(docs/path-free.md); for s = 1 the gradient of sum_p |Phi_p|. s > 0. At theta_k = 0 the entry
is 0 for s >= 1 (for s = 1 the subgradient 0 of |.|); for s < 1 the norm is not
differentiable there and ValueError names the parameter. RangeError (an ArithmeticError) when
an entry overflows float64 or is subnormal (path_norm itself works at any magnitude). A LayerNetwork is not unrolled (a forward, a backward and a weight-gradient pass per
layer). theta: d finite numbers; None uses the weights. threads: 0 = all cores. The GIL is
released. Complexity: O(m + d), one forward and one backward pass.)doc");
}

}  // namespace

void bind_norms(py::module_& m) {
  bind_norm_types(m);
  bind_norm_functions(m);
}

}  // namespace pathlift::python
