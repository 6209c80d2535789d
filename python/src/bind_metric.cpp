// pathlift.path_metric and pathlift.lipschitz_bound (path_metric.hpp, path_free.hpp).

#include <fmt/format.h>

#include "common.hpp"
#include "pathlift/path_free.hpp"
#include "pathlift/path_metric.hpp"
#include "results.hpp"

namespace pathlift::python {

namespace {

/// Both parameter vectors of (net, theta, theta2), checked (ValueError naming the vector).
std::pair<std::vector<double>, std::vector<double>> metric_thetas(const NetworkArg& net,
                                                                  const py::object& theta,
                                                                  const py::object& theta2) {
  const auto a = theta_argument<double>(theta, net);
  if (theta2.is_none()) {
    throw std::invalid_argument(
        "theta2 is required: the second parameter vector (a pruned or "
        "quantized theta) of d numbers");
  }
  const auto b = theta_argument<double>(theta2, net, "theta2");
  return {std::vector<double>(a.data(), a.data() + a.size()),
          std::vector<double>(b.data(), b.data() + b.size())};
}

std::string metric_value_text(const ScaledReal& x) {
  return x.fits_double() ? fmt::format("{:.6g}", x.value()) : fmt::format("10^{:.6f}", x.log10());
}

}  // namespace

void bind_metric(py::module_& m) {
  py::class_<PathMetric> metric(m, "PathMetric", R"doc(
The l1 path-metric ||Phi(theta) - Phi(theta2)||_1 (path_metric): value (a float, inf beyond
double's range), log10, scaled (a ScaledReal), exact (True when one of theta, theta2 dominates
the other, as pruning does: then the value is the metric itself; else an upper bound).
)doc");
  def_to_dict(metric, "The JSON form (to_json): the metric keys of `pathlift metric --json`.");
  metric
      .def_property_readonly(
          "value", [](const PathMetric& p) { return p.value.value(); },
          "The metric (or its upper bound), a float: inf beyond double's range (see log10).")
      .def_property_readonly(
          "log10", [](const PathMetric& p) { return p.value.log10(); },
          "log10 of value, right far beyond double's range (-inf for 0).")
      .def_property_readonly(
          "scaled", [](const PathMetric& p) { return p.value; }, "value as a ScaledReal.");
  def_fields(metric,
             field("exact", &PathMetric::exact,
                   "True when value is the metric itself (one vector dominates the other)."));
  metric.def("__float__", [](const PathMetric& p) { return p.value.value(); })
      .def("__repr__", [](const PathMetric& p) {
        return fmt::format("<pathlift.PathMetric: {} ({})>", metric_value_text(p.value),
                           p.exact ? "exact" : "upper bound");
      });

  py::class_<LipschitzBound> bound(m, "LipschitzBound", R"doc(
The constant C of ||f_theta(x) - f_theta2(x)||_1 <= max(||x||_inf, 1) C for every input x
(lipschitz_bound): constant (a float, inf beyond double's range), log10, scaled, exact (C is the
path-metric itself), sign_changes (coordinates where theta and theta2 have opposite signs; C
then goes through theta with them set to 0).
)doc");
  def_to_dict(bound, "The JSON form (to_json): the Lipschitz keys of `pathlift metric --json`.");
  bound
      .def_property_readonly(
          "constant", [](const LipschitzBound& b) { return b.constant.value(); },
          "C, a float (inf beyond double's range: see log10).")
      .def_property_readonly(
          "log10", [](const LipschitzBound& b) { return b.constant.log10(); }, "log10 of C.")
      .def_property_readonly(
          "scaled", [](const LipschitzBound& b) { return b.constant; }, "C as a ScaledReal.");
  def_fields(bound, field("exact", &LipschitzBound::exact, "C is the path-metric itself."),
             field("sign_changes", &LipschitzBound::sign_changes,
                   "Coordinates where theta and theta2 have opposite signs."));
  bound
      .def(
          "bound",
          [](const LipschitzBound& b, double x_inf) {
            return std::max(x_inf, 1.0) * b.constant.value();
          },
          py::arg("x_inf"),
          "max(x_inf, 1) C: the bound on ||f_theta(x) - f_theta2(x)||_1 for an input with "
          "||x||_inf = x_inf.")
      .def("__float__", [](const LipschitzBound& b) { return b.constant.value(); })
      .def("__repr__", [](const LipschitzBound& b) {
        return fmt::format(
            "<pathlift.LipschitzBound: C = {}{}{}>", metric_value_text(b.constant),
            b.exact ? " (exact)" : "",
            b.sign_changes == 0 ? std::string() : fmt::format(", {} sign changes", b.sign_changes));
      });

  m.def(
      "path_metric",
      [](const NetworkArg& net, const py::object& theta, const py::object& theta2, int threads,
         const py::object& progress, std::size_t max_memory) {
        const auto [a, b] = metric_thetas(net, theta, theta2);
        const EngineOptions o = engine_options(threads, max_memory, progress, "path_metric");
        py::gil_scoped_release release;
        return path_metric(net.model(), a, b, o);
      },
      py::arg("net"), py::arg("theta"), py::arg("theta2"), py::kw_only(), py::arg("threads") = 0,
      py::arg("progress") = py::none(), py::arg("max_memory") = 0,
      R"doc(The l1 path-metric ||Phi(theta) - Phi(theta2)||_1 by dynamic programming, without
enumerating a path (a LayerNetwork never unrolled): exact when one vector dominates the other
(|theta2_k| <= |theta_k| with the same sign, or theta2_k = 0, for every k, or the other way
round: pruning, shrinking), as ||Phi(theta)||_1 - ||Phi(theta2)||_1; otherwise the telescoping
upper bound sum over edges |theta_e - theta2_e| F(src e) G(dst e) (forward sums of |theta2|,
backward sums of |theta|). Returns a PathMetric (value, log10, exact). theta: d numbers, None
for the network's weights; theta2: d numbers. ValueError for a wrong vector (named). The GIL is
released. docs/path_metric.md.)doc");

  m.def(
      "lipschitz_bound",
      [](const NetworkArg& net, const py::object& theta, const py::object& theta2, int threads,
         const py::object& progress, std::size_t max_memory) {
        const auto [a, b] = metric_thetas(net, theta, theta2);
        const EngineOptions o = engine_options(threads, max_memory, progress, "lipschitz_bound");
        py::gil_scoped_release release;
        return lipschitz_bound(net.model(), a, b, o);
      },
      py::arg("net"), py::arg("theta"), py::arg("theta2"), py::kw_only(), py::arg("threads") = 0,
      py::arg("progress") = py::none(), py::arg("max_memory") = 0,
      R"doc(The constant C of ||f_theta(x) - f_theta2(x)||_1 <= max(||x||_inf, 1) C for every
input x (Gonon et al., ICML 2025), for any pair: the path-metric when the signs agree
coordinate by coordinate (0 agreeing with both), else the sum of the metrics through theta with
the disagreeing coordinates set to 0 (the triangle inequality). Returns a LipschitzBound
(constant, log10, exact, sign_changes; bound(x_inf) = max(x_inf, 1) C). Certifies pruning and
quantization: how far can the changed network move on any input? docs/path_metric.md.)doc");
}

}  // namespace pathlift::python
