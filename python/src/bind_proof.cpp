// proof.hpp: the paper's proof of Theorem 1 executed on a network, as a certificate whose steps
// are data (u, k, e, the edge sets, the row operations, the ranks, the intermediate matrices as
// scipy / numpy), and its independent re-check.

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common.hpp"
#include "pathlift/proof.hpp"
#include "results.hpp"

namespace pathlift::python {

namespace {

/// Every claim, in declaration order.
std::vector<ProofClaim> all_claims() {
  std::vector<ProofClaim> out;
  for (int c = 0; c <= static_cast<int>(ProofClaim::rank_certificate); ++c) {
    out.push_back(static_cast<ProofClaim>(c));
  }
  return out;
}

py::object sparse_int_csr(const SparseIntMatrix& m) {
  const Index nnz = m.nnz();
  py::array_t<std::int64_t> indptr(static_cast<py::ssize_t>(m.rows() + 1));
  py::array_t<std::int64_t> indices(static_cast<py::ssize_t>(nnz));
  py::array_t<std::int64_t> data(static_cast<py::ssize_t>(nnz));
  std::int64_t* ip = indptr.mutable_data();
  std::int64_t* ix = indices.mutable_data();
  std::int64_t* dv = data.mutable_data();
  Index k = 0;
  ip[0] = 0;
  for (Index r = 0; r < m.rows(); ++r) {
    for (const IntEntry& e : m.row_entries[static_cast<std::size_t>(r)]) {
      ix[k] = e.col;
      dv[k] = e.value;
      ++k;
    }
    ip[r + 1] = k;
  }
  py::module_ sparse = py::module_::import("scipy.sparse");
  return sparse.attr("csr_matrix")(py::make_tuple(data, indices, indptr),
                                   py::arg("shape") = py::make_tuple(m.rows(), m.cols));
}

template <class T>
py::list reference_list(std::vector<T>& items, const py::object& parent) {
  py::list out;
  for (T& item : items) {
    out.append(py::cast(&item, py::return_value_policy::reference_internal, parent));
  }
  return out;
}

py::list issue_list(const std::vector<ProofIssue>& issues) {
  py::list out;
  for (const ProofIssue& i : issues) {
    out.append(py::cast(i));
  }
  return out;
}

py::array_t<std::int64_t> row_operations(const ProofStep& s) {
  const auto n = static_cast<py::ssize_t>(s.row_operations.size());
  py::array_t<std::int64_t> out({n, py::ssize_t{2}});
  auto w = out.mutable_unchecked<2>();
  for (py::ssize_t i = 0; i < n; ++i) {
    w(i, 0) = s.row_operations[static_cast<std::size_t>(i)].first;
    w(i, 1) = s.row_operations[static_cast<std::size_t>(i)].second;
  }
  return out;
}

template <class V>
auto step_array(V ProofStep::*member) {
  return [member](const ProofStep& s) { return index_array(s.*member); };
}

void bind_proof_matrices(py::module_& m) {
  py::class_<ProofIssue> issue(m, "ProofIssue", R"doc(
A claim of the proof that failed (ProofCertificate.failure, ProofCheck.failure), or a claim
of the paper that is false as stated while the step still stands (findings): the step, the
claim, the path (row) / edge (column) / node involved in that step's network, and a sentence.
)doc");
  def_fields(issue, field("step", &ProofIssue::step, "The step index (0 = the user's network)."));
  issue
      .def_property_readonly(
          "claim", [](const ProofIssue& i) { return std::string(claim_id(i.claim)); },
          "The claim's id: 'choice', 'definition2', 'lemma2', ... (proof_claims()).")
      .def_property_readonly(
          "statement", [](const ProofIssue& i) { return std::string(claim_statement(i.claim)); },
          "The claim as the paper states it, naming the lemma.")
      .def_property_readonly(
          "path", [](const ProofIssue& i) { return index_or_none(i.path); },
          "The path (canonical index in the step's network), or None.")
      .def_property_readonly(
          "edge", [](const ProofIssue& i) { return index_or_none(i.edge); },
          "The edge (column) of the step's network, or None.")
      .def_property_readonly(
          "node", [](const ProofIssue& i) { return index_or_none(i.node); },
          "The node of the step's network, or None.");
  def_fields(issue, field("message", &ProofIssue::message,
                          "One sentence: step, claim, path and column with their names."));
  issue.def("__str__", [](const ProofIssue& i) { return i.message; })
      .def("__repr__", [](const ProofIssue& i) {
        return fmt::format("<pathlift.ProofIssue step {} {}: {}>", i.step, claim_id(i.claim),
                           i.message);
      });

  py::class_<ProofMatrix> matrix(m, "ProofMatrix", R"doc(
One matrix of a proof step (B, B', B'', B~, B~', B~'' or the base case's B~): rows are the
canonical paths of the step's network, columns its edges; row_order / col_order give the
order the paper prints them in, and dense() the matrix in that order. set() changes an entry
(to corrupt a certificate and watch check_proof catch it).
)doc");
  def_fields(matrix,
             field("name", &ProofMatrix::name, "'B', \"B'\", \"B''\", 'B~', \"B~'\", \"B~''\"."));
  matrix
      .def_property_readonly(
          "shape",
          [](const ProofMatrix& p) { return py::make_tuple(p.matrix.rows(), p.matrix.cols); },
          "(rows, cols) of the matrix.")
      .def_property_readonly(
          "matrix", [](const ProofMatrix& p) { return sparse_int_csr(p.matrix); },
          "The matrix as an int64 scipy.sparse.csr_matrix (a copy), rows = paths and columns = "
          "edges of the step's network in their own order.")
      .def_property_readonly(
          "row_order", [](const ProofMatrix& p) { return index_array(p.row_order); },
          "int64 array: row_order[i] = the row printed i-th.")
      .def_property_readonly(
          "col_order", [](const ProofMatrix& p) { return index_array(p.col_order); },
          "int64 array: col_order[j] = the column printed j-th.")
      .def(
          "dense",
          [](const ProofMatrix& p, std::size_t max_memory) {
            return owning_matrix<std::int64_t>(
                displayed(p, EngineOptions{.max_memory = max_memory}));
          },
          py::arg("max_memory") = 0,
          "The matrix in print order (rows row_order, columns col_order) as a dense int64 numpy "
          "array; TooLarge (MemoryError) beyond max_memory.")
      .def(
          "at", [](const ProofMatrix& p, Index r, Index c) { return p.matrix.at(r, c); },
          py::arg("row"), py::arg("col"),
          "Entry (row, col) in the matrix's own order; IndexError outside.")
      .def(
          "set",
          [](ProofMatrix& p, Index r, Index c, std::int64_t value) { p.matrix.set(r, c, value); },
          py::arg("row"), py::arg("col"), py::arg("value"),
          "Sets entry (row, col) (own order; IndexError outside). The certificate no longer "
          "matches the proof: check_proof reports which claim broke.")
      .def("__repr__", [](const ProofMatrix& p) {
        return fmt::format("<pathlift.ProofMatrix {}: {} x {}, nnz {}>", p.name, p.matrix.rows(),
                           p.matrix.cols, p.matrix.nnz());
      });
}

void bind_proof_steps(py::module_& m) {
  py::class_<ProofStep> step(m, "ProofStep", R"doc(
One step of the induction on a network N_i (step 0: the user's network). kind 'induction':
u (the last hidden node of a topological order, inputs first) becomes an output; k = the first
node after u with an edge from u; e = that edge; E-u, E+u, E-k; Algorithm 2's paths and row
operations; E_end; the reduced network; rank(B) = #E_end + rank(B_reduced). kind 'base'
(h = 0): Algorithm 1's row operations, rank(B) = d. Node and edge indices are those of this
step's network (original_edge maps edges to the user's network).
)doc");
  step.def_property_readonly(
          "kind",
          [](const ProofStep& s) { return s.kind == ProofStepKind::base ? "base" : "induction"; },
          "'induction' or 'base'.")
      .def_property_readonly(
          "network", [](const ProofStep& s) -> const Network& { return s.network; },
          "N_i, this step's network.")
      .def_property_readonly("original_edge", step_array(&ProofStep::original_edge),
                             "int64 array: edge of N_i -> edge of the user's network.");
  def_fields(step, field("d", &ProofStep::d, "Edges of N_i."),
             field("h", &ProofStep::h, "Hidden nodes of N_i."),
             field("num_paths", &ProofStep::num_paths, "Paths of N_i."));
  step.def_property_readonly(
          "u", [](const ProofStep& s) { return index_or_none(s.u); },
          "The hidden node made an output (None for the base case).")
      .def_property_readonly(
          "k", [](const ProofStep& s) { return index_or_none(s.k); },
          "The first node after u with an edge from u (None for the base case).")
      .def_property_readonly(
          "e", [](const ProofStep& s) { return index_or_none(s.e); },
          "The edge u -> k (None for the base case).")
      .def_property_readonly("e_minus_u", step_array(&ProofStep::e_minus_u),
                             "int64 array: E-u, the edges into u.")
      .def_property_readonly("e_plus_u", step_array(&ProofStep::e_plus_u),
                             "int64 array: E+u, the edges out of u but e.")
      .def_property_readonly("e_minus_k", step_array(&ProofStep::e_minus_k),
                             "int64 array: E-k, the edges into k but e.")
      .def_property_readonly("crossing_k", step_array(&ProofStep::crossing_k),
                             "int64 array: Algorithm 2's paths (crossing k, not ending at k), "
                             "longest first.")
      .def_property_readonly("e_end", step_array(&ProofStep::e_end),
                             "int64 array: E_end, the last edges of those paths (removed).")
      .def_property_readonly("clearing_row", step_array(&ProofStep::clearing_row),
                             "int64 array: the unit row (path) clearing each E_end column.")
      .def_property_readonly("reduced_edge", step_array(&ProofStep::reduced_edge),
                             "int64 array: edge of N_i -> edge of N_(i+1), -1 for e and E_end.")
      .def_property_readonly("reduced_node", step_array(&ProofStep::reduced_node),
                             "int64 array: node of N_i -> node of N_(i+1), -1 if dropped.")
      .def_property_readonly("dropped_nodes", step_array(&ProofStep::dropped_nodes),
                             "int64 array: nodes left without any edge (they drop out).")
      .def_property_readonly("new_inputs", step_array(&ProofStep::new_inputs),
                             "int64 array: nodes that lost every incoming edge but not all.");
  def_fields(
      step, field("null_rows", &ProofStep::null_rows, "Rows of [H; D] that are zero."),
      field("repeated_rows", &ProofStep::repeated_rows, "Rows of [H; D] equal to an earlier one."));
  step.def_property_readonly("row_operations", &row_operations,
                             "(n, 2) int64 array: row p -= row p~ for each (p, p~), in "
                             "execution order (Algorithm 1 or 2).");
  def_fields(step, field("rank", &ProofStep::rank, "The certified rank(B) of N_i."));
  step.def_property_readonly(
          "reduced_rank", [](const ProofStep& s) { return index_or_none(s.reduced_rank); },
          "The certified rank of the reduced skeleton (induction step), else None.")
      .def_property_readonly(
          "rank_after", [](const ProofStep& s) { return index_or_none(s.rank_after); },
          "rank mod p of B~'' (induction) or B~ (base), or None if not computed.")
      .def_property_readonly(
          "matrices",
          [](const py::object& self) {
            return reference_list(self.cast<ProofStep&>().matrices, self);
          },
          "The step's ProofMatrix objects (B, B', B'', B~, B~', B~'' or B, B~); empty unless "
          "prove_rank(..., keep_matrices=True). Views into the certificate: set() on one "
          "changes the certificate.")
      .def(
          "matrix",
          [](const py::object& self, const std::string& name) {
            auto& s = self.cast<ProofStep&>();
            for (ProofMatrix& pm : s.matrices) {
              if (pm.name == name) {
                return py::cast(&pm, py::return_value_policy::reference_internal, self);
              }
            }
            throw py::key_error(fmt::format("step has no matrix '{}' (kept: {} matrices)", name,
                                            s.matrices.size()));
          },
          py::arg("name"), "The matrix of that name (KeyError if not kept).")
      .def_property_readonly(
          "findings", [](const ProofStep& s) { return issue_list(s.findings); },
          "Claims of the paper false as stated here (a list of ProofIssue).")
      .def("__repr__", [](const ProofStep& s) {
        if (s.kind == ProofStepKind::base) {
          return fmt::format("<pathlift.ProofStep base: d = {}, P = {}, rank(B) = {}>", s.d,
                             s.num_paths, s.rank);
        }
        return fmt::format(
            "<pathlift.ProofStep induction: u = {}, k = {}, e = {}, #E_end = {}, rank(B) = {}>",
            s.network.node_name(s.u), s.network.node_name(s.k), s.e, s.e_end.size(), s.rank);
      });
}

void bind_proof_certificates(py::module_& m) {
  py::class_<ProofCertificate> certificate(m, "ProofCertificate", R"doc(
The paper's proof of Theorem 1 executed on a network (prove_rank): h induction steps then the
base case, each checked claim by claim. proved is True when every step went through; failure
is the first claim that failed (the proof stops there); findings are claims of the paper
false as stated where the step still stands.
)doc");
  def_to_dict(certificate,
              "The JSON form (to_json): `pathlift prove --json`'s keys after its header.");
  def_fields(certificate, field("d", &ProofCertificate::d, "Edges of the user's network."),
             field("h", &ProofCertificate::h, "Hidden nodes of the user's network."));
  certificate
      .def_property_readonly(
          "steps",
          [](const py::object& self) {
            return reference_list(self.cast<ProofCertificate&>().steps, self);
          },
          "The ProofStep objects, in order (views into the certificate).")
      .def_property_readonly(
          "findings", [](const ProofCertificate& c) { return issue_list(c.findings); },
          "Every step's findings, in order (ProofIssue).")
      .def_property_readonly(
          "failure",
          [](const ProofCertificate& c) -> py::object {
            return c.failure ? py::cast(*c.failure) : py::object(py::none());
          },
          "The first claim that failed (a ProofIssue), or None.")
      .def_property_readonly("proved", &ProofCertificate::proved,
                             "True when the proof went through to the base case.")
      .def_property_readonly(
          "rank",
          [](const ProofCertificate& c) -> py::object {
            return c.proved() ? py::object(py::int_(c.rank)) : py::object(py::none());
          },
          "rank(B) = d - h when proved, else None.")
      .def("__repr__", [](const ProofCertificate& c) {
        return fmt::format(
            "<pathlift.ProofCertificate: d = {}, h = {}, {} steps, {}>", c.d, c.h, c.steps.size(),
            c.proved() ? fmt::format("proved rank(B) = {}", c.rank) : std::string("NOT proved"));
      });

  py::class_<ProofCheck>(m, "ProofCheck", "The verdict of check_proof.")
      .def_property_readonly(
          "failure",
          [](const ProofCheck& c) -> py::object {
            return c.failure ? py::cast(*c.failure) : py::object(py::none());
          },
          "The first failure (a ProofIssue: step, claim, path or column), or None.")
      .def_property_readonly(
          "findings", [](const ProofCheck& c) { return issue_list(c.findings); },
          "Findings (claims false as stated where the step stands).")
      .def_property_readonly("ok", &ProofCheck::ok, "True when nothing failed.")
      .def("__bool__", &ProofCheck::ok)
      .def("__repr__", [](const ProofCheck& c) {
        return c.failure ? fmt::format("<pathlift.ProofCheck: FAILED: {}>", c.failure->message)
                         : std::string("<pathlift.ProofCheck: ok>");
      });
}

void bind_proof_functions(py::module_& m) {
  m.def(
      "prove_rank",
      [](const NetworkArg& arg, bool keep_matrices, bool check_rank_after, Prime prime, int threads,
         const py::object& progress, std::size_t max_memory) {
        const Network& net = arg.dag(max_memory);
        ProveOptions o;
        o.keep_matrices = keep_matrices;
        o.check_rank_after = check_rank_after;
        o.prime = prime;
        o.engine = engine_options(threads, max_memory, progress, "prove_rank");
        py::gil_scoped_release release;
        return prove_rank(net, o);
      },
      py::arg("net"), py::kw_only(), py::arg("keep_matrices") = false,
      py::arg("check_rank_after") = true, py::arg("prime") = default_prime, py::arg("threads") = 0,
      py::arg("progress") = py::none(), py::arg("max_memory") = 0,
      R"doc(Runs the paper's proof of Theorem 1 (appendix "Rank_Skeleton") on net: h induction
steps (the last hidden node becomes an output; Lemmas 3 and 4, the column operations,
Algorithm 2, the reduced network built and recursed on) then the base case (Algorithm 1,
Lemma 2), checking every claim on every path and matrix; stops at the first failure.
Returns a ProofCertificate (steps as data, findings, failure, proved, rank).
keep_matrices: keep every step's matrices (B, B', B'', B~, B~', B~''), needed to inspect or
corrupt them. check_rank_after: also compute rank(B~'') mod p at every step. prime: a prime
< 2^63. TooLarge (MemoryError) when a step's paths exceed max_memory. The GIL is released.
Complexity: O(h (P d + nnz log nnz)).

Example::

    cert = pathlift.prove_rank(pathlift.sketch_h1(), keep_matrices=True)
    cert.proved, cert.rank, cert.steps[0].matrix("B~").dense())doc");

  m.def(
      "check_proof",
      [](const ProofCertificate& cert, Prime prime, int threads, const py::object& progress,
         std::size_t max_memory) {
        ProofCheckOptions o;
        o.prime = prime;
        o.engine = engine_options(threads, max_memory, progress, "check_proof");
        py::gil_scoped_release release;
        return check_proof(cert, o);
      },
      py::arg("cert"), py::arg("prime") = default_prime, py::kw_only(), py::arg("threads") = 0,
      py::arg("progress") = py::none(), py::arg("max_memory") = 0,
      "Re-checks a certificate from its data: each step's choice of u, k, e; its matrices "
      "against the claims and the recorded operations (recomputed when not kept); Lemmas 2-4 "
      "on every path; the reduced network against the next step; the ranks. Returns a "
      "ProofCheck whose failure names the step, the claim and the path or column. TooLarge "
      "(MemoryError) when a step's paths or matrices exceed max_memory. The GIL is released.");

  m.def(
      "proof_claims",
      [] {
        py::dict out;
        for (const ProofClaim c : all_claims()) {
          out[py::str(std::string(claim_id(c)))] = std::string(claim_statement(c));
        }
        return out;
      },
      "The claims the proof checks: {id: statement as the paper states it}.");
}

}  // namespace

void bind_proof(py::module_& m) {
  bind_proof_matrices(m);
  bind_proof_steps(m);
  bind_proof_certificates(m);
  bind_proof_functions(m);
}

}  // namespace pathlift::python
