// checks.hpp: the paper's identities verified numerically at theta (Lemma 1, Proposition 2,
// Corollary 1, finite differences), as a list of CheckResult.

#include <pybind11/stl.h>

#include <fmt/format.h>

#include <cstdint>
#include <vector>

#include "common.hpp"
#include "pathlift/checks.hpp"
#include "results.hpp"

namespace pathlift::python {

void bind_checks(py::module_& m) {
  py::class_<CheckResult> result(m, "CheckResult", "One identity verified by check_identities.");
  def_fields(
      result,
      field("name", &CheckResult::name,
            "'lemma1', 'proposition2', 'corollary1' or 'finite_differences'."),
      field("claim", &CheckResult::claim, "The identity, in words."),
      field("applicable", &CheckResult::applicable,
            "False when the identity does not apply (e.g. Proposition 2 with a zero weight)."),
      field("passed", &CheckResult::passed,
            "True when applicable and max_error <= tolerance (or not applicable)."),
      field("max_error", &CheckResult::max_error, "The largest relative error seen."),
      field("tolerance", &CheckResult::tolerance, "The relative tolerance applied."),
      field("entries", &CheckResult::entries, "Entries compared."),
      field("note", &CheckResult::note, "Why not applicable, or where the largest error is."));
  result
      .def_property_readonly(
          "status", [](const CheckResult& r) { return std::string(to_string(r.status)); },
          "'passed', 'failed' (also for a NaN or inf error), 'not_applicable', or "
          "'out_of_range': Phi or dPhi at theta leaves float64, the identity is not checked.")
      .def("__bool__", [](const CheckResult& r) { return r.passed; })
      .def("__repr__", [](const CheckResult& r) {
        return fmt::format("<pathlift.CheckResult {}: {}, max error {:.3g} (tolerance {:.3g})>",
                           r.name, to_string(r.status), r.max_error, r.tolerance);
      });

  m.def(
      "check_identities",
      [](const NetworkArg& arg, const py::object& theta, Index fd_samples, Seed seed,
         double tolerance, double fd_tolerance, int threads, const py::object& progress,
         std::size_t max_memory) {
        const Network& net = arg.dag(max_memory);
        const CheckOptions o{
            .fd_samples = fd_samples,
            .seed = seed,
            .tolerance = tolerance,
            .fd_tolerance = fd_tolerance,
            .engine = engine_options(threads, max_memory, progress, "check_identities")};
        return with_theta(arg, theta,
                          [&](std::span<const double> t) { return check_identities(net, t, o); });
      },
      py::arg("net"), py::arg("theta") = py::none(), py::kw_only(),
      py::arg("fd_samples") = CheckOptions{}.fd_samples, py::arg("seed") = 0,
      py::arg("tolerance") = CheckOptions{}.tolerance,
      py::arg("fd_tolerance") = CheckOptions{}.fd_tolerance, py::arg("threads") = 0,
      py::arg("progress") = py::none(), py::arg("max_memory") = 0,
      R"doc(Verifies the paper's identities at theta and returns a list of CheckResult: Lemma 1
(Phi = S exp(B log|theta|)), Proposition 2 (dPhi = diag(Phi) B diag(1/theta), not applicable
when a weight is 0), Corollary 1 (B = dPhi(1_d)), and dPhi against central finite
differences of Phi on fd_samples entries chosen by seed. Relative errors against tolerance
(fd_tolerance for the finite differences).
theta: d finite numbers; None uses the stored weights. ValueError for a bad theta, TooLarge
(MemoryError) when the paths do not fit in max_memory. The GIL is released.
Complexity: O(nnz) time and memory.)doc");
  m.def("all_passed", &all_passed, py::arg("results"),
        "True when every applicable check of check_identities passed.");
}

}  // namespace pathlift::python
