#include "src/rank/detail/proof_checks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "pathlift/error.hpp"
#include "src/rank/detail/proof_claims.hpp"

namespace pathlift::detail::proof {

ProofIssue issue(const StepCheck& c, ProofClaim claim, const std::string& detail, Index path,
                 EdgeId edge, NodeId node) {
  return make_issue(c.step, c.index, claim, detail, path, edge, node);
}

std::optional<std::pair<Index, EdgeId>> first_difference(const SparseIntMatrix& a,
                                                         const SparseIntMatrix& b) {
  if (a.rows() != b.rows() || a.cols != b.cols) {
    return std::pair<Index, EdgeId>(-1, -1);
  }
  for (Index r = 0; r < a.rows(); ++r) {
    const auto& x = at(a.row_entries, r);
    const auto& y = at(b.row_entries, r);
    if (x == y) {
      continue;
    }
    std::size_t i = 0;
    while (i < x.size() && i < y.size() && x[i] == y[i]) {
      ++i;
    }
    EdgeId col = 0;
    if (i == x.size()) {
      col = y[i].col;
    } else if (i == y.size()) {
      col = x[i].col;
    } else {
      col = std::min(x[i].col, y[i].col);
    }
    return std::pair<Index, EdgeId>(r, col);
  }
  return std::nullopt;
}

Verdict check_shape(const StepCheck& c, std::size_t i, const std::string& name,
                    const std::vector<Index>& rows, const std::vector<EdgeId>& cols,
                    ProofClaim claim) {
  const ProofStep& s = c.step;
  const ProofMatrix& m = c.mats[i];
  if (m.name != name || m.matrix.rows() != s.num_paths || m.matrix.cols != s.d) {
    return issue(c, claim,
                 fmt::format("the matrix '{}' ({} x {}) stands where {} ({} x {}) should be",
                             m.name, m.matrix.rows(), m.matrix.cols, name, s.num_paths, s.d));
  }
  if (m.row_order != rows) {
    return issue(c, ProofClaim::reordering,
                 fmt::format("the rows of {} are not printed in the proof's order", name));
  }
  if (m.col_order != cols) {
    return issue(c, ProofClaim::reordering,
                 fmt::format("the columns of {} are not printed in the proof's order", name));
  }
  for (const auto& row : m.matrix.row_entries) {
    for (std::size_t j = 0; j < row.size(); ++j) {
      if (row[j].col < 0 || row[j].col >= s.d || row[j].value == 0 ||
          (j > 0 && row[j - 1].col >= row[j].col)) {
        return issue(c, claim,
                     fmt::format("{} is not a well-formed sparse matrix (row entries must be "
                                 "non-zero, in increasing columns 0..{})",
                                 name, s.d - 1));
      }
    }
  }
  return std::nullopt;
}

Verdict check_unit_row(const StepCheck& c, std::size_t i, Index p, ProofClaim claim) {
  const SparseIntMatrix& m = c.mats[i].matrix;
  const EdgeId last = c.ctx.last_edge(p);
  const auto& row = at(m.row_entries, p);
  if (row.size() == 1 && row.front().col == last && row.front().value == 1) {
    return std::nullopt;
  }
  EdgeId bad = last;
  for (const auto& entry : row) {
    if (entry.col != last || entry.value != 1) {
      bad = entry.col;
      break;
    }
  }
  return issue(c, claim,
               fmt::format("row of {} in {} should be the unit vector of {}, its last edge, but "
                           "its entry at {} is {}",
                           c.ctx.describe_path(p), c.mats[i].name, c.ctx.describe_edge(last),
                           c.ctx.describe_edge(bad), m.at(p, bad)),
               p, bad);
}

Verdict check_prefixes(const StepCheck& c, ProofClaim claim) {
  for (const auto& [p, q] : c.plan.row_operations) {
    if (q >= 0) {
      continue;
    }
    const auto length = c.ctx.paths.path(p).size() - 1;
    const std::string detail =
        claim == ProofClaim::lemma2_prefix
            ? fmt::format("{} has no prefix path of length {}", c.ctx.describe_path(p), length)
            : fmt::format(
                  "{} crosses k = {} without ending there, but has no prefix path of "
                  "length {}",
                  c.ctx.describe_path(p), printable(c.ctx.net.node_name(c.step.k)), length);
    return issue(c, claim, detail, p, c.ctx.last_edge(p));
  }
  return std::nullopt;
}

Verdict check_row_algorithm(const StepCheck& c, ProofClaim claim, std::size_t after,
                            std::string_view paths) {
  const ProofStep& s = c.step;
  const bool first = claim == ProofClaim::algorithm1_rows;
  if (s.row_operations != c.plan.row_operations) {
    return issue(c, claim,
                 fmt::format("the recorded row operations are not Algorithm {}'s ({}, longest "
                             "first, minus its prefix path)",
                             first ? 1 : 2, paths));
  }
  // The base case's print orders are the identity.
  if (auto i =
          check_shape(c, after, first ? "B~" : "B~'", c.plan.row_order, c.plan.col_order, claim)) {
    return i;
  }
  for (const Index p : first ? c.plan.row_order : c.plan.algorithm_rows) {
    if (auto i = check_unit_row(c, after, p, claim)) {
      return i;
    }
  }
  return check_consistency(
      c, after, [&] { return apply_row_operations(c.mats[after - 1].matrix, s.row_operations); },
      fmt::format("{} after Algorithm {}'s row operations", first ? "B" : "B~", first ? 1 : 2),
      claim);
}

Verdict check_certified_rank(const StepCheck& c, const StepContext& ctx, Index& rank) {
  const RankCertificate& cert = ctx.certificate();
  if (!cert.certified()) {
    return issue(
        c, ProofClaim::rank_certificate,
        fmt::format("{} <= rank(B) <= {}: the bounds do not meet", cert.lower, cert.upper));
  }
  rank = cert.lower;
  return std::nullopt;
}

Verdict check_rank_preserved(const StepCheck& c, Index rank) {
  if (!c.check_rank_after) {
    return std::nullopt;
  }
  const ProofStep& s = c.step;
  const Index after = c.rank_after ? *c.rank_after : modular_rank_after(s, c.mats, c.next, c.prime);
  if (after != rank || (s.rank_after >= 0 && s.rank_after != after)) {
    const bool base = s.kind == ProofStepKind::base;
    return issue(c, ProofClaim::rank_preserved,
                 fmt::format("rank({}) mod p = {} (recorded {}) but rank(B) = {}",
                             base ? "B~" : "B~''", after, s.rank_after, rank));
  }
  return std::nullopt;
}
Verdict check_matrix_count(const StepCheck& c) {
  if (c.step.kind == ProofStepKind::base) {
    if (c.mats.size() != 2) {
      return issue(
          c, ProofClaim::skeleton_definition,
          fmt::format("the base case has {} matrices instead of 2 (B, B~)", c.mats.size()));
    }
  } else if (c.mats.size() != 6) {
    return issue(c, ProofClaim::skeleton_definition,
                 fmt::format("the step has {} matrices instead of 6 (B, B', B'', B~, B~', B~'')",
                             c.mats.size()));
  }
  return std::nullopt;
}

Verdict check_definition2(const StepCheck& c) {
  const auto id_rows = identity_order(c.step.num_paths);
  const auto id_cols = identity_order<EdgeId>(c.step.d);
  if (auto i = check_shape(c, 0, "B", id_rows, id_cols, ProofClaim::skeleton_definition)) {
    return i;
  }
  if (c.derived) {
    return std::nullopt;
  }
  const SparseIntMatrix& b = c.mats[0].matrix;
  const SparseIntMatrix truth = SparseIntMatrix::from_pattern(c.ctx.b);
  if (const auto diff = first_difference(b, truth)) {
    const auto [r, col] = *diff;
    const bool on_path = truth.at(r, col) != 0;
    return issue(c, ProofClaim::skeleton_definition,
                 fmt::format("B[{}, {}] = {} but the edge is {} the path", c.ctx.describe_path(r),
                             c.ctx.describe_edge(col), b.at(r, col), on_path ? "on" : "not on"),
                 r, col);
  }
  return std::nullopt;
}

namespace {

// The base case: h = 0, Lemma 2, Algorithm 1, no zero column, rank(B) = d.

/// The step is a base case: its network and its record have h = 0, d and P agree.
Verdict check_base_case(const StepCheck& c) {
  const ProofStep& s = c.step;
  if (s.network.num_hidden() != 0 || s.h != 0 || s.d != s.network.num_edges() ||
      s.num_paths != c.ctx.size()) {
    return issue(c, ProofClaim::choice,
                 fmt::format("the base case needs h = 0 (the network has h = {}, d = {}, P = {}; "
                             "the step records h = {}, d = {}, P = {})",
                             s.network.num_hidden(), s.network.num_edges(), c.ctx.size(), s.h, s.d,
                             s.num_paths));
  }
  return std::nullopt;
}

/// Algorithm 1: its operations, unit rows everywhere in B~.
Verdict check_algorithm1(const StepCheck& c) {
  return check_row_algorithm(c, ProofClaim::algorithm1_rows, 1, "each path of length l >= 2");
}

Verdict check_no_zero_column(const StepCheck& c) {
  std::vector<std::uint8_t> hit(static_cast<std::size_t>(c.step.d), 0);
  for (const auto& row : c.mats[1].matrix.row_entries) {
    for (const auto& entry : row) {
      at(hit, entry.col) = 1;
    }
  }
  for (EdgeId col = 0; col < c.step.d; ++col) {
    if (at(hit, col) == 0) {
      return issue(c, ProofClaim::no_zero_column,
                   fmt::format("column of {} in B~ is zero", c.ctx.describe_edge(col)), -1, col);
    }
  }
  return std::nullopt;
}

Verdict check_base_rank(const StepCheck& c) {
  const ProofStep& s = c.step;
  Index rank = -1;
  if (auto i = check_certified_rank(c, c.ctx, rank)) {
    return i;
  }
  if (rank != s.rank || rank != s.d) {
    return issue(c, ProofClaim::rank_equality,
                 fmt::format("rank(B) = {} (recorded {}) but d = {}", rank, s.rank, s.d));
  }
  return check_rank_preserved(c, rank);
}

}  // namespace

Verdict check_base(const StepCheck& c) {
  for (const auto check : {check_base_case, check_matrix_count, check_definition2}) {
    if (auto i = check(c)) {
      return i;
    }
  }
  if (auto i = check_prefixes(c, ProofClaim::lemma2_prefix)) {
    return i;
  }
  for (const auto check : {check_algorithm1, check_no_zero_column, check_base_rank}) {
    if (auto i = check(c)) {
      return i;
    }
  }
  return std::nullopt;
}

std::optional<ProofIssue> check_step(const StepCheck& c) {
  return c.step.kind == ProofStepKind::base ? check_base(c) : check_induction(c);
}

}  // namespace pathlift::detail::proof
