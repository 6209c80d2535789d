// The checkers of an induction step, one a claim, in the proof's order: the choice of u, k, e;
// Definition 2; the reordering; Lemma UniqueCompositionP and Lemma 3; the column operations;
// Lemma 4 and Algorithm 2; the clearing; the reduced network and its skeleton; the ranks.

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <string_view>

#include "pathlift/error.hpp"
#include "src/rank/detail/proof_checks.hpp"

namespace pathlift::detail::proof {

namespace {

bool same_network(const Network& a, const Network& b, std::string& why) {
  if (a.num_nodes() != b.num_nodes() || a.num_edges() != b.num_edges()) {
    why = fmt::format("{} nodes and {} edges instead of {} and {}", b.num_nodes(), b.num_edges(),
                      a.num_nodes(), a.num_edges());
    return false;
  }
  for (NodeId v = 0; v < a.num_nodes(); ++v) {
    if (a.node_name(v) != b.node_name(v) || a.role(v) != b.role(v)) {
      why = fmt::format("node {} is '{}' ({}) instead of '{}' ({})", v, printable(b.node_name(v)),
                        static_cast<int>(b.role(v)), printable(a.node_name(v)),
                        static_cast<int>(a.role(v)));
      return false;
    }
  }
  for (EdgeId x = 0; x < a.num_edges(); ++x) {
    if (a.source(x) != b.source(x) || a.target(x) != b.target(x)) {
      why = fmt::format("edge {} is {} instead of {}", x, b.edge_label(x), a.edge_label(x));
      return false;
    }
  }
  return true;
}

/// The first entry of a row of [H; D] (B~'' but its clearing rows, in print order) that `bad`
/// flags: "row of <path> in <where> is <value> at <edge><why>".
template <class Bad>
Verdict check_hd_entries(const StepCheck& c, ProofClaim claim, const Bad& bad,
                         std::string_view where, std::string_view why) {
  for (const Index p : c.plan.hd_rows) {
    for (const auto& entry : at(c.mats[5].matrix.row_entries, p)) {
      if (bad(entry)) {
        return issue(c, claim,
                     fmt::format("row of {} in {} is {} at {}{}", c.ctx.describe_path(p), where,
                                 entry.value, c.ctx.describe_edge(entry.col), why),
                     p, entry.col);
      }
    }
  }
  return std::nullopt;
}

/// u, k, e and the edge sets are the proof's, and k is an output.
Verdict check_choice(const StepCheck& c) {
  const ProofStep& s = c.step;
  const Network& n = c.ctx.net;
  const Choice& ch = c.plan.choice;
  if (s.h != n.num_hidden() || s.d != n.num_edges() || s.num_paths != c.ctx.size() || ch.u < 0 ||
      s.u != ch.u || s.k != ch.k || s.e != ch.e || s.e_minus_u != ch.e_minus_u ||
      s.e_plus_u != ch.e_plus_u || s.e_minus_k != ch.e_minus_k) {
    return issue(c, ProofClaim::choice,
                 ch.u < 0
                     ? std::string("the network has no hidden node")
                     : fmt::format("the proof takes u = {}, k = {}, e = {} ({}); the step records "
                                   "u = {}, k = {}, e = {} (or other edge sets)",
                                   printable(n.node_name(ch.u)), printable(n.node_name(ch.k)), ch.e,
                                   n.edge_label(ch.e), s.u, s.k, s.e),
                 -1, ch.e, ch.u);
  }
  if (!n.is_output(ch.k)) {
    return issue(c, ProofClaim::choice,
                 fmt::format("k = {} is not an output node", printable(n.node_name(ch.k))), -1,
                 ch.e, ch.k);
  }
  return std::nullopt;
}

/// B' and B'' have the proof's print orders, and B' the entries of B.
Verdict check_reordering(const StepCheck& c) {
  const auto id_rows = identity_order(c.step.num_paths);
  if (auto i = check_shape(c, 1, "B'", id_rows, c.plan.col_order, ProofClaim::reordering)) {
    return i;
  }
  if (auto i = check_consistency(
          c, 1, [&] { return c.mats[0].matrix; }, "B with its columns reordered",
          ProofClaim::reordering)) {
    return i;
  }
  return check_shape(c, 2, "B''", c.plan.row_order, c.plan.col_order, ProofClaim::reordering);
}

/// B'' has the entries of B', checked after the lemmas so that a wrong entry is named by the
/// lemma it breaks.
Verdict check_reordered_entries(const StepCheck& c) {
  return check_consistency(
      c, 2, [&] { return c.mats[1].matrix; }, "B' with its rows reordered", ProofClaim::reordering);
}

/// Lemma UniqueCompositionP on path p (row of B''): one edge of E-u and one of {e} u E+u, or
/// none of either.
Verdict check_unique_composition(const StepCheck& c, Index p) {
  const ProofStep& s = c.step;
  Index n_in = 0;
  Index n_out = 0;
  for (const auto& entry : at(c.mats[2].matrix.row_entries, p)) {
    n_in += contains(s.e_minus_u, entry.col) ? 1 : 0;
    n_out += (entry.col == s.e || contains(s.e_plus_u, entry.col)) ? 1 : 0;
  }
  if (n_in != n_out || n_in > 1) {
    return issue(c, ProofClaim::lemma_unique_composition,
                 fmt::format("{} uses {} edge(s) of E-u and {} of {{e}} u E+u",
                             c.ctx.describe_path(p), n_in, n_out),
                 p);
  }
  return std::nullopt;
}

/// The edge of E-k that path p (row of B'') shares with a path through u, or -1 (Lemma 3).
EdgeId lemma3_edge(const StepCheck& c, Index p) {
  const ProofStep& s = c.step;
  bool touches_u = false;
  EdgeId in_k = -1;
  for (const auto& entry : at(c.mats[2].matrix.row_entries, p)) {
    touches_u = touches_u || entry.col == s.e || contains(s.e_minus_u, entry.col) ||
                contains(s.e_plus_u, entry.col);
    if (in_k < 0 && contains(s.e_minus_k, entry.col)) {
      in_k = entry.col;
    }
  }
  return touches_u ? in_k : -1;
}

/// Lemma UniqueCompositionP and Lemma 3 on every row of B'', row by row. Lemma 3 is false as
/// stated when a parallel edge u -> k lies in E+u and in E-k: that is a finding, not a failure.
Verdict check_composition_and_lemma3(const StepCheck& c) {
  const ProofStep& s = c.step;
  Index findings = 0;
  Index first_path = -1;
  EdgeId first_edge = -1;
  for (const Index p : c.plan.row_order) {
    if (auto i = check_unique_composition(c, p)) {
      return i;
    }
    const EdgeId in_k = lemma3_edge(c, p);
    if (in_k < 0) {
      continue;
    }
    if (!contains(s.e_plus_u, in_k)) {
      return issue(c, ProofClaim::lemma3_disjoint,
                   fmt::format("{} goes through u and through {} of E-k", c.ctx.describe_path(p),
                               c.ctx.describe_edge(in_k)),
                   p, in_k);
    }
    if (findings++ == 0) {
      first_path = p;
      first_edge = in_k;
    }
  }
  if (findings > 0 && c.findings != nullptr) {
    c.findings->push_back(issue(
        c, ProofClaim::lemma3_disjoint,
        fmt::format("{} goes through {}, which is parallel to e = {} and so lies both in E+u and "
                    "in E-k ({} such path(s) at this step); the lemma is false as stated for "
                    "parallel edges u -> k, but the step does not rely on it: column e of B~ "
                    "still vanishes and the rank equality holds (both checked at this step)",
                    c.ctx.describe_path(first_path), c.ctx.describe_edge(first_edge),
                    c.ctx.describe_edge(s.e), findings),
        first_path, first_edge));
  }
  return std::nullopt;
}

/// B~ is B'' after the column operations, and its column e vanishes.
Verdict check_column_operations(const StepCheck& c) {
  const ProofStep& s = c.step;
  const auto& rows = c.plan.row_order;
  if (auto i = check_shape(c, 3, "B~", rows, c.plan.col_order, ProofClaim::column_operations)) {
    return i;
  }
  const SparseIntMatrix& b3 = c.mats[3].matrix;
  for (const Index p : rows) {
    if (b3.at(p, s.e) != 0) {
      return issue(c, ProofClaim::column_operations,
                   fmt::format("column of e = {} in B~ is {} at the row of {}",
                               c.ctx.describe_edge(s.e), b3.at(p, s.e), c.ctx.describe_path(p)),
                   p, s.e);
    }
  }
  return check_consistency(
      c, 3, [&] { return apply_column_operations(c.mats[2].matrix, s); },
      "B'' after the column operations", ProofClaim::column_operations);
}

/// Lemma 4: the recorded paths crossing k are the network's, and each has its prefix path.
Verdict check_lemma4(const StepCheck& c) {
  if (c.step.crossing_k != c.plan.algorithm_rows) {
    return issue(c, ProofClaim::lemma4_prefix,
                 "the recorded paths crossing k and not ending at k are not those of the "
                 "network (longest first)");
  }
  return check_prefixes(c, ProofClaim::lemma4_prefix);
}

/// Algorithm 2: its operations, unit rows in B~' for the paths crossing k.
Verdict check_algorithm2(const StepCheck& c) {
  return check_row_algorithm(c, ProofClaim::algorithm2_rows, 4,
                             "each path crossing k and not ending at k");
}

/// B~'': E_end and the clearing rows are the proof's, each E_end column (and e) is non-zero
/// only in its unit row.
Verdict check_clearing(const StepCheck& c) {
  const ProofStep& s = c.step;
  const auto& e_end = c.plan.e_end;
  if (s.e_end != e_end || s.clearing_row != c.plan.clearing_row) {
    return issue(c, ProofClaim::clearing,
                 "the recorded E_end or clearing rows are not the last edges of the paths "
                 "crossing k and the first unit row of each");
  }
  if (auto i =
          check_shape(c, 5, "B~''", c.plan.row_order, c.plan.col_order, ProofClaim::clearing)) {
    return i;
  }
  for (const Index p : c.plan.clearing_row) {
    if (auto i = check_unit_row(c, 5, p, ProofClaim::clearing)) {
      return i;
    }
  }
  const auto cleared = [&](const IntEntry& x) {
    return x.col == s.e || std::binary_search(e_end.begin(), e_end.end(), x.col);
  };
  if (auto i = check_hd_entries(c, ProofClaim::clearing, cleared, "B~''",
                                ", a column that must be cleared (e or E_end)")) {
    return i;
  }
  return check_consistency(
      c, 5, [&] { return apply_clearing(c.mats[4].matrix, s); },
      "B~' with the E_end columns cleared", ProofClaim::clearing);
}

/// The next step's network is the reduced network, with d - 1 - #E_end edges, h - 1 hidden
/// nodes and u an output. `red` receives the reduction.
Verdict check_reduced_network(const StepCheck& c, Reduction& own, const Reduction*& red) {
  const ProofStep& s = c.step;
  const Network& next = c.next->net;
  red = c.reduction;
  if (red == nullptr) {
    try {
      own = reduce_network(c.ctx.net, s.u, s.e, c.plan.e_end);
    } catch (const NetworkError& ex) {
      return issue(c, ProofClaim::reduced_network,
                   fmt::format("the reduced network is not a valid network: {}", ex.what()));
    }
    red = &own;
    std::string why;
    if (!same_network(*own.net, next, why)) {
      return issue(c, ProofClaim::reduced_network,
                   "the next step's network is not the reduced network: " + why);
    }
    if (s.reduced_edge != own.edge_map || s.reduced_node != own.node_map ||
        s.dropped_nodes != own.dropped_nodes || s.new_inputs != own.new_inputs) {
      return issue(c, ProofClaim::reduced_network,
                   "the recorded edge and node maps are not those of the reduced network");
    }
  }
  const Index expected_d = s.d - 1 - static_cast<Index>(c.plan.e_end.size());
  const bool u_output = next.is_output(at(red->node_map, s.u));
  if (next.num_edges() != expected_d || next.num_hidden() != s.h - 1 || !u_output) {
    return issue(c, ProofClaim::reduced_network,
                 fmt::format("the reduced network has d = {} and h = {} (u {} an output); the "
                             "proof expects d - 1 - #E_end = {} and h - 1 = {}",
                             next.num_edges(), next.num_hidden(), u_output ? "is" : "is not",
                             expected_d, s.h - 1),
                 -1, -1, s.u);
  }
  return std::nullopt;
}

/// [H; D] (B~'' without the unit rows) is the reduced network's skeleton up to null and
/// repeated rows, whose numbers are the recorded ones.
Verdict check_reduced_skeleton(const StepCheck& c, const Reduction& red) {
  const ProofStep& s = c.step;
  const StepContext& next = *c.next;
  std::vector<std::uint8_t> covered(static_cast<std::size_t>(next.size()), 0);
  Index null_rows = 0;
  Index repeated_rows = 0;
  const auto not_reduced = [&](const IntEntry& x) {
    return x.value != 1 || at(red.edge_map, x.col) < 0;
  };
  if (auto i = check_hd_entries(c, ProofClaim::reduced_skeleton, not_reduced, "[H; D]",
                                ": not a 0/1 row on the reduced network's edges")) {
    return i;
  }
  std::vector<EdgeId> mapped;
  for (const Index p : c.plan.hd_rows) {
    mapped.clear();
    for (const auto& entry : at(c.mats[5].matrix.row_entries, p)) {
      mapped.push_back(at(red.edge_map, entry.col));
    }
    if (mapped.empty()) {
      ++null_rows;
      continue;
    }
    // The reduced path with this edge set, if any: along a path the sources' topological
    // positions increase, which gives the walk order.
    std::vector<EdgeId> walk = mapped;
    std::sort(walk.begin(), walk.end(), [&](EdgeId a, EdgeId b) {
      return next.net.topological_position(next.net.source(a)) <
             next.net.topological_position(next.net.source(b));
    });
    const Index q = next.find(walk);
    if (q < 0) {
      std::string ids;
      for (const EdgeId x : mapped) {
        ids += fmt::format("{}{}", ids.empty() ? "" : " ", x);
      }
      return issue(c, ProofClaim::reduced_skeleton,
                   fmt::format("row of {} in [H; D] (reduced edges {}) is not a path of the "
                               "reduced network",
                               c.ctx.describe_path(p), ids),
                   p);
    }
    if (at(covered, q) != 0) {
      ++repeated_rows;
    }
    at(covered, q) = 1;
  }
  for (Index q = 0; q < next.size(); ++q) {
    if (at(covered, q) == 0) {
      return issue(
          c, ProofClaim::reduced_skeleton,
          fmt::format("{} of the reduced network is no row of [H; D]", next.describe_path(q)));
    }
  }
  if (s.null_rows != null_rows || s.repeated_rows != repeated_rows) {
    return issue(c, ProofClaim::reduced_skeleton,
                 fmt::format("[H; D] has {} null and {} repeated rows; the step records {} and {}",
                             null_rows, repeated_rows, s.null_rows, s.repeated_rows));
  }
  return std::nullopt;
}

/// rank(B) and rank(B_reduced) are certified and rank(B) = #E_end + rank(B_reduced).
Verdict check_induction_rank(const StepCheck& c) {
  const ProofStep& s = c.step;
  Index rank = -1;
  Index reduced = -1;
  if (auto i = check_certified_rank(c, c.ctx, rank)) {
    return i;
  }
  if (auto i = check_certified_rank(c, *c.next, reduced)) {
    i->message += " (the reduced network's skeleton)";
    return i;
  }
  const auto e_end = static_cast<Index>(c.plan.e_end.size());
  if (rank != s.rank || reduced != s.reduced_rank || rank != e_end + reduced) {
    return issue(c, ProofClaim::rank_equality,
                 fmt::format("rank(B) = {} (recorded {}) but #E_end + rank(B_reduced) = {} + {} "
                             "(recorded {})",
                             rank, s.rank, e_end, reduced, s.reduced_rank));
  }
  return check_rank_preserved(c, rank);
}

}  // namespace

Verdict check_induction(const StepCheck& c) {
  for (const auto check :
       {check_choice, check_matrix_count, check_definition2, check_reordering,
        check_composition_and_lemma3, check_reordered_entries, check_column_operations,
        check_lemma4, check_algorithm2, check_clearing}) {
    if (auto i = check(c)) {
      return i;
    }
  }
  Reduction own;
  const Reduction* red = nullptr;
  if (auto i = check_reduced_network(c, own, red)) {
    return i;
  }
  if (auto i = check_reduced_skeleton(c, *red)) {
    return i;
  }
  return check_induction_rank(c);
}

}  // namespace pathlift::detail::proof
