#pragma once
/// \file proof.hpp
/// The paper's proof of Theorem 1 (appendix "Rank_Skeleton"), executed on a network and kept
/// as a certificate: a list of steps, each with the data the proof uses (u, k, e, E-u, E+u,
/// E-k, E_end, the row operations, the reduced network), the intermediate matrices (B', B'',
/// B~, B~', B~'' of the induction step; B~ of the base case) and exact ranks. Every claim of
/// the proof is checked on every path and every matrix; a claim that fails is reported with
/// the step, the claim, and the path or column involved.
///
/// Induction step (h >= 1), as in the paper: order the nodes topologically with the inputs
/// first; u = the last hidden node; k = the first node after u with an edge from u; e = that
/// edge (the first one by index when u -> k has parallel edges); E-u = edges into u,
/// E+u = edges out of u but e, E-k = edges into k but e. Columns of B are reordered (B'),
/// rows grouped (B''), column e replaced by e - sum(E-u) + sum(E+u) (B~: column e vanishes),
/// Algorithm 2 subtracts from each path crossing k and not ending at k the row of its prefix
/// path (B~': unit rows), the unit rows clear the E_end columns (B~''), and what is left is the
/// skeleton of the reduced network (u an output, e and E_end removed) up to null and repeated
/// rows, on which the proof recurses: rank(B) = #E_end + rank(B_reduced).
/// Base case (h = 0): Algorithm 1 subtracts from each path of length l >= 2 its prefix path
/// (Lemma 2), leaving one non-zero per row and no zero column: rank(B) = d.

#include <Eigen/Core>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pathlift/certificate.hpp"
#include "pathlift/modular.hpp"
#include "pathlift/network.hpp"
#include "pathlift/options.hpp"
#include "pathlift/paths.hpp"
#include "pathlift/rank.hpp"
#include "pathlift/types.hpp"

namespace pathlift {

/// The claims of the proof that are checked (docs/rank.md maps each to the paper).
enum class ProofClaim : std::uint8_t {
  choice,                    ///< u, k, e, E-u, E+u, E-k as the proof defines them
  skeleton_definition,       ///< Definition 2: the step's matrix B is its network's skeleton
  lemma2_prefix,             ///< Lemma 2: for h = 0 the prefix of a path is a path
  algorithm1_rows,           ///< Algorithm 1: each row of B~ is the unit vector of its last edge
  no_zero_column,            ///< base case: B~ has no zero column
  reordering,                ///< B', B'' are B with the proof's column and row orders
  lemma_unique_composition,  ///< a path through u uses one edge of E-u and one of {e} u E+u
  lemma3_disjoint,           ///< Lemma 3: no path uses both E-u u E+u u {e} and E-k
  column_operations,         ///< B~ = B'' with column e - E-u + E+u, and column e vanishes
  lemma4_prefix,             ///< Lemma 4: a path crossing k, not ending at k, has its prefix
  algorithm2_rows,           ///< Algorithm 2: those rows of B~' are unit vectors
  clearing,                  ///< B~'': the E_end columns are cleared by the unit rows
  reduced_network,           ///< the reduced network has d - 1 - #E_end edges, h - 1 hidden
  reduced_skeleton,          ///< [H; D] = skeleton of the reduced network (up to null, repeats)
  rank_preserved,            ///< rank(B~'') = rank(B) (invertible operations), mod p
  rank_equality,             ///< rank(B) = #E_end + rank(B_reduced); base case rank(B) = d
  rank_certificate           ///< the step's rank(B) is certified (bounds meet)
};

/// A short identifier: "choice", "definition2", "lemma2", "algorithm1", ..., "rank_equality".
std::string_view claim_id(ProofClaim claim);
/// The claim as the paper states it, naming the lemma, e.g. "Lemma 4 (lem:ppcoincide): ...".
std::string_view claim_statement(ProofClaim claim);

/// A claim that failed, or (as a finding) a claim of the paper that is false as stated while
/// the step still stands.
struct ProofIssue {
  Index step = -1;
  ProofClaim claim = ProofClaim::choice;
  Index path = -1;      ///< a path (row) of the step's network, canonical index, or -1
  EdgeId edge = -1;     ///< an edge (column) of the step's network, or -1
  NodeId node = -1;     ///< a node of the step's network, or -1
  std::string message;  ///< one sentence: step, claim, path and column with their names
};

/// One matrix of a step: rows are the canonical paths of the step's network, columns its edges;
/// row_order and col_order give the order the proof prints them in.
struct ProofMatrix {
  std::string name;  ///< "B", "B'", "B''", "B~", "B~'", "B~''"
  SparseIntMatrix matrix;
  std::vector<Index> row_order;   ///< row_order[i] = the row printed i-th
  std::vector<EdgeId> col_order;  ///< col_order[j] = the column printed j-th
};

/// The matrix in print order, dense. Throws TooLarge beyond `max_memory` (0 = default).
Eigen::Matrix<std::int64_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> displayed(
    const ProofMatrix& m, const EngineOptions& options = {});

/// The largest matrix the proof's printed forms (to_json and any text form of the matrices) show
/// entry by entry; a larger one shows its row and column orders only.
inline constexpr Index proof_matrix_displayed_rows = 200;
inline constexpr Index proof_matrix_displayed_cols = 60;
/// Whether `m` is within those limits.
bool displayable(const ProofMatrix& m);

enum class ProofStepKind : std::uint8_t { base, induction };

/// One step of the induction on a network N_i (the user's network for step 0).
struct ProofStep {
  explicit ProofStep(Network n) : network(std::move(n)) {}

  ProofStepKind kind = ProofStepKind::base;
  Network network;                    ///< N_i
  std::vector<EdgeId> original_edge;  ///< edge of N_i -> edge of the user's network
  Index d = 0;
  Index h = 0;
  Index num_paths = 0;

