#pragma once
// The construction of the proof's steps: the proof's definitions on a step's network (the
// choice of u, k, e, the print orders, the paths of Algorithms 1 and 2, E_end and the clearing
// rows), the row and column operations, the reduced network, and the step's recorded data.

#include <cstdint>
#include <memory>
#include <numeric>
#include <utility>
#include <vector>

#include "pathlift/proof.hpp"
#include "src/rank/detail/proof_context.hpp"

namespace pathlift::detail::proof {

/// u, k, e and the edge sets as the proof defines them (u = -1 when there is no hidden node).
struct Choice {
  NodeId u = -1;
  NodeId k = -1;
  EdgeId e = -1;
  std::vector<EdgeId> e_minus_u, e_plus_u, e_minus_k;
};

/// The proof's definitions on N_i, computed once per step: prove_rank records them, the
/// checkers hold the recorded data against them.
struct StepPlan {
  Choice choice;                      ///< induction step only
  std::vector<EdgeId> col_order;      ///< B' columns: e, E+u, E-u, E-k, the rest (identity: base)
  std::vector<Index> row_order;       ///< B'' rows (identity: base)
  std::vector<Index> algorithm_rows;  ///< Algorithm 1's or 2's paths, longest first
  /// (p, prefix of p) for each of those paths; the prefix is -1 where Lemma 2 or 4 fails.
  std::vector<std::pair<Index, Index>> row_operations;
  std::vector<EdgeId> e_end;        ///< last edges of Algorithm 2's paths, increasing
  std::vector<Index> clearing_row;  ///< the first unit row in print order of each E_end
  std::vector<Index> hd_rows;       ///< rows of [H; D]: those of B~'' but the clearing rows
};

/// The definitions on `ctx`'s network: the base case's when it has no hidden node.
StepPlan plan_step(const StepContext& ctx);

/// The identity order 0..n-1 (of rows: Index, of columns: EdgeId).
template <class T = Index>
std::vector<T> identity_order(Index n) {
  std::vector<T> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), T{0});
  return v;
}

/// The reduced network: u designated output, e and E_end removed, isolated nodes dropped.
struct Reduction {
  std::unique_ptr<Network> net;
  std::vector<EdgeId> edge_map;
  std::vector<NodeId> node_map;
  std::vector<NodeId> dropped_nodes, new_inputs;
};

/// Throws NetworkError when what is left is not a valid network.
Reduction reduce_network(const Network& n, NodeId u, EdgeId e, const std::vector<EdgeId>& e_end);

/// Records the step's data from `plan` and the certified rank of N_i; returns the reduction
/// of an induction step (net null for the base case). Throws NetworkError as reduce_network.
Reduction build_step(ProofStep& s, const StepContext& ctx, const StepPlan& plan);

/// Records the null and repeated rows of [H; D] (from B~'') and the reduced network's rank.
void finish_induction_step(ProofStep& s, const StepPlan& plan, const std::vector<ProofMatrix>& mats,
                           const StepContext& next);

/// The step's matrices from its recorded operations, B from the step's paths; print orders
/// from `plan`. Throws std::invalid_argument for operations outside the matrix, TooLarge when
/// they exceed `max_memory`.
std::vector<ProofMatrix> compute_matrices(const ProofStep& s, const StepContext& ctx,
                                          const StepPlan& plan, std::size_t max_memory);

/// B~ = B'' with column e replaced by e - sum(E-u) + sum(E+u).
SparseIntMatrix apply_column_operations(const SparseIntMatrix& m, const ProofStep& s);
/// Row p -= row p~ for each (p, p~) in order. Throws std::invalid_argument outside the rows.
SparseIntMatrix apply_row_operations(const SparseIntMatrix& m,
                                     const std::vector<std::pair<Index, Index>>& ops);
/// B~'': each E_end column cleared with its unit row.
SparseIntMatrix apply_clearing(const SparseIntMatrix& m, const ProofStep& s);

/// rank mod p of B~ (base case) or B~'' (induction step, `next` the reduced network's context).
Index modular_rank_after(const ProofStep& s, const std::vector<ProofMatrix>& mats,
                         const StepContext* next, std::uint64_t prime);

/// The map of the next step's edges to the user's network.
std::vector<EdgeId> compose_original(const ProofStep& s);

}  // namespace pathlift::detail::proof
