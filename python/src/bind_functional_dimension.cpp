// pathlift.functional_dimension (functional_dimension.hpp): the certified rank of the batch
// Jacobian J_X = d f(X; theta) / d theta.

#include <fmt/format.h>

#include <optional>

#include "common.hpp"
#include "pathlift/functional_dimension.hpp"
#include "rank_args.hpp"
#include "results.hpp"

namespace pathlift::python {

void bind_functional_dimension(py::module_& m) {
  py::class_<FunctionalDimension> cls(m, "FunctionalDimension", R"doc(
The certified rank of the batch Jacobian J_X (functional_dimension): lower <= rank J_X <= upper,
both certified; status 'certified' when they meet (then rank is the value), 'bounds' otherwise,
'pattern_uncertain' when the activation pattern itself is within rounding of a kink.
to_dict() is `pathlift rank --data --json`'s object. docs/functional-dimension.md.)doc");
  def_fields(
      cls, field("n", &FunctionalDimension::n, "Samples."),
      field("q", &FunctionalDimension::q, "Outputs."),
      field("d", &FunctionalDimension::d, "Parameters."),
      field("rows", &FunctionalDimension::rows,
            "N q, the rows of J_X (row i q + j: output j on "
            "sample i)."),
      field("lower", &FunctionalDimension::lower,
            "Certified lower bound: the rank mod prime of J_X's exact entries."),
      field("upper", &FunctionalDimension::upper,
            "Certified upper bound: min(upper_rows, upper_dphi, upper_kernel)."),
      field("upper_rows", &FunctionalDimension::upper_rows, "q x distinct samples."),
      field("upper_dphi", &FunctionalDimension::upper_dphi,
            "The certified upper bound of rank(dPhi(theta))."),
      field("upper_kernel", &FunctionalDimension::upper_kernel,
            "d minus the kernel of J_X known exactly: parameters on no active path, symmetries "
            "of the batch's linear blocks (docs/functional-dimension.md)."),
      field("distinct_samples", &FunctionalDimension::distinct_samples, "Distinct rows of X."),
      field("pivot_rows", &FunctionalDimension::pivot_rows,
            "The lexicographically first independent rows of J_X (row indices i q + j), lower "
            "of them."),
      field("rows_to_rank", &FunctionalDimension::rows_to_rank,
            "1 + the last pivot row: the leading rows that reach lower."),
      field("rows_used", &FunctionalDimension::rows_used, "Rows computed and eliminated."),
      field("columns_used", &FunctionalDimension::columns_used,
            "Columns eliminated: the non-zero columns of J_X (among `columns` when given)."),
      field("prime", &FunctionalDimension::prime, "The prime of the elimination."),
      field("prime_random", &FunctionalDimension::prime_random,
            "Whether the prime was drawn at random (prime=None)."),
      field("monte_carlo_rank", &FunctionalDimension::monte_carlo_rank,
            "With a random prime and all columns: lower, which is rank J_X except with "
            "probability at most monte_carlo_error over the draw of the prime; else None."),
      field("monte_carlo_error", &FunctionalDimension::monte_carlo_error,
            "The bound on the probability that monte_carlo_rank is wrong (0 when certified), "
            "or None."),
      field("margin", &FunctionalDimension::margin,
            "min |pre-activation| over samples and kinked nodes."),
      field("on_kink", &FunctionalDimension::on_kink,
            "Some pre-activation is exactly 0 (ReLU'(0) = 0 is used)."),
      field("pattern_certified", &FunctionalDimension::pattern_certified,
            "The activation pattern is that of exact arithmetic."),
      field("pattern_note", &FunctionalDimension::pattern_note,
            "Where the pattern is not certain (empty when certified)."),
      field("numerical", &FunctionalDimension::numerical,
            "The NumericalRank of J_X (singular values by dense SVD), or None."),
      field("numerical_note", &FunctionalDimension::numerical_note,
            "Why numerical is None (empty otherwise)."),
      field("explanation", &FunctionalDimension::explanation, "One sentence: why status."));
  cls.def_property_readonly(
         "status", [](const FunctionalDimension& f) { return std::string(to_string(f.status)); },
         "'certified', 'bounds' or 'pattern_uncertain'.")
      .def_property_readonly(
          "rank", [](const FunctionalDimension& f) { return f.rank(); },
          "rank J_X when certified, else None.");
  def_to_dict(cls, "`pathlift rank --data --json`'s object (docs/functional-dimension.md).");
  cls.def("__repr__", [](const FunctionalDimension& f) {
    return fmt::format("<pathlift.FunctionalDimension: {} <= rank J_X <= {} ({}), {} x {}>",
                       f.lower, f.upper, to_string(f.status), f.rows, f.d);
  });

  m.def(
      "functional_dimension",
      [](const NetworkArg& net, const py::object& theta, const py::object& X,
         std::optional<Prime> prime, const py::object& numerical, double tolerance,
         const py::object& columns, int threads, const py::object& progress,
         std::size_t max_memory) {
        if (!std::isfinite(tolerance) || tolerance < 0) {
          throw std::invalid_argument(
              fmt::format("tolerance must be >= 0 (0: the default), got {}", tolerance));
        }
        if (prime && *prime == 0) {
          throw std::invalid_argument(
              "functional_dimension: the modulus 0 is not a prime below 2^63 (prime=None draws "
              "one at random)");
        }
        FunctionalDimensionOptions o;
        o.prime = prime.value_or(0);
        o.engine =
            engine_options(threads, net.unroll_limit(max_memory), progress, "functional dimension");
        o.numerical.when = numerical_when(numerical);
        o.numerical.tolerance = tolerance;
        o.numerical.engine.max_memory = o.engine.max_memory;
        if (!columns.is_none()) {
          o.columns = columns.cast<std::vector<Index>>();
        }
        (void)net.dag(max_memory);  // a LayerNetwork unrolled within its limit, kept
        const auto x = data_argument(X);
        return with_theta(net, theta, [&](std::span<const double> t) {
          return functional_dimension(net.model(), t, as_matrix(x), o);
        });
      },
      py::arg("net"), py::arg("theta"), py::arg("X"), py::kw_only(), py::arg("prime") = py::none(),
      py::arg("numerical") = py::none(), py::arg("tolerance") = 0.0,
      py::arg("columns") = py::none(), py::arg("threads") = 0, py::arg("progress") = py::none(),
      py::arg("max_memory") = 0,
      R"doc(The batch functional dimension: the rank of J_X = d f(X; theta) / d theta ((n q) x d,
row i q + j is output j on sample i), certified (Grigsby et al. 2022; docs/functional-dimension.md).

lower: the exact rank mod `prime` of J_X's entries at the forward pass's activation pattern
(theta and X are dyadic rationals, reduced exactly), eliminated in growing blocks until the
rank reaches upper; prime=None draws it at random among the primes in [2^60, 2^61), and
then (with columns=None) monte_carlo_rank = lower is rank J_X except with probability at
most monte_carlo_error; upper: min(q x distinct samples, the certified rank of dPhi, d minus
the kernel known exactly). Returns a FunctionalDimension: status 'certified' when they meet, else
'bounds'; 'pattern_uncertain' when a pre-activation is within rounding of a kink. pivot_rows
are the first rows that reach the rank. columns: parameter indices whose columns alone are
eliminated (None: all): the lower bound is then their rank, still a lower bound, for a model
whose whole J_X does not fit. numerical: None computes the numerical rank of J_X
(dense SVD) unless it would take more than about 20 s, True always, False never. X: n x r
float64 (a LayerNetwork's flattened input; it is unrolled within max_memory). theta: d
finite numbers, None for the stored weights. TooLarge (MemoryError) when a block of rows
does not fit in max_memory. The GIL is released.

Example::

    net = pathlift.feed_forward(4, [6, 6], 2)
    theta = pathlift.normal_weights(net.d, 0)
    fd = pathlift.functional_dimension(net, theta, pathlift.random_data(net, 50, 1))
    fd.rank   # 72: d - h = 86 - 12 = 74, less two edges that never carry a value)doc");
}

}  // namespace pathlift::python
