// rank.hpp's result types: RankCertificate, JacobianRankCertificate, NumericalRank, RankReport
// and SymmetryDimension (with rescaling_symmetry_dimension), registered before bind_rank's
// functions, whose signatures mention them.

#include <fmt/format.h>

#include "pathlift/symmetry.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common.hpp"
#include "pathlift/builtins.hpp"
#include "pathlift/counting.hpp"
#include "pathlift/error.hpp"
#include "pathlift/kernel.hpp"
#include "pathlift/lifting.hpp"
#include "pathlift/limits.hpp"
#include "pathlift/rank.hpp"
#include "results.hpp"

namespace pathlift::python {

namespace {

void bind_rank_certificates(py::module_& m) {
  py::class_<RankCertificate> certificate(m, "RankCertificate", R"doc(
A certified rank of the skeleton B (certify_rank): lower <= rank(B) over Q <= upper, proved
when the bounds meet. lower = rank modulo `prime` of the eliminated matrix (B, some of its
rows, or B^T B); upper = d minus the number of rescaling vectors z_v (+1 on the edges into
hidden node v, -1 on the edges out of it) verified in the kernel and independent.
)doc");
  def_fields(certificate, field("d", &RankCertificate::d, "Columns of B (edges)."),
             field("h", &RankCertificate::h, "Hidden nodes."),
             field("expected", &RankCertificate::expected, "d - h (Theorem 1)."),
             field("lower", &RankCertificate::lower, "The certified lower bound (rank mod p)."),
             field("upper", &RankCertificate::upper,
                   "The certified upper bound (d - verified rescaling vectors)."),
             field("prime", &RankCertificate::prime, "The prime of the elimination."));
  certificate.def_property_readonly(
      "method", [](const RankCertificate& c) { return std::string(to_string(c.method)); },
      "The lower bound's method: 'skeleton' (B), 'gram' (B^T B), 'path_basis' or "
      "'symmetry' (d - h_sym by the symmetry theorem, h_sym exact).");
  def_fields(certificate, field("rows_eliminated", &RankCertificate::rows_eliminated,
                                "Rows of B eliminated (a subset suffices), or d for B^T B."));
  certificate
      .def_property_readonly(
          "kernel_failures",
          [](const RankCertificate& c) { return index_array(c.kernel_failures); },
          "int64 array: hidden nodes whose z_v failed the kernel check (empty for a true "
          "skeleton).")
      .def_property_readonly(
          "kernel_failure_row",
          [](const RankCertificate& c) { return index_or_none(c.kernel_failure_row); },
          "The first row (path, or Gram row) that showed a kernel failure, or None.")
      .def_property_readonly("certified", &RankCertificate::certified,
                             "True when lower == upper: rank(B) is then proved.")
      .def_property_readonly(
          "rank",
          [](const RankCertificate& c) -> py::object {
            return c.certified() ? py::object(py::int_(c.lower)) : py::object(py::none());
          },
          "rank(B) when certified, else None.")
      .def("__repr__", [](const RankCertificate& c) {
        return fmt::format("<pathlift.RankCertificate: {} <= rank(B) <= {}{}, d - h = {}>", c.lower,
                           c.upper, c.certified() ? " (certified)" : "", c.expected);
      });

  py::class_<JacobianRankCertificate> jacobian(m, "JacobianRankCertificate", R"doc(
Certified bounds on rank(dPhi(theta)) over Q (certify_jacobian_rank): lower <= rank <= upper.
method: 'identity' (no theta_k is 0: rank(dPhi) = rank(B)), 'elimination' (elimination modulo
an odd prime of the exact entries of dPhi, products of doubles being dyadic rationals),
'zero_pattern' (zero weights, no path enumerated: the rank of B without the zero edges plus
the zero parameters a path crosses as its only zero edge, exact) or 'none' (zero weights and
no certificate: lower bound 0). upper = the certified upper bound of rank(B), which bounds
rank(dPhi(theta)) at every theta.
)doc");
  def_fields(
      jacobian, field("lower", &JacobianRankCertificate::lower, "The certified lower bound."),
      field("upper", &JacobianRankCertificate::upper, "The certified upper bound."),
      field("prime", &JacobianRankCertificate::prime, "The prime of the elimination."),
      field("zero_weights", &JacobianRankCertificate::zero_weights, "How many theta_k are 0."));
  jacobian
      .def_property_readonly(
          "method",
          [](const JacobianRankCertificate& c) { return std::string(to_string(c.method)); },
          "'identity', 'elimination', 'zero_pattern' or 'none'.")
      .def_property_readonly("certified", &JacobianRankCertificate::certified,
                             "True when lower == upper.")
      .def_property_readonly(
          "rank",
          [](const JacobianRankCertificate& c) -> py::object {
            return c.certified() ? py::object(py::int_(c.lower)) : py::object(py::none());
          },
          "rank(dPhi(theta)) when certified, else None.")
      .def("__repr__", [](const JacobianRankCertificate& c) {
        return fmt::format("<pathlift.JacobianRankCertificate: {} <= rank(dPhi) <= {} ({}{})>",
                           c.lower, c.upper, to_string(c.method),
                           c.certified() ? ", certified" : "");
      });

  py::class_<NumericalRank> numerical(m, "NumericalRank",
                                      "The numerical rank of a matrix (dPhi) from its singular "
                                      "values (numerical_rank).");
  def_fields(numerical, field("rank", &NumericalRank::rank, "Singular values above the tolerance."),
             field("tolerance", &NumericalRank::tolerance,
                   "Absolute tolerance: singular values > tolerance are kept."),
             field("gap", &NumericalRank::gap,
                   "sigma_rank / sigma_(rank+1), the last kept over the first dropped singular "
                   "value (over the tolerance when none is dropped or it is exactly 0; inf for "
                   "the zero matrix)."));
  numerical.def_property_readonly(
      "status", [](const NumericalRank& n) { return std::string(to_string(n.status)); },
      "'conclusive' (gap >= min_gap), 'inconclusive', or 'failed' (a singular value is not "
      "finite; rank is then 0 and meaningless).");
  def_fields(numerical, field("non_finite", &NumericalRank::non_finite,
                              "How many singular values are not finite."));
  numerical.def_property_readonly(
      "method", [](const NumericalRank& n) { return std::string(to_string(n.method)); },
      "'svd' or 'gram_eigenvalues': the method used.");
  def_fields(numerical, array_field("singular_values", &NumericalRank::singular_values,
                                    "float64 array: the min(P, d) singular values, descending."));
  numerical.def("__repr__", [](const NumericalRank& n) {
    return fmt::format("<pathlift.NumericalRank: rank {}, tolerance {:.3g}, gap {:.3g} ({})>",
                       n.rank, n.tolerance, n.gap, to_string(n.status));
  });
}

void bind_rank_reports(py::module_& m) {
  py::class_<RankReport> report(m, "RankReport", R"doc(
Theorem 1 checked at theta (check_rank_theorem): rank(B) and rank(dPhi) certified, rank(dPhi)
also numerical, compared with d - h. status: 'verified', 'theta_in_null_set' (rank(dPhi) <
d - h at a theta with zero coordinates: the null set the theorem excludes, not a failure),
'ill_conditioned' (exact ranks agree; the floating-point rank does not), 'numerical_failure'
(exact ranks agree; the singular values are not finite or exceed rank(B)),
'rank_J_inconclusive', 'rank_J_not_computed', 'rank_B_uncertified' or 'theorem_fails' (only
from exact ranks). docs/rank.md has the table.
)doc");
  def_to_dict(report,
              "The report's JSON form as a dict (the object `pathlift rank --json` prints; keys "
              "in docs/rank.md).");
  def_fields(report, field("d", &RankReport::d, "Edges."),
             field("h", &RankReport::h, "Hidden nodes."),
             field("h_sym", &RankReport::h_sym,
                   "The dimension of the rescaling symmetries: h with one parameter per edge; "
                   "with shared parameters or fixed edges, expected = d - h_sym."),
             field("one_parameter_per_edge", &RankReport::one_parameter_per_edge,
                   "False when parameters are shared or edges fixed (Theorem 1 then does not "
                   "apply; the bound is d - h_sym)."),
             field("expected", &RankReport::expected, "d - h (d - h_sym with shared parameters)."),
             field("rank_B", &RankReport::rank_B, "The RankCertificate of B."));
  report
      .def_property_readonly(
          "rank_J",
          [](const RankReport& r) -> py::object {
            return r.rank_J ? py::cast(*r.rank_J) : py::object(py::none());
          },
          "The NumericalRank of dPhi, or None when it was not computed (see rank_J_note).")
      .def_property_readonly(
          "rank_J_exact",
          [](const RankReport& r) -> py::object {
            return r.rank_J_exact ? py::cast(*r.rank_J_exact) : py::object(py::none());
          },
          "The JacobianRankCertificate of dPhi(theta), or None when theta was not given.");
  def_fields(report, field("rank_J_note", &RankReport::rank_J_note,
                           "Why the numerical rank was not computed ('' when it was)."));
  report
      .def_property_readonly(
          "zero_weights", [](const RankReport& r) { return index_array(r.zero_weights); },
          "int64 array: the edges k with theta_k = 0.")
      .def_property_readonly(
          "status", [](const RankReport& r) { return std::string(to_string(r.status)); },
          "The verdict (see the class docstring).");
  def_fields(report, field("explanation", &RankReport::explanation, "One sentence saying why."));
  report
      .def_property_readonly(
          "failed", [](const RankReport& r) { return is_failure(r.status); },
          "True for the statuses that contradict the theorem's equalities "
          "('rank_B_uncertified', 'theorem_fails'): the CLI exits 1.")
      .def("__repr__", [](const RankReport& r) {
        return fmt::format("<pathlift.RankReport: d - h = {}, rank(B) {}, rank(dPhi) {}: {}>",
                           r.expected,
                           r.rank_B.certified() ? fmt::format("{}", r.rank_B.lower) : "?",
                           r.rank_J ? fmt::format("{}", r.rank_J->rank) : "-", to_string(r.status));
      });

  py::class_<SymmetryDimension> symmetry(m, "SymmetryDimension",
                                         "The dimension h_sym of the rescaling symmetries "
                                         "(rescaling_symmetry_dimension) and how it was found.");
  def_fields(
      symmetry,
      field("h_sym", &SymmetryDimension::h_sym,
            "Dimension of the changes of theta that rescalings produce."),
      field("classes", &SymmetryDimension::classes,
            "Node classes left free after the forced equalities."),
      field("constraints", &SymmetryDimension::constraints,
            "Distinct constraints left among the classes."),
      field("constraint_rank", &SymmetryDimension::constraint_rank, "Their exact rank over Q."),
      field("unused_params", &SymmetryDimension::unused_params,
            "Parameters that no edge carries."));
  symmetry.def("__repr__", [](const SymmetryDimension& s) {
    return fmt::format("<pathlift.SymmetryDimension h_sym={} classes={} constraints={}>", s.h_sym,
                       s.classes, s.constraints);
  });
  m.def(
      "rescaling_symmetry_dimension",
      [](const NetworkArg& arg, bool unroll, std::size_t max_memory) {
        EngineOptions options;
        options.max_memory = max_memory;
        if (unroll) {
          const Network& net = arg.dag(max_memory);
          py::gil_scoped_release release;
          return rescaling_symmetry_dimension(net, options);
        }
        py::gil_scoped_release release;
        return rescaling_symmetry_dimension(arg.model(), options);
      },
      py::arg("net"), py::kw_only(), py::arg("unroll") = false, py::arg("max_memory") = 0,
      "h_sym, the dimension of the rescaling symmetries of a network with shared parameters "
      "and fixed edges (docs/rank.md#weight-sharing): log-scales alpha on the nodes, 0 on "
      "inputs and outputs, with alpha(dst) - alpha(src) equal over the edges of one parameter "
      "and 0 over fixed edges. rank(B) = d - h_sym. Exact (integer ranks). With one parameter "
      "per edge, h_sym = h. A layer network is never unrolled (per entry and per channel, "
      "docs/rank.md#layer-graphs); unroll=True computes it on its unrolled DAG instead (a "
      "check: the two are equal).");
}

}  // namespace

void bind_rank_results(py::module_& m) {
  bind_rank_certificates(m);
  bind_rank_reports(m);
}

}  // namespace pathlift::python
