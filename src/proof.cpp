#include "pathlift/proof.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <unordered_map>

#include "pathlift/error.hpp"
#include "pathlift/lifting.hpp"
#include "pathlift/limits.hpp"
#include "src/detail/modular_field.hpp"

namespace pathlift {

// ---------------------------------------------------------------------------------------------
// Claims
// ---------------------------------------------------------------------------------------------

namespace {

struct ClaimText {
  std::string_view id;
  std::string_view label;
  std::string_view statement;
};

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

const ClaimText& text(ProofClaim claim) {
  return claim_texts[static_cast<std::size_t>(claim)];
}

template <class V>
auto& at(V& v, Index i) {
  return v[static_cast<std::size_t>(i)];
}

std::int64_t checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) {
    throw std::overflow_error(fmt::format("proof matrix entry overflows: {} + {}", a, b));
  }
  return r;
}

std::int64_t checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) {
    throw std::overflow_error(fmt::format("proof matrix entry overflows: {} * {}", a, b));
  }
  return r;
}

}  // namespace

std::string_view claim_id(ProofClaim claim) {
  return text(claim).id;
}
std::string_view claim_statement(ProofClaim claim) {
  return text(claim).statement;
}

Eigen::Matrix<std::int64_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> displayed(
    const ProofMatrix& m, std::size_t max_memory) {
  const auto rows = static_cast<Index>(m.row_order.size());
  const auto cols = static_cast<Index>(m.col_order.size());
  const double bytes = static_cast<double>(rows) * static_cast<double>(cols) * 8.0;
  const std::size_t limit = effective_max_memory(max_memory);
  if (bytes > static_cast<double>(limit)) {
    throw TooLarge(
        fmt::format("printing {} needs a dense {} x {} matrix ({}), over the limit of {}", m.name,
                    rows, cols, format_bytes(bytes), format_bytes(static_cast<double>(limit))));
  }
  Eigen::Matrix<std::int64_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> out(rows, cols);
  for (Index i = 0; i < rows; ++i) {
    for (Index j = 0; j < cols; ++j) {
      out(i, j) = m.matrix.at(at(m.row_order, i), at(m.col_order, j));
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// A step's network with its paths
// ---------------------------------------------------------------------------------------------

namespace {

std::string sequence_key(std::span<const EdgeId> edges) {
  return {reinterpret_cast<const char*>(edges.data()), edges.size() * sizeof(EdgeId)};
}

struct StepContext {
  Network net;
  PathSet paths;
  CsrPattern b;
  std::unordered_map<std::string, Index> by_sequence;  // walk-order edges -> path

  StepContext(Network n, const EngineOptions& options)
      : net(std::move(n)), paths(enumerate_paths(net, options)), b(skeleton(paths, options)) {
    by_sequence.reserve(static_cast<std::size_t>(paths.size()));
    for (Index p = 0; p < paths.size(); ++p) {
      by_sequence.emplace(sequence_key(paths.path(p)), p);
    }
  }

  [[nodiscard]] Index find(std::span<const EdgeId> edges) const {
    const auto it = by_sequence.find(sequence_key(edges));
    return it == by_sequence.end() ? -1 : it->second;
  }
  [[nodiscard]] Index size() const { return paths.size(); }
  [[nodiscard]] EdgeId last_edge(Index p) const { return paths.path(p).back(); }
  /// The path with its last edge removed, if that is a path (-1 otherwise).
  [[nodiscard]] Index prefix(Index p) const {
    const auto edges = paths.path(p);
    return edges.size() < 2 ? -1 : find(edges.first(edges.size() - 1));
  }
  [[nodiscard]] bool crosses(Index p, NodeId v) const {
    for (const EdgeId e : paths.path(p)) {
      if (net.target(e) == v) {
        return true;
      }
    }
    return false;
  }
  /// True when the path passes through v without ending there.
  [[nodiscard]] bool crosses_not_ending(Index p, NodeId v) const {
    const auto edges = paths.path(p);
    for (std::size_t i = 0; i + 1 < edges.size(); ++i) {
      if (net.target(edges[i]) == v) {
        return true;
      }
    }
    return false;
  }

  [[nodiscard]] std::string describe_path(Index p) const {
    if (p < 0 || p >= size()) {
      return fmt::format("path {}", p);
    }
    const auto edges = paths.path(p);
    std::string nodes = net.node_name(net.source(edges.front()));
    std::string ids;
    for (const EdgeId e : edges) {
      nodes += " -> " + net.node_name(net.target(e));
      ids += fmt::format("{}{}", ids.empty() ? "" : " ", e);
    }
    return fmt::format("path {} ({}; edges {})", p, nodes, ids);
  }
  [[nodiscard]] std::string describe_edge(EdgeId e) const {
    if (e < 0 || e >= net.num_edges()) {
      return fmt::format("edge {}", e);
    }
    return fmt::format("edge {} ({})", e, net.edge_label(e));
  }
};

std::string step_context(const ProofStep& s, Index index) {
  if (s.kind == ProofStepKind::base) {
    return fmt::format("step {} (base case, h = 0)", index);
  }
  if (s.u < 0 || s.u >= s.network.num_nodes() || s.e < 0 || s.e >= s.network.num_edges()) {
    return fmt::format("step {}", index);
  }
  return fmt::format("step {} (u = {}, e = edge {} ({}))", index, s.network.node_name(s.u), s.e,
                     s.network.edge_label(s.e));
}

ProofIssue make_issue(const ProofStep& s, Index index, ProofClaim claim, const std::string& detail,
                      Index path = -1, EdgeId edge = -1, NodeId node = -1) {
  ProofIssue issue;
  issue.step = index;
  issue.claim = claim;
  issue.path = path;
  issue.edge = edge;
  issue.node = node;
  issue.message =
      fmt::format("{}: {} fails: {}", step_context(s, index), text(claim).label, detail);
  return issue;
}

// ---------------------------------------------------------------------------------------------
// The proof's definitions and operations (shared by prove_rank and check_proof)
// ---------------------------------------------------------------------------------------------

struct Choice {
  NodeId u = -1;
  NodeId k = -1;
  EdgeId e = -1;
  std::vector<EdgeId> e_minus_u, e_plus_u, e_minus_k;
};

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

std::vector<EdgeId> proof_column_order(const ProofStep& s) {
  std::vector<EdgeId> order;
  std::vector<std::uint8_t> used(static_cast<std::size_t>(s.d), 0);
  const auto add = [&](EdgeId e) {
    if (e >= 0 && e < s.d && at(used, e) == 0) {
      at(used, e) = 1;
      order.push_back(e);
    }
  };
  add(s.e);
  for (const EdgeId e : s.e_plus_u) {
    add(e);
  }
  for (const EdgeId e : s.e_minus_u) {
    add(e);
  }
  for (const EdgeId e : s.e_minus_k) {
    add(e);
  }
  for (EdgeId e = 0; e < s.d; ++e) {
    add(static_cast<EdgeId>(e));
  }
  return order;
}

/// B'' row order: paths through e, paths through an edge of E+u (by that edge), paths crossing
/// k but not u, the rest; canonical order within each group.
std::vector<Index> proof_row_order(const ProofStep& s, const StepContext& ctx) {
  std::vector<int> group(static_cast<std::size_t>(ctx.size()), 3);
  std::vector<Index> sub(static_cast<std::size_t>(ctx.size()), 0);
  for (Index p = 0; p < ctx.size(); ++p) {
    for (const EdgeId e : ctx.paths.path(p)) {
      if (e == s.e) {
        at(group, p) = 0;
      } else if (const auto it = std::find(s.e_plus_u.begin(), s.e_plus_u.end(), e);
                 it != s.e_plus_u.end()) {
        at(group, p) = 1;
        at(sub, p) = it - s.e_plus_u.begin();
      }
    }
    if (at(group, p) == 3 && ctx.crosses(p, s.k)) {
      at(group, p) = 2;
    }
  }
  std::vector<Index> order(static_cast<std::size_t>(ctx.size()));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](Index a, Index b) {
    return std::pair(at(group, a), at(sub, a)) < std::pair(at(group, b), at(sub, b));
  });
  return order;
}

/// Paths of length >= 2 for Algorithm 1 (all of them) or 2 (crossing k, not ending at k),
/// longest first, canonical order within a length.
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

std::vector<std::pair<Index, Index>> algorithm_operations(const StepContext& ctx,
                                                          const std::vector<Index>& rows) {
  std::vector<std::pair<Index, Index>> ops;
  ops.reserve(rows.size());
  for (const Index p : rows) {
    ops.emplace_back(p, ctx.prefix(p));
  }
  return ops;
}

SparseIntMatrix apply_column_operations(const SparseIntMatrix& m, const ProofStep& s) {
  SparseIntMatrix out = m;
  for (Index r = 0; r < m.rows(); ++r) {
    std::int64_t v = 0;
    for (const auto& entry : at(m.row_entries, r)) {
      if (entry.col == s.e) {
        v = checked_add(v, entry.value);
      } else if (std::find(s.e_minus_u.begin(), s.e_minus_u.end(), entry.col) !=
                 s.e_minus_u.end()) {
        v = checked_add(v, -entry.value);
      } else if (std::find(s.e_plus_u.begin(), s.e_plus_u.end(), entry.col) != s.e_plus_u.end()) {
        v = checked_add(v, entry.value);
      }
    }
    out.set(r, s.e, v);
  }
  return out;
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
      merged.push_back({b[j].col, checked_mul(-factor, b[j].value)});
      ++j;
    } else {
      const std::int64_t v = checked_add(a[i].value, checked_mul(-factor, b[j].value));
      if (v != 0) {
        merged.push_back({a[i].col, v});
      }
      ++i;
      ++j;
    }
  }
  at(m.row_entries, target) = std::move(merged);
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

/// The reduced network: u designated output, e and E_end removed, isolated nodes dropped.
struct Reduction {
  std::unique_ptr<Network> net;
  std::vector<EdgeId> edge_map;
  std::vector<NodeId> node_map;
  std::vector<NodeId> dropped_nodes, new_inputs;
};

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

bool same_network(const Network& a, const Network& b, std::string& why) {
  if (a.num_nodes() != b.num_nodes() || a.num_edges() != b.num_edges()) {
    why = fmt::format("{} nodes and {} edges instead of {} and {}", b.num_nodes(), b.num_edges(),
                      a.num_nodes(), a.num_edges());
    return false;
  }
  for (NodeId v = 0; v < a.num_nodes(); ++v) {
    if (a.node_name(v) != b.node_name(v) || a.role(v) != b.role(v)) {
      why = fmt::format("node {} is '{}' ({}) instead of '{}' ({})", v, b.node_name(v),
                        static_cast<int>(b.role(v)), a.node_name(v), static_cast<int>(a.role(v)));
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

/// First entry where a and b differ (canonical row order), as (row, column).
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
    EdgeId c = 0;
    if (i == x.size()) {
      c = y[i].col;
    } else if (i == y.size()) {
      c = x[i].col;
    } else {
      c = std::min(x[i].col, y[i].col);
    }
    return std::pair<Index, EdgeId>(r, c);
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// Building and checking steps
// ---------------------------------------------------------------------------------------------

/// Everything a step checker needs besides the step.
struct CheckEnv {
  std::uint64_t prime = default_prime;
  bool rank_after = true;
  std::vector<ProofIssue>* findings = nullptr;
};

ProofMatrix named(std::string name, SparseIntMatrix m, std::vector<Index> rows,
                  std::vector<EdgeId> cols) {
  return {std::move(name), std::move(m), std::move(rows), std::move(cols)};
}

std::vector<Index> identity_rows(Index n) {
  std::vector<Index> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

std::vector<EdgeId> identity_cols(Index n) {
  std::vector<EdgeId> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

/// The matrices of a step from its recorded data (B from the step's paths).
std::vector<ProofMatrix> compute_matrices(const ProofStep& s, const StepContext& ctx) {
  std::vector<ProofMatrix> out;
  SparseIntMatrix b = SparseIntMatrix::from_pattern(ctx.b);
  if (s.kind == ProofStepKind::base) {
    SparseIntMatrix bt = apply_row_operations(b, s.row_operations);
    out.push_back(named("B", std::move(b), identity_rows(s.num_paths), identity_cols(s.d)));
    out.push_back(named("B~", std::move(bt), identity_rows(s.num_paths), identity_cols(s.d)));
    return out;
  }
  const auto cols = proof_column_order(s);
  const auto rows = proof_row_order(s, ctx);
  SparseIntMatrix m3 = apply_column_operations(b, s);
  SparseIntMatrix m4 = apply_row_operations(m3, s.row_operations);
  SparseIntMatrix m5 = apply_clearing(m4, s);
  out.push_back(named("B", b, identity_rows(s.num_paths), identity_cols(s.d)));
  out.push_back(named("B'", b, identity_rows(s.num_paths), cols));
  out.push_back(named("B''", std::move(b), rows, cols));
  out.push_back(named("B~", std::move(m3), rows, cols));
  out.push_back(named("B~'", std::move(m4), rows, cols));
  out.push_back(named("B~''", std::move(m5), rows, cols));
  return out;
}

/// Checks that stored matrix `m` has the expected name, shape and print orders.
std::optional<ProofIssue> check_shape(const ProofStep& s, Index index, const ProofMatrix& m,
                                      const std::string& name, const std::vector<Index>& rows,
                                      const std::vector<EdgeId>& cols, ProofClaim claim) {
  if (m.name != name || m.matrix.rows() != s.num_paths || m.matrix.cols != s.d) {
    return make_issue(s, index, claim,
                      fmt::format("the matrix '{}' ({} x {}) stands where {} ({} x {}) should be",
                                  m.name, m.matrix.rows(), m.matrix.cols, name, s.num_paths, s.d));
  }
  if (m.row_order != rows) {
    return make_issue(s, index, ProofClaim::reordering,
                      fmt::format("the rows of {} are not printed in the proof's order", name));
  }
  if (m.col_order != cols) {
    return make_issue(s, index, ProofClaim::reordering,
                      fmt::format("the columns of {} are not printed in the proof's order", name));
  }
  for (const auto& row : m.matrix.row_entries) {
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (row[i].col < 0 || row[i].col >= s.d || row[i].value == 0 ||
          (i > 0 && row[i - 1].col >= row[i].col)) {
        return make_issue(s, index, claim,
                          fmt::format("{} is not a well-formed sparse matrix (row entries must "
                                      "be non-zero, in increasing columns 0..{})",
                                      name, s.d - 1));
      }
    }
  }
  return std::nullopt;
}

std::optional<ProofIssue> check_consistency(const ProofStep& s, Index index, const StepContext& ctx,
                                            const SparseIntMatrix& stored,
                                            const SparseIntMatrix& expected,
                                            const std::string& name, const std::string& how,
                                            ProofClaim claim) {
  if (const auto diff = first_difference(stored, expected)) {
    const auto [r, c] = *diff;
    return make_issue(
        s, index, claim,
        fmt::format("{} is not {}: entry ({}, {}) is {} instead of {}", name, how,
                    ctx.describe_path(r), ctx.describe_edge(c), stored.at(r, c), expected.at(r, c)),
        r, c);
  }
  return std::nullopt;
}

/// Definition 2 on a stored B: row p holds a 1 at each edge of path p and nothing else.
std::optional<ProofIssue> check_definition(const ProofStep& s, Index index, const StepContext& ctx,
                                           const SparseIntMatrix& b, const std::string& name) {
  const SparseIntMatrix truth = SparseIntMatrix::from_pattern(ctx.b);
  if (const auto diff = first_difference(b, truth)) {
    const auto [r, c] = *diff;
    const bool on_path = truth.at(r, c) != 0;
    return make_issue(
        s, index, ProofClaim::skeleton_definition,
        fmt::format("{}[{}, {}] = {} but the edge is {} the path", name, ctx.describe_path(r),
                    ctx.describe_edge(c), b.at(r, c), on_path ? "on" : "not on"),
        r, c);
  }
  return std::nullopt;
}

/// The unit-row claim of Algorithms 1 and 2: row p is the unit vector of p's last edge.
std::optional<ProofIssue> check_unit_row(const ProofStep& s, Index index, const StepContext& ctx,
                                         const SparseIntMatrix& m, Index p, ProofClaim claim,
                                         const std::string& name) {
  const EdgeId last = ctx.last_edge(p);
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
  return make_issue(s, index, claim,
                    fmt::format("row of {} in {} should be the unit vector of {}, its last "
                                "edge, but its entry at {} is {}",
                                ctx.describe_path(p), name, ctx.describe_edge(last),
                                ctx.describe_edge(bad), m.at(p, bad)),
                    p, bad);
}

std::optional<ProofIssue> check_certified_rank(const ProofStep& s, Index index,
                                               const StepContext& ctx, const CheckEnv& env,
                                               Index& rank_out) {
  RankOptions ro;
  ro.prime = env.prime;
  ro.method = RankMethod::skeleton;
  const RankCertificate cert = certify_rank(ctx.net, ctx.b, ro);
  if (!cert.certified()) {
    return make_issue(
        s, index, ProofClaim::rank_certificate,
        fmt::format("{} <= rank(B) <= {}: the bounds do not meet", cert.lower, cert.upper));
  }
  rank_out = cert.lower;
  return std::nullopt;
}

Index modular_rank_after(const ProofStep& s, const std::vector<ProofMatrix>& mats,
                         const StepContext* next, std::uint64_t prime);

std::optional<ProofIssue> check_base(const ProofStep& s, Index index, const StepContext& ctx,
                                     const std::vector<ProofMatrix>& mats, const CheckEnv& env) {
  if (s.network.num_hidden() != 0 || s.h != 0 || s.d != s.network.num_edges() ||
      s.num_paths != ctx.size()) {
    return make_issue(s, index, ProofClaim::choice,
                      fmt::format("the base case needs h = 0 (the network has h = {}, d = {}, "
                                  "P = {}; the step records h = {}, d = {}, P = {})",
                                  s.network.num_hidden(), s.network.num_edges(), ctx.size(), s.h,
                                  s.d, s.num_paths));
  }
  if (mats.size() != 2) {
    return make_issue(
        s, index, ProofClaim::skeleton_definition,
        fmt::format("the base case has {} matrices instead of 2 (B, B~)", mats.size()));
  }
  const auto rows = identity_rows(s.num_paths);
  const auto cols = identity_cols(s.d);
  if (auto i = check_shape(s, index, mats[0], "B", rows, cols, ProofClaim::skeleton_definition)) {
    return i;
  }
  if (auto i = check_definition(s, index, ctx, mats[0].matrix, "B")) {
    return i;
  }
  // Lemma 2 on every path of length >= 2, and Algorithm 1's operations.
  const auto alg_rows = algorithm_rows(ctx, -1);
  for (const Index p : alg_rows) {
    if (ctx.prefix(p) < 0) {
      return make_issue(s, index, ProofClaim::lemma2_prefix,
                        fmt::format("{} has no prefix path of length {}", ctx.describe_path(p),
                                    ctx.paths.path(p).size() - 1),
                        p, ctx.last_edge(p));
    }
  }
  if (s.row_operations != algorithm_operations(ctx, alg_rows)) {
    return make_issue(s, index, ProofClaim::algorithm1_rows,
                      "the recorded row operations are not Algorithm 1's (each path of length "
                      "l >= 2, longest first, minus its prefix path)");
  }
  if (auto i = check_shape(s, index, mats[1], "B~", rows, cols, ProofClaim::algorithm1_rows)) {
    return i;
  }
  const SparseIntMatrix& bt = mats[1].matrix;
  for (Index p = 0; p < ctx.size(); ++p) {
    if (auto i = check_unit_row(s, index, ctx, bt, p, ProofClaim::algorithm1_rows, "B~")) {
      return i;
    }
  }
  if (auto i = check_consistency(
          s, index, ctx, bt, apply_row_operations(mats[0].matrix, s.row_operations), "B~",
          "B after Algorithm 1's row operations", ProofClaim::algorithm1_rows)) {
    return i;
  }
  std::vector<std::uint8_t> hit(static_cast<std::size_t>(s.d), 0);
  for (const auto& row : bt.row_entries) {
    for (const auto& entry : row) {
      at(hit, entry.col) = 1;
    }
  }
  for (EdgeId c = 0; c < s.d; ++c) {
    if (at(hit, c) == 0) {
      return make_issue(s, index, ProofClaim::no_zero_column,
                        fmt::format("column of {} in B~ is zero", ctx.describe_edge(c)), -1, c);
    }
  }
  Index rank = -1;
  if (auto i = check_certified_rank(s, index, ctx, env, rank)) {
    return i;
  }
  if (rank != s.rank || rank != s.d) {
    return make_issue(s, index, ProofClaim::rank_equality,
                      fmt::format("rank(B) = {} (recorded {}) but d = {}", rank, s.rank, s.d));
  }
  if (env.rank_after) {
    const Index after = modular_rank_after(s, mats, nullptr, env.prime);
    if (after != rank || (s.rank_after >= 0 && s.rank_after != after)) {
      return make_issue(s, index, ProofClaim::rank_preserved,
                        fmt::format("rank(B~) mod p = {} (recorded {}) but rank(B) = {}", after,
                                    s.rank_after, rank));
    }
  }
  return std::nullopt;
}

std::optional<ProofIssue> check_induction(const ProofStep& s, Index index, const StepContext& ctx,
                                          const StepContext& next,
                                          const std::vector<ProofMatrix>& mats,
                                          const CheckEnv& env) {
  const Network& n = ctx.net;
  // The choice of u, k, e and the edge sets.
  const Choice c = choose(n);
  if (s.h != n.num_hidden() || s.d != n.num_edges() || s.num_paths != ctx.size() || c.u < 0 ||
      s.u != c.u || s.k != c.k || s.e != c.e || s.e_minus_u != c.e_minus_u ||
      s.e_plus_u != c.e_plus_u || s.e_minus_k != c.e_minus_k) {
    return make_issue(
        s, index, ProofClaim::choice,
        c.u < 0 ? std::string("the network has no hidden node")
                : fmt::format("the proof takes u = {}, k = {}, e = {} ({}); the step records "
                              "u = {}, k = {}, e = {} (or other edge sets)",
                              n.node_name(c.u), n.node_name(c.k), c.e, n.edge_label(c.e), s.u, s.k,
                              s.e),
        -1, c.e, c.u);
  }
  if (!n.is_output(c.k)) {
    return make_issue(s, index, ProofClaim::choice,
                      fmt::format("k = {} is not an output node", n.node_name(c.k)), -1, c.e, c.k);
  }
  if (mats.size() != 6) {
    return make_issue(s, index, ProofClaim::skeleton_definition,
                      fmt::format("the step has {} matrices instead of 6 (B, B', B'', B~, B~', "
                                  "B~'')",
                                  mats.size()));
  }
  const auto cols = proof_column_order(s);
  const auto rows = proof_row_order(s, ctx);
  const auto id_rows = identity_rows(s.num_paths);
  const auto id_cols = identity_cols(s.d);

  // B: Definition 2.
  if (auto i =
          check_shape(s, index, mats[0], "B", id_rows, id_cols, ProofClaim::skeleton_definition)) {
    return i;
  }
  if (auto i = check_definition(s, index, ctx, mats[0].matrix, "B")) {
    return i;
  }
  // B', B'': the same entries in the proof's orders.
  if (auto i = check_shape(s, index, mats[1], "B'", id_rows, cols, ProofClaim::reordering)) {
    return i;
  }
  if (auto i = check_consistency(s, index, ctx, mats[1].matrix, mats[0].matrix, "B'",
                                 "B with its columns reordered", ProofClaim::reordering)) {
    return i;
  }
  if (auto i = check_shape(s, index, mats[2], "B''", rows, cols, ProofClaim::reordering)) {
    return i;
  }
  const SparseIntMatrix& b2 = mats[2].matrix;
  const auto in_set = [](const std::vector<EdgeId>& set, EdgeId x) {
    return std::find(set.begin(), set.end(), x) != set.end();
  };

  // Lemma UniqueCompositionP and Lemma 3, on every row of B''.
  Index lemma3_findings = 0;
  Index lemma3_first_path = -1;
  EdgeId lemma3_first_edge = -1;
  for (const Index p : rows) {
    Index n_in = 0;
    Index n_out = 0;
    bool touches_u = false;
    EdgeId in_k = -1;
    for (const auto& entry : at(b2.row_entries, p)) {
      const bool minus_u = in_set(s.e_minus_u, entry.col);
      const bool plus_u = entry.col == s.e || in_set(s.e_plus_u, entry.col);
      n_in += minus_u ? 1 : 0;
      n_out += plus_u ? 1 : 0;
      touches_u = touches_u || minus_u || plus_u;
      if (in_k < 0 && in_set(s.e_minus_k, entry.col)) {
        in_k = entry.col;
      }
    }
    if (n_in != n_out || n_in > 1) {
      return make_issue(s, index, ProofClaim::lemma_unique_composition,
                        fmt::format("{} uses {} edge(s) of E-u and {} of {{e}} u E+u",
                                    ctx.describe_path(p), n_in, n_out),
                        p);
    }
    if (touches_u && in_k >= 0) {
      if (in_set(s.e_plus_u, in_k)) {
        // A parallel edge u -> k lies in E+u and in E-k: the lemma is false as stated.
        if (lemma3_findings++ == 0) {
          lemma3_first_path = p;
          lemma3_first_edge = in_k;
        }
        continue;
      }
      return make_issue(s, index, ProofClaim::lemma3_disjoint,
                        fmt::format("{} goes through u and through {} of E-k", ctx.describe_path(p),
                                    ctx.describe_edge(in_k)),
                        p, in_k);
    }
  }
  if (lemma3_findings > 0 && env.findings != nullptr) {
    ProofIssue f = make_issue(
        s, index, ProofClaim::lemma3_disjoint,
        fmt::format("{} goes through {}, which is parallel to e = {} and so lies both in E+u "
                    "and in E-k ({} such path(s) at this step); the lemma is false as stated "
                    "for parallel edges u -> k, but the step does not rely on it: column e of "
                    "B~ still vanishes and the rank equality holds (both checked at this step)",
                    ctx.describe_path(lemma3_first_path), ctx.describe_edge(lemma3_first_edge),
                    ctx.describe_edge(s.e), lemma3_findings),
        lemma3_first_path, lemma3_first_edge);
    env.findings->push_back(std::move(f));
  }

  // Checked after the lemmas, so that a wrong entry is named by the lemma it breaks.
  if (auto i = check_consistency(s, index, ctx, mats[2].matrix, mats[1].matrix, "B''",
                                 "B' with its rows reordered", ProofClaim::reordering)) {
    return i;
  }

  // B~: column operations; column e vanishes.
  if (auto i = check_shape(s, index, mats[3], "B~", rows, cols, ProofClaim::column_operations)) {
    return i;
  }
  const SparseIntMatrix& b3 = mats[3].matrix;
  for (const Index p : rows) {
    if (b3.at(p, s.e) != 0) {
      return make_issue(s, index, ProofClaim::column_operations,
                        fmt::format("column of e = {} in B~ is {} at the row of {}",
                                    ctx.describe_edge(s.e), b3.at(p, s.e), ctx.describe_path(p)),
                        p, s.e);
    }
  }
  if (auto i =
          check_consistency(s, index, ctx, b3, apply_column_operations(b2, s), "B~",
                            "B'' after the column operations", ProofClaim::column_operations)) {
    return i;
  }

  // Lemma 4 on every path crossing k and not ending at k, and Algorithm 2.
  const auto alg_rows = algorithm_rows(ctx, s.k);
  if (s.crossing_k != alg_rows) {
    return make_issue(s, index, ProofClaim::lemma4_prefix,
                      "the recorded paths crossing k and not ending at k are not those of the "
                      "network (longest first)");
  }
  for (const Index p : alg_rows) {
    if (ctx.prefix(p) < 0) {
      return make_issue(
          s, index, ProofClaim::lemma4_prefix,
          fmt::format("{} crosses k = {} without ending there, but has no prefix "
                      "path of length {}",
                      ctx.describe_path(p), n.node_name(s.k), ctx.paths.path(p).size() - 1),
          p, ctx.last_edge(p));
    }
  }
  if (s.row_operations != algorithm_operations(ctx, alg_rows)) {
    return make_issue(s, index, ProofClaim::algorithm2_rows,
                      "the recorded row operations are not Algorithm 2's (each path crossing k "
                      "and not ending at k, longest first, minus its prefix path)");
  }
  if (auto i = check_shape(s, index, mats[4], "B~'", rows, cols, ProofClaim::algorithm2_rows)) {
    return i;
  }
  const SparseIntMatrix& b4 = mats[4].matrix;
  for (const Index p : alg_rows) {
    if (auto i = check_unit_row(s, index, ctx, b4, p, ProofClaim::algorithm2_rows, "B~'")) {
      return i;
    }
  }
  if (auto i =
          check_consistency(s, index, ctx, b4, apply_row_operations(b3, s.row_operations), "B~'",
                            "B~ after Algorithm 2's row operations", ProofClaim::algorithm2_rows)) {
    return i;
  }

  // E_end, the clearing rows and B~''.
  std::vector<EdgeId> e_end;
  for (const Index p : alg_rows) {
    e_end.push_back(ctx.last_edge(p));
  }
  std::sort(e_end.begin(), e_end.end());
  e_end.erase(std::unique(e_end.begin(), e_end.end()), e_end.end());
  std::vector<Index> clearing(e_end.size(), -1);
  for (const Index p : rows) {  // the first unit row in print order clears its column
    if (!ctx.crosses_not_ending(p, s.k)) {
      continue;
    }
    const auto it = std::lower_bound(e_end.begin(), e_end.end(), ctx.last_edge(p));
    auto& slot = clearing[static_cast<std::size_t>(it - e_end.begin())];
    if (slot < 0) {
      slot = p;
    }
  }
  if (s.e_end != e_end || s.clearing_row != clearing) {
    return make_issue(s, index, ProofClaim::clearing,
                      "the recorded E_end or clearing rows are not the last edges of the paths "
                      "crossing k and the first unit row of each");
  }
  if (auto i = check_shape(s, index, mats[5], "B~''", rows, cols, ProofClaim::clearing)) {
    return i;
  }
  const SparseIntMatrix& b5 = mats[5].matrix;
  std::vector<std::uint8_t> is_clearing(static_cast<std::size_t>(s.num_paths), 0);
  for (const Index p : clearing) {
    at(is_clearing, p) = 1;
  }
  for (std::size_t i = 0; i < e_end.size(); ++i) {
    if (auto issue = check_unit_row(s, index, ctx, b5, clearing[i], ProofClaim::clearing, "B~''")) {
      return issue;
    }
  }
  for (const Index p : rows) {
    if (at(is_clearing, p) != 0) {
      continue;
    }
    for (const auto& entry : at(b5.row_entries, p)) {
      if (entry.col == s.e || std::binary_search(e_end.begin(), e_end.end(), entry.col)) {
        return make_issue(
            s, index, ProofClaim::clearing,
            fmt::format("row of {} in B~'' is {} at {}, a column that must be "
                        "cleared (e or E_end)",
                        ctx.describe_path(p), entry.value, ctx.describe_edge(entry.col)),
            p, entry.col);
      }
    }
  }
  if (auto i = check_consistency(s, index, ctx, b5, apply_clearing(b4, s), "B~''",
                                 "B~' with the E_end columns cleared", ProofClaim::clearing)) {
    return i;
  }

  // The reduced network.
  Reduction red;
  try {
    red = reduce_network(n, s.u, s.e, e_end);
  } catch (const NetworkError& ex) {
    return make_issue(s, index, ProofClaim::reduced_network,
                      fmt::format("the reduced network is not a valid network: {}", ex.what()));
  }
  std::string why;
  if (!same_network(*red.net, next.net, why)) {
    return make_issue(s, index, ProofClaim::reduced_network,
                      "the next step's network is not the reduced network: " + why);
  }
  if (s.reduced_edge != red.edge_map || s.reduced_node != red.node_map ||
      s.dropped_nodes != red.dropped_nodes || s.new_inputs != red.new_inputs) {
    return make_issue(s, index, ProofClaim::reduced_network,
                      "the recorded edge and node maps are not those of the reduced network");
  }
  const Index expected_d = s.d - 1 - static_cast<Index>(e_end.size());
  if (next.net.num_edges() != expected_d || next.net.num_hidden() != s.h - 1 ||
      !next.net.is_output(at(red.node_map, s.u))) {
    return make_issue(s, index, ProofClaim::reduced_network,
                      fmt::format("the reduced network has d = {} and h = {} (u {} an output); "
                                  "the proof expects d - 1 - #E_end = {} and h - 1 = {}",
                                  next.net.num_edges(), next.net.num_hidden(),
                                  next.net.is_output(at(red.node_map, s.u)) ? "is" : "is not",
                                  expected_d, s.h - 1),
                      -1, -1, s.u);
  }

  // [H; D] against the reduced skeleton.
  std::vector<std::uint8_t> covered(static_cast<std::size_t>(next.size()), 0);
  Index null_rows = 0;
  Index repeated_rows = 0;
  std::vector<EdgeId> mapped;
  for (const Index p : rows) {
    if (at(is_clearing, p) != 0) {
      continue;
    }
    mapped.clear();
    for (const auto& entry : at(b5.row_entries, p)) {
      const EdgeId x = at(red.edge_map, entry.col);
      if (entry.value != 1 || x < 0) {
        return make_issue(
            s, index, ProofClaim::reduced_skeleton,
            fmt::format("row of {} in [H; D] is {} at {}: not a 0/1 row on the "
                        "reduced network's edges",
                        ctx.describe_path(p), entry.value, ctx.describe_edge(entry.col)),
            p, entry.col);
      }
      mapped.push_back(x);
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
      return make_issue(s, index, ProofClaim::reduced_skeleton,
                        fmt::format("row of {} in [H; D] (reduced edges {}) is not a path of the "
                                    "reduced network",
                                    ctx.describe_path(p), ids),
                        p);
    }
    if (at(covered, q) != 0) {
      ++repeated_rows;
    }
    at(covered, q) = 1;
  }
  for (Index q = 0; q < next.size(); ++q) {
    if (at(covered, q) == 0) {
      return make_issue(
          s, index, ProofClaim::reduced_skeleton,
          fmt::format("{} of the reduced network is no row of [H; D]", next.describe_path(q)));
    }
  }
  if (s.null_rows != null_rows || s.repeated_rows != repeated_rows) {
    return make_issue(s, index, ProofClaim::reduced_skeleton,
                      fmt::format("[H; D] has {} null and {} repeated rows; the step records {} "
                                  "and {}",
                                  null_rows, repeated_rows, s.null_rows, s.repeated_rows));
  }

  // Ranks.
  Index rank = -1;
  Index reduced = -1;
  if (auto i = check_certified_rank(s, index, ctx, env, rank)) {
    return i;
  }
  if (auto i = check_certified_rank(s, index, next, env, reduced)) {
    i->message += " (the reduced network's skeleton)";
    return i;
  }
  if (rank != s.rank || reduced != s.reduced_rank ||
      rank != static_cast<Index>(e_end.size()) + reduced) {
    return make_issue(s, index, ProofClaim::rank_equality,
                      fmt::format("rank(B) = {} (recorded {}) but #E_end + rank(B_reduced) = {} "
                                  "+ {} (recorded {})",
                                  rank, s.rank, e_end.size(), reduced, s.reduced_rank));
  }
  if (env.rank_after) {
    const Index after = modular_rank_after(s, mats, &next, env.prime);
    if (after != rank || (s.rank_after >= 0 && s.rank_after != after)) {
      return make_issue(s, index, ProofClaim::rank_preserved,
                        fmt::format("rank(B~'') mod p = {} (recorded {}) but rank(B) = {}", after,
                                    s.rank_after, rank));
    }
  }
  return std::nullopt;
}

/// Fills a step's recorded data from the proof's definitions (the checker then verifies it).
std::unique_ptr<Network> build_step(ProofStep& s, const StepContext& ctx, const CheckEnv& env) {
  s.d = ctx.net.num_edges();
  s.h = ctx.net.num_hidden();
  s.num_paths = ctx.size();
  RankOptions ro;
  ro.prime = env.prime;
  ro.method = RankMethod::skeleton;
  const RankCertificate cert = certify_rank(ctx.net, ctx.b, ro);
  s.rank = cert.certified() ? cert.lower : -1;
  if (s.h == 0) {
    s.kind = ProofStepKind::base;
    const auto alg_rows = algorithm_rows(ctx, -1);
    s.row_operations = algorithm_operations(ctx, alg_rows);
    for (const auto& [p, q] : s.row_operations) {
      if (q < 0) {  // Lemma 2 fails: the checker reports it
        s.row_operations.clear();
        break;
      }
    }
    return nullptr;
  }
  s.kind = ProofStepKind::induction;
  Choice c = choose(ctx.net);
  s.u = c.u;
  s.k = c.k;
  s.e = c.e;
  s.e_minus_u = std::move(c.e_minus_u);
  s.e_plus_u = std::move(c.e_plus_u);
  s.e_minus_k = std::move(c.e_minus_k);
  s.crossing_k = algorithm_rows(ctx, s.k);
  s.row_operations = algorithm_operations(ctx, s.crossing_k);
  for (const Index p : s.crossing_k) {
    s.e_end.push_back(ctx.last_edge(p));
  }
  std::sort(s.e_end.begin(), s.e_end.end());
  s.e_end.erase(std::unique(s.e_end.begin(), s.e_end.end()), s.e_end.end());
  s.clearing_row.assign(s.e_end.size(), -1);
  for (const Index p : proof_row_order(s, ctx)) {
    if (ctx.crosses_not_ending(p, s.k)) {
      const auto it = std::lower_bound(s.e_end.begin(), s.e_end.end(), ctx.last_edge(p));
      auto& slot = s.clearing_row[static_cast<std::size_t>(it - s.e_end.begin())];
      if (slot < 0) {
        slot = p;
      }
    }
  }
  for (const auto& [p, q] : s.row_operations) {
    if (q < 0) {  // Lemma 4 fails: the checker reports it before any matrix is used
      s.row_operations.clear();
      break;
    }
  }
  Reduction red = reduce_network(ctx.net, s.u, s.e, s.e_end);
  s.reduced_edge = std::move(red.edge_map);
  s.reduced_node = std::move(red.node_map);
  s.dropped_nodes = std::move(red.dropped_nodes);
  s.new_inputs = std::move(red.new_inputs);
  return std::move(red.net);
}

/// Null and repeated rows of [H; D] and the reduced rank (from the next step's context).
void finish_induction_step(ProofStep& s, const std::vector<ProofMatrix>& mats,
                           const StepContext& next, const CheckEnv& env) {
  RankOptions ro;
  ro.prime = env.prime;
  ro.method = RankMethod::skeleton;
  const RankCertificate cert = certify_rank(next.net, next.b, ro);
  s.reduced_rank = cert.certified() ? cert.lower : -1;
  const SparseIntMatrix& b5 = mats[5].matrix;
  std::vector<std::uint8_t> is_clearing(static_cast<std::size_t>(s.num_paths), 0);
  for (const Index p : s.clearing_row) {
    if (p >= 0) {
      at(is_clearing, p) = 1;
    }
  }
  std::unordered_map<std::string, int> seen;
  std::vector<EdgeId> mapped;
  for (Index p = 0; p < s.num_paths; ++p) {
    if (at(is_clearing, p) != 0) {
      continue;
    }
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

/// rank mod p of B~ (base case) or B~'' (induction step). Pivot order for B~'': the E_end
/// columns (their unit rows), the reduced network's fill-free order, then e; the rank is at
/// most d - h (the z_v of N_i stay in the kernel), where the elimination stops.
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

}  // namespace

// ---------------------------------------------------------------------------------------------
// prove_rank and check_proof
// ---------------------------------------------------------------------------------------------

ProofCertificate prove_rank(const Network& net, const ProveOptions& options) {
  detail::modular_require_prime(options.prime, "prove_rank");
  ProofCertificate cert;
  cert.d = net.num_edges();
  cert.h = net.num_hidden();
  CheckEnv env;
  env.prime = options.prime;
  env.rank_after = options.check_rank_after;
  auto ctx = std::make_unique<StepContext>(net.with_weights(std::nullopt), options.engine);
  std::vector<EdgeId> original = identity_cols(net.num_edges());
  for (Index index = 0;; ++index) {
    if (options.progress) {
      options.progress("induction steps",
                       static_cast<double>(index) / static_cast<double>(cert.h + 1));
    }
    ProofStep step(ctx->net);
    step.original_edge = original;
    std::unique_ptr<Network> reduced;
    try {
      reduced = build_step(step, *ctx, env);
    } catch (const NetworkError& ex) {
      cert.failure =
          make_issue(step, index, ProofClaim::reduced_network,
                     fmt::format("the reduced network is not a valid network: {}", ex.what()));
      cert.steps.push_back(std::move(step));
      return cert;
    }
    std::vector<ProofIssue> findings;
    env.findings = &findings;
    std::optional<ProofIssue> failure;
    std::unique_ptr<StepContext> next;
    std::vector<ProofMatrix> mats;
    try {
      mats = compute_matrices(step, *ctx);
    } catch (const std::invalid_argument&) {
      // Operations that could not be applied (a lemma failed): the checker names the claim.
    }
    if (reduced) {
      next = std::make_unique<StepContext>(*reduced, options.engine);
      if (mats.size() == 6) {
        finish_induction_step(step, mats, *next, env);
      }
    }
    if (options.check_rank_after &&
        (step.kind == ProofStepKind::base ? mats.size() == 2 : mats.size() == 6)) {
      step.rank_after = modular_rank_after(step, mats, next.get(), options.prime);
    }
    failure = step.kind == ProofStepKind::base
                  ? check_base(step, index, *ctx, mats, env)
                  : check_induction(step, index, *ctx, *next, mats, env);
    step.findings = findings;
    cert.findings.insert(cert.findings.end(), findings.begin(), findings.end());
    if (options.keep_matrices) {
      step.matrices = std::move(mats);
    }
    const bool base = step.kind == ProofStepKind::base;
    if (!base && !failure) {
      original = compose_original(step);
    }
    cert.steps.push_back(std::move(step));
    if (failure) {
      cert.failure = std::move(failure);
      return cert;
    }
    if (base) {
      break;
    }
    ctx = std::move(next);
  }
  if (options.progress) {
    options.progress("induction steps", 1.0);
  }
  cert.rank = cert.steps.front().rank;
  if (cert.rank != cert.d - cert.h) {
    ProofIssue issue;
    issue.step = 0;
    issue.claim = ProofClaim::rank_equality;
    issue.message = fmt::format("the steps give rank(B) = {} but d - h = {} - {} = {}", cert.rank,
                                cert.d, cert.h, cert.d - cert.h);
    cert.failure = std::move(issue);
  }
  return cert;
}

ProofCheck check_proof(const ProofCertificate& cert, std::uint64_t prime) {
  detail::modular_require_prime(prime, "check_proof");
  ProofCheck result;
  CheckEnv env;
  env.prime = prime;
  env.rank_after = true;
  env.findings = &result.findings;
  const auto fail = [&](Index step, ProofClaim claim, std::string message) {
    ProofIssue issue;
    issue.step = step;
    issue.claim = claim;
    issue.message = std::move(message);
    result.failure = std::move(issue);
    return result;
  };
  if (cert.steps.empty()) {
    return fail(-1, ProofClaim::choice, "the certificate has no step");
  }
  const EngineOptions engine;
  std::unique_ptr<StepContext> ctx;
  try {
    ctx = std::make_unique<StepContext>(cert.steps.front().network, engine);
  } catch (const std::exception& ex) {
    return fail(0, ProofClaim::skeleton_definition,
                fmt::format("step 0: the network's paths cannot be enumerated: {}", ex.what()));
  }
  if (cert.d != ctx->net.num_edges() || cert.h != ctx->net.num_hidden()) {
    return fail(0, ProofClaim::choice,
                fmt::format("the certificate is for d = {}, h = {} but its first network has "
                            "d = {}, h = {}",
                            cert.d, cert.h, ctx->net.num_edges(), ctx->net.num_hidden()));
  }
  std::vector<EdgeId> original = identity_cols(cert.d);
  for (std::size_t i = 0; i < cert.steps.size(); ++i) {
    const auto index = static_cast<Index>(i);
    const ProofStep& s = cert.steps[i];
    if (s.original_edge != original) {
      return fail(index, ProofClaim::reduced_network,
                  fmt::format("step {}: the map to the original edges is not the composition of "
                              "the reductions",
                              index));
    }
    std::unique_ptr<StepContext> next;
    if (s.kind == ProofStepKind::induction) {
      if (i + 1 >= cert.steps.size()) {
        return fail(index, ProofClaim::reduced_network,
                    fmt::format("step {} is an induction step but no step follows it", index));
      }
      next = std::make_unique<StepContext>(cert.steps[i + 1].network, engine);
    }
    std::vector<ProofMatrix> computed;
    const std::vector<ProofMatrix>* mats = &s.matrices;
    if (s.matrices.empty()) {
      try {
        computed = compute_matrices(s, *ctx);
      } catch (const std::exception& ex) {
        return fail(index,
                    s.kind == ProofStepKind::base ? ProofClaim::algorithm1_rows
                                                  : ProofClaim::algorithm2_rows,
                    fmt::format("step {}: the recorded operations cannot be applied: {}", index,
                                ex.what()));
      }
      mats = &computed;
    }
    std::optional<ProofIssue> failure;
    try {
      failure = s.kind == ProofStepKind::base ? check_base(s, index, *ctx, *mats, env)
                                              : check_induction(s, index, *ctx, *next, *mats, env);
    } catch (const std::exception& ex) {
      return fail(
          index, ProofClaim::reordering,
          fmt::format("step {}: the recorded data cannot be applied: {}", index, ex.what()));
    }
    if (failure) {
      result.failure = std::move(failure);
      return result;
    }
    if (s.kind == ProofStepKind::base) {
      if (i + 1 != cert.steps.size()) {
        return fail(index, ProofClaim::choice,
                    fmt::format("step {} is the base case but more steps follow", index));
      }
      break;
    }
    original = compose_original(s);
    ctx = std::move(next);
  }
  if (cert.steps.back().kind != ProofStepKind::base) {
    return fail(static_cast<Index>(cert.steps.size()) - 1, ProofClaim::choice,
                "the certificate does not end with the base case");
  }
  if (cert.steps.front().rank != cert.d - cert.h || cert.rank != cert.steps.front().rank) {
    return fail(0, ProofClaim::rank_equality,
                fmt::format("the certificate says rank(B) = {} (step 0: {}) but d - h = {}",
                            cert.rank, cert.steps.front().rank, cert.d - cert.h));
  }
  return result;
}

}  // namespace pathlift
