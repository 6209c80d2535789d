#include "src/rank/detail/proof_steps.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <unordered_map>

#include "pathlift/limits.hpp"
#include "src/core/checked.hpp"

namespace pathlift::detail::proof {

namespace {

[[noreturn]] void entry_overflows(std::int64_t a, char op, std::int64_t b) {
  throw std::overflow_error(fmt::format("proof matrix entry overflows: {} {} {}", a, op, b));
}

std::int64_t entry_add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (add_overflows(a, b, r)) {
    entry_overflows(a, '+', b);
  }
  return r;
}

std::int64_t entry_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (mul_overflows(a, b, r)) {
    entry_overflows(a, '*', b);
  }
  return r;
}

Choice choose(const Network& n) {
  Choice c;
  for (const NodeId v : n.topological_order()) {
    if (n.is_hidden(v)) {
      c.u = v;
    }
  }
  if (c.u < 0) {
    return c;
  }
  for (const EdgeId e : n.out_edges(c.u)) {  // increasing index: the first edge to k wins
    const NodeId t = n.target(e);
    if (c.k < 0 || n.topological_position(t) < n.topological_position(c.k)) {
      c.k = t;
      c.e = e;
    }
  }
  const auto in_u = n.in_edges(c.u);
  c.e_minus_u.assign(in_u.begin(), in_u.end());
  for (const EdgeId e : n.out_edges(c.u)) {
    if (e != c.e) {
      c.e_plus_u.push_back(e);
    }
  }
  for (const EdgeId e : n.in_edges(c.k)) {
    if (e != c.e) {
      c.e_minus_k.push_back(e);
    }
  }
  return c;
}

std::vector<EdgeId> proof_column_order(const Choice& c, Index d) {
  std::vector<EdgeId> order;
  std::vector<std::uint8_t> used(static_cast<std::size_t>(d), 0);
  const auto add = [&](EdgeId e) {
    if (e >= 0 && e < d && at(used, e) == 0) {
      at(used, e) = 1;
      order.push_back(e);
    }
  };
  add(c.e);
  for (const EdgeId e : c.e_plus_u) {
    add(e);
  }
  for (const EdgeId e : c.e_minus_u) {
    add(e);
  }
  for (const EdgeId e : c.e_minus_k) {
    add(e);
  }
  for (EdgeId e = 0; e < d; ++e) {
    add(e);
  }
  return order;
}

/// B'' row order: paths through e, paths through an edge of E+u (by that edge), paths crossing
/// k but not u, the rest; canonical order within each group.
std::vector<Index> proof_row_order(const Choice& c, const StepContext& ctx) {
  std::vector<int> group(static_cast<std::size_t>(ctx.size()), 3);
  std::vector<Index> sub(static_cast<std::size_t>(ctx.size()), 0);
  for (Index p = 0; p < ctx.size(); ++p) {
    for (const EdgeId e : ctx.paths.path(p)) {
      if (e == c.e) {
        at(group, p) = 0;
      } else if (const auto it = std::find(c.e_plus_u.begin(), c.e_plus_u.end(), e);
                 it != c.e_plus_u.end()) {
        at(group, p) = 1;
        at(sub, p) = it - c.e_plus_u.begin();
      }
    }
    if (at(group, p) == 3 && ctx.crosses(p, c.k)) {
      at(group, p) = 2;
    }
  }
  std::vector<Index> order = identity_order(ctx.size());
  std::stable_sort(order.begin(), order.end(), [&](Index a, Index b) {
    return std::pair(at(group, a), at(sub, a)) < std::pair(at(group, b), at(sub, b));
  });
  return order;
}

/// Paths of length >= 2 for Algorithm 1 (all of them, k = -1) or 2 (crossing k, not ending at
/// k), longest first, canonical order within a length.
std::vector<Index> algorithm_rows(const StepContext& ctx, NodeId k) {
  std::vector<Index> rows;
  for (Index p = 0; p < ctx.size(); ++p) {
    const bool take = k < 0 ? ctx.paths.path(p).size() >= 2 : ctx.crosses_not_ending(p, k);
    if (take) {
      rows.push_back(p);
    }
  }
  std::stable_sort(rows.begin(), rows.end(), [&](Index a, Index b) {
    return ctx.paths.path(a).size() > ctx.paths.path(b).size();
  });
  return rows;
}

