#pragma once
// The checkers of the proof: one function per claim, run in the proof's order on one step.

#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pathlift/proof.hpp"
#include "src/rank/detail/proof_context.hpp"
#include "src/rank/detail/proof_steps.hpp"

namespace pathlift::detail::proof {

/// What the checks of one step read. Everything expensive comes in computed once: the step's
/// network with its paths and rank certificate (ctx, next), the proof's definitions (plan), the
/// matrices, and, when prove_rank built them, the reduction and rank(B~'') mod p.
struct StepCheck {
  const ProofStep& step;
  Index index;
  const StepContext& ctx;
  const StepPlan& plan;
  const std::vector<ProofMatrix>& mats;
  const StepContext* next = nullptr;  ///< the reduced network (induction step)
  /// The matrices were computed from the step's recorded operations (prove_rank, or
  /// check_proof on a certificate without matrices): they agree with them by construction.
  bool derived = false;
  /// The reduction that built `next` (prove_rank); null: reduce again and compare.
  const Reduction* reduction = nullptr;
  std::uint64_t prime = default_prime;
  bool check_rank_after = true;
  /// rank(B~'') (or B~) mod p when the caller computed it; empty: computed here.
  std::optional<Index> rank_after;
  std::vector<ProofIssue>* findings = nullptr;  ///< where claims false as stated go
};

/// The first claim of the step that fails, checked in the proof's order; findings appended.
std::optional<ProofIssue> check_step(const StepCheck& c);

// ---- What the checkers of the base case and of the induction step share ----------------------

using Verdict = std::optional<ProofIssue>;

/// The issue of `claim` at the step being checked.
ProofIssue issue(const StepCheck& c, ProofClaim claim, const std::string& detail, Index path = -1,
                 EdgeId edge = -1, NodeId node = -1);

/// First entry where a and b differ (canonical row order), as (row, column); (-1, -1) when
/// the shapes differ.
std::optional<std::pair<Index, EdgeId>> first_difference(const SparseIntMatrix& a,
                                                         const SparseIntMatrix& b);

/// Matrix `i` has the expected name, shape and print orders, and is a well-formed sparse matrix.
Verdict check_shape(const StepCheck& c, std::size_t i, const std::string& name,
                    const std::vector<Index>& rows, const std::vector<EdgeId>& cols,
                    ProofClaim claim);

/// Stored matrix `i` is `how` (`expected()`, computed only for stored matrices: computed ones
/// agree by construction).
template <class Expected>
Verdict check_consistency(const StepCheck& c, std::size_t i, const Expected& expected,
                          const std::string& how, ProofClaim claim) {
  if (c.derived) {
    return std::nullopt;
  }
  const SparseIntMatrix& stored = c.mats[i].matrix;
  const SparseIntMatrix want = expected();
  if (const auto diff = first_difference(stored, want)) {
    const auto [r, col] = *diff;
    return issue(c, claim,
                 fmt::format("{} is not {}: entry ({}, {}) is {} instead of {}", c.mats[i].name,
                             how, c.ctx.describe_path(r), c.ctx.describe_edge(col),
                             stored.at(r, col), want.at(r, col)),
                 r, col);
  }
  return std::nullopt;
}

/// The unit-row claim of Algorithms 1 and 2 and of the clearing: row p of matrix `i` is the
/// unit vector of p's last edge.
Verdict check_unit_row(const StepCheck& c, std::size_t i, Index p, ProofClaim claim);

/// The prefix lemma (2 or 4) on Algorithm 1's or 2's paths.
Verdict check_prefixes(const StepCheck& c, ProofClaim claim);

/// Algorithm 1 (base case) or 2: the recorded row operations are the algorithm's (on `paths`,
/// longest first, minus the prefix path), matrix `after` (B~ or B~') is the matrix before it
/// with them applied, and the rows of the algorithm's paths (all rows for Algorithm 1) are the
/// unit vectors of their last edges.
Verdict check_row_algorithm(const StepCheck& c, ProofClaim claim, std::size_t after,
                            std::string_view paths);

/// The rank(B) of `ctx` (the step's network or the reduced one) is certified; its value in
/// `rank`.
Verdict check_certified_rank(const StepCheck& c, const StepContext& ctx, Index& rank);

/// rank(B~'') (B~ for the base case) mod p equals rank(B) and the recorded value.
Verdict check_rank_preserved(const StepCheck& c, Index rank);

/// The step has its 2 (base case) or 6 matrices.
Verdict check_matrix_count(const StepCheck& c);

/// Definition 2 on B: row p holds a 1 at each edge of path p and nothing else.
Verdict check_definition2(const StepCheck& c);

/// The checks of the base case and of the induction step, in the proof's order.
Verdict check_base(const StepCheck& c);
Verdict check_induction(const StepCheck& c);

}  // namespace pathlift::detail::proof
