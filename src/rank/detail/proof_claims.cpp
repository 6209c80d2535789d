#include "src/rank/detail/proof_claims.hpp"

#include <fmt/format.h>

#include <array>
#include <utility>

#include "pathlift/error.hpp"

namespace pathlift::detail::proof {

namespace {

constexpr std::array<ClaimText, 17> claim_texts{{
    {"choice", "choice of u, k, e",
     "choice of u, k, e: u is the last hidden node of a topological order with the inputs "
     "first, k the first node after u with an edge from u, e that edge; E-u = edges into u, "
     "E+u = edges out of u but e, E-k = edges into k but e"},
    {"definition2", "Definition 2",
     "Definition 2: B[p, j] = 1 if edge j is on path p, else 0 (the step's matrix is the "
     "skeleton of the step's network)"},
    {"lemma2", "Lemma 2",
     "Lemma 2 (lem:H0SK): with no hidden node, a path of length l >= 2 coincides with a path "
     "of length l - 1 on its first l - 1 edges"},
    {"algorithm1", "Algorithm 1",
     "Algorithm 1 (eq. symH0SK): after the row operations each row of B~ has one non-zero, a 1 "
     "at the path's last edge"},
    {"no_zero_column", "no zero column",
     "base case: B~ has no zero column (every edge is the last edge of a path), so "
     "rank(B~) = d"},
    {"reordering", "reordering",
     "reordering: B' is B with the columns e, E+u, E-u, E-k, the rest; B'' is B' with the rows "
     "through e, through E+u, crossing k only, the rest"},
    {"unique_composition", "Lemma UniqueCompositionP",
     "Lemma (lem:UniqueCompositionP): a path through u uses exactly one edge of E-u and one "
     "edge of {e} u E+u"},
    {"lemma3", "Lemma 3",
     "Lemma 3 (lem:inEkNotinEh): no path goes through both an edge of E-u u E+u u {e} and an "
     "edge of E-k"},
    {"column_operations", "column operations",
     "column operations: B~ is B'' with column e replaced by e - sum(E-u) + sum(E+u), and "
     "that column vanishes (z_u is in the kernel of B)"},
    {"lemma4", "Lemma 4",
     "Lemma 4 (lem:ppcoincide): a path of length l >= 2 crossing k and not ending at k "
     "coincides with a path of length l - 1 on its first l - 1 edges"},
    {"algorithm2", "Algorithm 2",
     "Algorithm 2 (eq. symcoincideSK2): after the row operations the row of each path crossing "
     "k and not ending at k is the unit vector of its last edge"},
    {"clearing", "B~'' clearing",
     "B~'': each E_end column is cleared with one unit row and is then non-zero only there"},
    {"reduced_network", "reduced network",
     "reduced network: u becomes an output, e and E_end are removed, nodes left without an "
     "edge drop out; it has d - 1 - #E_end edges and h - 1 hidden nodes"},
    {"reduced_skeleton", "[H; D] = reduced skeleton",
     "[H; D] (B~'' without the unit rows and the columns e, E_end) is the skeleton of the "
     "reduced network up to null and repeated rows"},
    {"rank_preserved", "rank(B~'') = rank(B)",
     "rank(B~'') = rank(B): the row and column operations are invertible (checked mod p)"},
    {"rank_equality", "rank equality",
     "rank equality: rank(B) = #E_end + rank(B_reduced) (base case: rank(B) = d)"},
    {"rank_certificate", "certified rank",
     "certified rank: the rank of the step's B is proved (rank mod p = d - #{z_v in ker B})"},
}};

std::string step_label(const ProofStep& s, Index index) {
  if (s.kind == ProofStepKind::base) {
    return fmt::format("step {} (base case, h = 0)", index);
  }
  if (s.u < 0 || s.u >= s.network.num_nodes() || s.e < 0 || s.e >= s.network.num_edges()) {
    return fmt::format("step {}", index);
  }
  return fmt::format("step {} (u = {}, e = edge {} ({}))", index,
                     printable(s.network.node_name(s.u)), s.e, s.network.edge_label(s.e));
}

}  // namespace

const ClaimText& claim_text(ProofClaim claim) {
  return claim_texts.at(static_cast<std::size_t>(claim));
}

ProofIssue make_issue(const ProofStep& s, Index index, ProofClaim claim, const std::string& detail,
                      Index path, EdgeId edge, NodeId node) {
  ProofIssue issue;
  issue.step = index;
  issue.claim = claim;
  issue.path = path;
  issue.edge = edge;
  issue.node = node;
  issue.message =
      fmt::format("{}: {} fails: {}", step_label(s, index), claim_text(claim).label, detail);
  return issue;
}

ProofIssue certificate_issue(Index step, ProofClaim claim, std::string message) {
  ProofIssue issue;
  issue.step = step;
  issue.claim = claim;
  issue.message = std::move(message);
  return issue;
}

}  // namespace pathlift::detail::proof