void subtract_row(SparseIntMatrix& m, Index target, Index source, std::int64_t factor) {
  std::vector<IntEntry> merged;
  const auto& a = at(m.row_entries, target);
  const auto& b = at(m.row_entries, source);
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < a.size() || j < b.size()) {
    if (j == b.size() || (i < a.size() && a[i].col < b[j].col)) {
      merged.push_back(a[i++]);
    } else if (i == a.size() || b[j].col < a[i].col) {
      merged.push_back({b[j].col, entry_mul(-factor, b[j].value)});
      ++j;
    } else {
      const std::int64_t v = entry_add(a[i].value, entry_mul(-factor, b[j].value));
      if (v != 0) {
        merged.push_back({a[i].col, v});
      }
      ++i;
      ++j;
    }
  }
  at(m.row_entries, target) = std::move(merged);
}

ProofMatrix named(std::string name, SparseIntMatrix m, std::vector<Index> rows,
                  std::vector<EdgeId> cols) {
  return {std::move(name), std::move(m), std::move(rows), std::move(cols)};
}

/// The recorded operations: none when a prefix is missing (the lemma's checker reports it).
std::vector<std::pair<Index, Index>> recorded_operations(const StepPlan& plan) {
  for (const auto& [p, q] : plan.row_operations) {
    if (q < 0) {
      return {};
    }
  }
  return plan.row_operations;
}

}  // namespace

StepPlan plan_step(const StepContext& ctx) {
  StepPlan plan;
  plan.choice = choose(ctx.net);
  const Choice& c = plan.choice;
  const Index d = ctx.net.num_edges();
  if (c.u < 0) {
    plan.col_order = identity_order<EdgeId>(d);
    plan.row_order = identity_order(ctx.size());
  } else {
    plan.col_order = proof_column_order(c, d);
    plan.row_order = proof_row_order(c, ctx);
  }
  plan.algorithm_rows = algorithm_rows(ctx, c.k);
  plan.row_operations.reserve(plan.algorithm_rows.size());
  for (const Index p : plan.algorithm_rows) {
    plan.row_operations.emplace_back(p, ctx.prefix(p));
  }
  if (c.u < 0) {
    return plan;
  }
  for (const Index p : plan.algorithm_rows) {
    plan.e_end.push_back(ctx.last_edge(p));
  }
  std::sort(plan.e_end.begin(), plan.e_end.end());
  plan.e_end.erase(std::unique(plan.e_end.begin(), plan.e_end.end()), plan.e_end.end());
  plan.clearing_row.assign(plan.e_end.size(), -1);
  for (const Index p : plan.row_order) {  // the first unit row in print order clears its column
    if (ctx.crosses_not_ending(p, c.k)) {
      const auto it = std::lower_bound(plan.e_end.begin(), plan.e_end.end(), ctx.last_edge(p));
      auto& slot = plan.clearing_row[static_cast<std::size_t>(it - plan.e_end.begin())];
      if (slot < 0) {
        slot = p;
      }
    }
  }
  std::vector<std::uint8_t> clearing(static_cast<std::size_t>(ctx.size()), 0);
  for (const Index p : plan.clearing_row) {
    at(clearing, p) = 1;
  }
  for (const Index p : plan.row_order) {
    if (at(clearing, p) == 0) {
      plan.hd_rows.push_back(p);
    }
  }
  return plan;
}

SparseIntMatrix apply_column_operations(const SparseIntMatrix& m, const ProofStep& s) {
  SparseIntMatrix out = m;
  for (Index r = 0; r < m.rows(); ++r) {
    std::int64_t v = 0;
    for (const auto& entry : at(m.row_entries, r)) {
      if (entry.col == s.e) {
        v = entry_add(v, entry.value);
      } else if (contains(s.e_minus_u, entry.col)) {
        v = entry_add(v, -entry.value);
      } else if (contains(s.e_plus_u, entry.col)) {
        v = entry_add(v, entry.value);
      }
    }
    out.set(r, s.e, v);
  }
  return out;
}

SparseIntMatrix apply_row_operations(const SparseIntMatrix& m,
                                     const std::vector<std::pair<Index, Index>>& ops) {
  SparseIntMatrix out = m;
  for (const auto& [p, q] : ops) {
    if (p < 0 || p >= m.rows() || q < 0 || q >= m.rows() || p == q) {
      throw std::invalid_argument(
          fmt::format("row operation ({}, {}) is outside the {} rows", p, q, m.rows()));
    }
    subtract_row(out, p, q, 1);
  }
  return out;
}

