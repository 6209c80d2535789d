// magnitude.hpp: the range of |Phi_p| and of dPhi's entries by dynamic programming, and Phi and
// dPhi as sign and log10 magnitude (exact beyond float64).

#include <pybind11/stl.h>

#include <cstdint>
#include <utility>

#include "common.hpp"
#include "pathlift/lifting.hpp"
#include "pathlift/magnitude.hpp"

namespace pathlift::python {

namespace {

py::tuple range_tuple(const LogRange& r) {
  return py::make_tuple(r.min_log10, r.max_log10);
}

}  // namespace

void bind_magnitude(py::module_& m) {
  m.def(
      "lifting_range",
      [](const NetworkArg& arg, const py::object& theta) {
        const Network& net = arg.dag(0);
        const LiftingRange r = with_theta(
            arg, theta, [&](std::span<const double> t) { return lifting_range(net, t); });
        py::dict out;
        out["phi"] = range_tuple(r.phi);
        out["jacobian"] = range_tuple(r.jacobian);
        out["partial"] = range_tuple(r.partial);
        out["fits_float64"] = r.fits_all<double>();
        return out;
      },
      py::arg("net"), py::arg("theta") = py::none(),
      R"doc(The range of the magnitudes at theta, by dynamic programming (no path enumerated):
a dict with "phi" (min, max) of log10|Phi_p| over the paths with no zero weight, "jacobian" the
same over the entries of dPhi, "partial" over the prefix and suffix products they are computed
from ((inf, -inf) when empty), and "fits_float64": whether all are normal float64 numbers
(between 2.2e-308 and 1.8e308), i.e. whether path_lifting and jacobian are exact.
Complexity: O(m + d).)doc");
  m.def(
      "log_path_lifting",
      [](const NetworkArg& arg, const py::object& theta, int threads, const py::object& progress,
         std::size_t max_memory) {
        const EngineOptions o = engine_options(threads, max_memory, progress, "log_path_lifting");
        const Network& net = arg.dag(max_memory);
        SignedLog10 r = with_theta(
            arg, theta, [&](std::span<const double> t) { return log_path_lifting(net, t, o); });
        return py::make_tuple(owning_array(std::move(r.sign)), owning_array(std::move(r.log10)));
      },
      py::arg("net"), py::arg("theta") = py::none(), py::kw_only(), py::arg("threads") = 0,
      py::arg("progress") = py::none(), py::arg("max_memory") = 0,
      R"doc(Phi(theta) as (sign, log10): two arrays of P entries in canonical path order, with
Phi_p = sign[p] * 10**log10[p] (sign in {-1, 0, 1}, log10 = -inf where Phi_p = 0). Exact at any
magnitude, where path_lifting overflows to inf or underflows to 0.
Complexity: O(nnz) time and memory (the path set is enumerated).)doc");
}

}  // namespace pathlift::python