  // Induction step only (nodes and edges of N_i).
  NodeId u = -1;
  NodeId k = -1;
  EdgeId e = -1;
  std::vector<EdgeId> e_minus_u;
  std::vector<EdgeId> e_plus_u;
  std::vector<EdgeId> e_minus_k;
  /// Algorithm 2's paths: crossing k and not ending at k, longest first (canonical order
  /// within a length).
  std::vector<Index> crossing_k;
  std::vector<EdgeId> e_end;          ///< last edges of those paths, increasing
  std::vector<Index> clearing_row;    ///< the unit row (path) that clears each E_end column
  std::vector<EdgeId> reduced_edge;   ///< edge of N_i -> edge of N_{i+1}, -1 for e and E_end
  std::vector<NodeId> reduced_node;   ///< node of N_i -> node of N_{i+1}, -1 if dropped
  std::vector<NodeId> dropped_nodes;  ///< nodes left without any edge (they drop out)
  std::vector<NodeId> new_inputs;     ///< nodes that lost every incoming edge but not all edges
  Index null_rows = 0;                ///< rows of [H; D] that are zero
  Index repeated_rows = 0;            ///< rows of [H; D] equal to an earlier one

  /// (p, p~): row p -= row p~, in execution order (Algorithm 1 or 2).
  std::vector<std::pair<Index, Index>> row_operations;

  Index rank = -1;          ///< certified rank(B) of N_i
  Index reduced_rank = -1;  ///< certified rank of the reduced skeleton (induction step)
  Index rank_after = -1;    ///< rank mod p of B~'' (induction) or B~ (base), -1 if not computed

  /// B, B', B'', B~, B~', B~'' (induction) or B, B~ (base); empty unless kept.
  std::vector<ProofMatrix> matrices;
  std::vector<ProofIssue> findings;  ///< claims of the paper false as stated here
};

/// The executed proof.
struct ProofCertificate {
  Index d = 0;
  Index h = 0;
  std::vector<ProofStep> steps;       ///< h induction steps then the base case, when proved
  std::vector<ProofIssue> findings;   ///< every step's findings, in order
  std::optional<ProofIssue> failure;  ///< the first claim that failed (the proof stops there)
  Index rank = -1;                    ///< rank(B) = d - h when proved

  [[nodiscard]] bool proved() const {
    return !failure && !steps.empty() && steps.back().kind == ProofStepKind::base;
  }
};

struct ProveOptions {
  /// Keep every step's matrices in the certificate (needed by check_proof(); costs memory).
  bool keep_matrices = false;
  /// Also compute rank(B~'') mod p at every step (rank_preserved).
  bool check_rank_after = true;
  std::uint64_t prime = default_prime;  ///< a prime < 2^63 for the modular ranks
  /// Threads and memory limit for the path enumerations; progress is called before each step
  /// ("induction steps", fraction of the h + 1 steps done) and with 1 at the end (the steps'
  /// own enumerations report nothing).
  EngineOptions engine;
};

/// Runs the paper's induction on `net` (h induction steps, then the base case), checking every
/// claim on every path and matrix as it goes; stops at the first claim that fails (failure).
/// A claim that is false as stated but not needed by the step is recorded as a finding and the
/// proof continues (see docs/rank.md: Lemma 3 with parallel edges u -> k).
/// Complexity: O(h (P d + nnz log nnz)) with P, d of the largest network on the way.
///
/// Example:
/// \code
///   auto cert = pathlift::prove_rank(pathlift::sketch_h1(), {.keep_matrices = true});
///   // cert.proved(), cert.rank == 5, cert.steps[0].matrices[3].name == "B~"
/// \endcode
ProofCertificate prove_rank(const Network& net, const ProveOptions& options = {});

/// The certificate as JSON: "d", "h", "expected" (d - h), "proved", "rank" (null unless
/// proved), "steps" (each: "step", "kind" ("base" or "induction"), "d", "h", "paths", "rank",
/// "original_edge"; an induction step also "u", "k" (node names), "e", "E_minus_u", "E_plus_u",
/// "E_minus_k", "E_end", "reduced_rank", "null_rows", "repeated_rows", "dropped_nodes"; then
/// "row_operations" (their number), "rank_after" (null when not computed) and, when the
/// matrices were kept, "matrices": {name: {"rows", "cols", "data" (rows of entries in print
/// order; null beyond the display limits)}}), "findings" and "failure" (null when proved), each
/// issue as {"step", "claim" (claim_id), "path", "edge" (null when none), "message"}.
std::string to_json(const ProofCertificate& cert, int indent = 2);

/// The verdict of check_proof().
struct ProofCheck {
  std::optional<ProofIssue> failure;
  std::vector<ProofIssue> findings;
  [[nodiscard]] bool ok() const { return !failure; }
};

struct ProofCheckOptions {
  std::uint64_t prime = default_prime;  ///< a prime < 2^63 for the modular ranks
  EngineOptions engine;                 ///< threads and memory limit for the path enumerations
};

/// Re-checks a certificate from its data: each step's choice of u, k, e; its stored matrices
/// against the claims of the proof and against the operations recorded (a matrix that was not
/// kept is recomputed); Lemmas 2-4 on every path; the reduced network against the next step's
/// network; the ranks. Returns the first failure (step, claim, path or column). Throws
/// TooLarge when a step's paths or matrices exceed `options.engine.max_memory`.
/// Complexity: that of prove_rank() on the certificate's network.
ProofCheck check_proof(const ProofCertificate& cert, const ProofCheckOptions& options = {});

/// check_proof() with the modular ranks taken mod `prime`.
ProofCheck check_proof(const ProofCertificate& cert, std::uint64_t prime);

}  // namespace pathlift