SparseIntMatrix apply_clearing(const SparseIntMatrix& m, const ProofStep& s) {
  SparseIntMatrix out = m;
  for (std::size_t i = 0; i < s.e_end.size() && i < s.clearing_row.size(); ++i) {
    const EdgeId c = s.e_end[i];
    const Index pivot = s.clearing_row[i];
    if (pivot < 0 || pivot >= m.rows() || c < 0 || c >= m.cols) {
      throw std::invalid_argument(
          fmt::format("clearing row {} for column {} is outside the matrix", pivot, c));
    }
    for (Index r = 0; r < out.rows(); ++r) {
      if (r == pivot) {
        continue;
      }
      const std::int64_t f = out.at(r, c);
      if (f != 0) {
        subtract_row(out, r, pivot, f);
      }
    }
  }
  return out;
}

Reduction reduce_network(const Network& n, NodeId u, EdgeId e, const std::vector<EdgeId>& e_end) {
  const auto m = static_cast<std::size_t>(n.num_nodes());
  std::vector<std::uint8_t> removed(static_cast<std::size_t>(n.num_edges()), 0);
  at(removed, e) = 1;
  for (const EdgeId c : e_end) {
    at(removed, c) = 1;
  }
  std::vector<Index> indeg(m, 0), outdeg(m, 0);
  for (EdgeId x = 0; x < n.num_edges(); ++x) {
    if (at(removed, x) == 0) {
      ++at(outdeg, n.source(x));
      ++at(indeg, n.target(x));
    }
  }
  Reduction red;
  red.node_map.assign(m, -1);
  red.edge_map.assign(static_cast<std::size_t>(n.num_edges()), -1);
  NetworkSpec spec;
  for (NodeId v = 0; v < n.num_nodes(); ++v) {
    if (at(indeg, v) + at(outdeg, v) == 0) {
      red.dropped_nodes.push_back(v);
      continue;
    }
    at(red.node_map, v) = static_cast<NodeId>(spec.node_names.size());
    spec.node_names.push_back(n.node_name(v));
    if (!n.is_input(v) && at(indeg, v) == 0) {
      red.new_inputs.push_back(v);
    }
  }
  for (EdgeId x = 0; x < n.num_edges(); ++x) {
    if (at(removed, x) == 0) {
      at(red.edge_map, x) = static_cast<EdgeId>(spec.edges.size());
      spec.edges.emplace_back(at(red.node_map, n.source(x)), at(red.node_map, n.target(x)));
    }
  }
  for (NodeId v = 0; v < n.num_nodes(); ++v) {
    const NodeId w = at(red.node_map, v);
    if (w < 0) {
      continue;
    }
    if ((v == u || n.is_designated_output(v)) && at(indeg, v) > 0) {
      spec.outputs.push_back(w);
    }
    if (n.is_bias(v)) {
      spec.bias.push_back(w);
    }
  }
  red.net = std::make_unique<Network>(std::move(spec));
  return red;
}

Reduction build_step(ProofStep& s, const StepContext& ctx, const StepPlan& plan) {
  s.d = ctx.net.num_edges();
  s.h = ctx.net.num_hidden();
  s.num_paths = ctx.size();
  const RankCertificate& cert = ctx.certificate();
  s.rank = cert.certified() ? cert.lower : -1;
  s.row_operations = recorded_operations(plan);
  if (s.h == 0) {
    s.kind = ProofStepKind::base;
    return {};
  }
  s.kind = ProofStepKind::induction;
  const Choice& c = plan.choice;
  s.u = c.u;
  s.k = c.k;
  s.e = c.e;
  s.e_minus_u = c.e_minus_u;
  s.e_plus_u = c.e_plus_u;
  s.e_minus_k = c.e_minus_k;
  s.crossing_k = plan.algorithm_rows;
  s.e_end = plan.e_end;
  s.clearing_row = plan.clearing_row;
  Reduction red = reduce_network(ctx.net, s.u, s.e, s.e_end);
  s.reduced_edge = red.edge_map;
  s.reduced_node = red.node_map;
  s.dropped_nodes = red.dropped_nodes;
  s.new_inputs = red.new_inputs;
  return red;
}

void finish_induction_step(ProofStep& s, const StepPlan& plan, const std::vector<ProofMatrix>& mats,
                           const StepContext& next) {
  const RankCertificate& cert = next.certificate();
  s.reduced_rank = cert.certified() ? cert.lower : -1;
  const SparseIntMatrix& b5 = mats[5].matrix;
  std::unordered_map<std::string, int> seen;
  std::vector<EdgeId> mapped;
  for (const Index p : plan.hd_rows) {
    mapped.clear();
    for (const auto& entry : at(b5.row_entries, p)) {
      mapped.push_back(entry.col);
    }
    if (mapped.empty()) {
      ++s.null_rows;
    } else if (!seen.emplace(sequence_key(mapped), 1).second) {
      ++s.repeated_rows;
    }
  }
}

std::vector<ProofMatrix> compute_matrices(const ProofStep& s, const StepContext& ctx,
                                          const StepPlan& plan, std::size_t max_memory) {
  const bool base = s.kind == ProofStepKind::base;
  // Each matrix is about the size of B: the column operation adds at most one entry a row,
  // Algorithms 1 and 2 leave unit rows and the clearing empties columns.
  const double per_matrix =
      static_cast<double>(ctx.size()) * static_cast<double>(sizeof(std::vector<IntEntry>)) +
      static_cast<double>(ctx.b.nnz()) * static_cast<double>(sizeof(IntEntry));
  const int count = base ? 2 : 6;
  require_bytes(count * per_matrix, max_memory,
                fmt::format("the {} matrices of a proof step (P = {} paths, d = {} edges, "
                            "nnz(B) = {})",
                            count, ctx.size(), ctx.net.num_edges(), ctx.b.nnz()));
  std::vector<ProofMatrix> out;
  SparseIntMatrix b = SparseIntMatrix::from_pattern(ctx.b);
  const auto id_rows = identity_order(s.num_paths);
  const auto id_cols = identity_order<EdgeId>(s.d);
  if (base) {
    SparseIntMatrix bt = apply_row_operations(b, s.row_operations);
    out.push_back(named("B", std::move(b), id_rows, id_cols));
    out.push_back(named("B~", std::move(bt), id_rows, id_cols));
    return out;
  }
  const auto& rows = plan.row_order;
  const auto& cols = plan.col_order;
  SparseIntMatrix m3 = apply_column_operations(b, s);
  SparseIntMatrix m4 = apply_row_operations(m3, s.row_operations);
  SparseIntMatrix m5 = apply_clearing(m4, s);
  out.push_back(named("B", b, id_rows, id_cols));
  out.push_back(named("B'", b, id_rows, cols));
  out.push_back(named("B''", std::move(b), rows, cols));
  out.push_back(named("B~", std::move(m3), rows, cols));
  out.push_back(named("B~'", std::move(m4), rows, cols));
  out.push_back(named("B~''", std::move(m5), rows, cols));
  return out;
}

std::vector<EdgeId> compose_original(const ProofStep& s) {
  std::vector<EdgeId> next;
  for (EdgeId x = 0; x < s.d; ++x) {
    const EdgeId y = at(s.reduced_edge, x);
    if (y >= 0) {
      if (static_cast<Index>(next.size()) <= y) {
        next.resize(static_cast<std::size_t>(y) + 1, -1);
      }
      at(next, y) = at(s.original_edge, x);
    }
  }
  return next;
}

/// Pivot order for B~'': the E_end columns (their unit rows), the reduced network's fill-free
/// order, then e; the rank is at most d - h (the z_v of N_i stay in the kernel), where the
/// elimination stops.
Index modular_rank_after(const ProofStep& s, const std::vector<ProofMatrix>& mats,
                         const StepContext* next, std::uint64_t prime) {
  ModularRankOptions mo;
  mo.prime = prime;
  if (s.kind == ProofStepKind::base) {
    mo.stop_at = s.d;
    return modular_rank(mats[1].matrix, mo);
  }
  mo.column_order = s.e_end;
  std::vector<EdgeId> back(static_cast<std::size_t>(next->net.num_edges()), -1);
  for (EdgeId x = 0; x < s.d; ++x) {
    if (at(s.reduced_edge, x) >= 0) {
      at(back, at(s.reduced_edge, x)) = x;
    }
  }
  for (const EdgeId x : rank_column_order(next->net)) {
    mo.column_order.push_back(at(back, x));
  }
  mo.column_order.push_back(s.e);
  mo.stop_at = s.d - s.h;
  return modular_rank(mats[5].matrix, mo);
}

}  // namespace pathlift::detail::proof
