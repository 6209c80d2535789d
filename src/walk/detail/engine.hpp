#pragma once
// The path engine: a depth-first walk over the DAG in canonical path order, shared by path
// enumeration, the path-lifting, the skeleton and the Jacobian.
//
// Why it is fast: the non-empty suffixes of a node v (the paths from v to an output, in
// canonical order) are the same whatever prefix reached v. For nodes with few suffixes
// (S[v] <= k_memo_paths) they are computed once per call ("memo" blocks), and the walk emits
// them as a block behind the current prefix: for Phi, one multiply per path over contiguous
// memory (out[j] = prefix_product * suffix_product[j]); for dPhi, prefix-side entries
// prefix_others[i] * suffix_product[j] and suffix-side entries prefix_product *
// suffix_others[k]. No path is re-walked and no division is used (exact at theta_e = 0).
//
// Why it is deterministic: the walk is cut into tasks (prefixes) by a rule that depends on
// the counts only, never on the thread count, and each task writes into the range of paths
// and entries the DP counts give it. Every value is computed by the same sequence of
// floating-point operations whatever thread runs it.

#include <omp.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "pathlift/network.hpp"
#include "pathlift/options.hpp"
#include "pathlift/types.hpp"
#include "src/core/parallel.hpp"
#include "src/network/dag.hpp"
#include "src/walk/detail/walk.hpp"

namespace pathlift::detail {

/// Theta-independent tables of a network for the walk.
struct WalkTables {
  /// The network's arrays (with the out-CSR targets the walk reads).
  DagView dag;
  /// S[v]: number of non-empty suffixes from v (paths from v to an output, length >= 1).
  std::vector<std::uint64_t> suffix_count;
  /// Total length of those suffixes.
  std::vector<std::uint64_t> suffix_length;
  Index num_paths = 0;  ///< P
  Index nnz = 0;        ///< sum of path lengths
  int max_length = 0;   ///< longest path (edges)
  bool sorted = false;  ///< edges increase along every path

  explicit WalkTables(const Network& net) : dag(net, /*with_out_targets=*/true) {}

  // Memo blocks: the suffixes of node v are rows memo_row[v] .. memo_row[v] + S[v] of a pool
  // (CSR: memo_offsets, memo_edges, memo_end) when memo_row[v] >= 0.
  std::vector<Index> memo_row;
  std::vector<NodeId> memo_nodes;   ///< children before parents
  Index memo_rows = 0;              ///< pool rows
  bool has_memo_structure = false;  ///< whether the three arrays below are filled
  Buffer<Index> memo_offsets;       ///< pool rows + 1
  Buffer<EdgeId> memo_edges;        ///< walk order
  Buffer<NodeId> memo_end;          ///< output node of each pool row

  /// Node v's memo block (memo_row[v] >= 0): its pool rows [first, last), one per suffix.
  struct MemoBlock {
    Index first;
    Index last;
  };
  [[nodiscard]] MemoBlock memo_block(NodeId v) const {
    const Index first = memo_row[static_cast<std::size_t>(v)];
    return {first, first + static_cast<Index>(suffix_count[static_cast<std::size_t>(v)])};
  }
};

/// Builds the tables. The pool's edges (memo_offsets, memo_edges, memo_end) are what path
/// structure and dPhi need; Phi needs only the pool's layout, so `memo_structure = false`
/// skips them (a tenth of Phi's time on one core at ff:5,64,64,64,2, all of it serial).
/// Throws TooLarge when P or nnz does not fit in 64 bits.
WalkTables make_walk_tables(const Network& net, bool memo_structure = true);

/// The prefix the walk is on: its edges, and pre[k] = product of the first k weights.
template <class T>
struct Prefix {
  std::vector<EdgeId> edges;
  std::vector<T> pre;
  std::vector<T> others;  // scratch: product of the prefix's weights except edge i
  Index length = 0;
  NodeId start = -1;

  explicit Prefix(int max_length)
      : edges(static_cast<std::size_t>(max_length) + 1),
        pre(static_cast<std::size_t>(max_length) + 2),
        others(static_cast<std::size_t>(max_length) + 1) {
    pre[0] = T(1);
  }
  void push(EdgeId e, const T* theta) {
    edges[static_cast<std::size_t>(length)] = e;
    pre[static_cast<std::size_t>(length) + 1] =
        pre[static_cast<std::size_t>(length)] * (theta ? theta[e] : T(1));
    ++length;
  }
  void pop() { --length; }
  [[nodiscard]] T product() const { return pre[static_cast<std::size_t>(length)]; }
  /// others[i] = prod_{j != i} theta_{edges[j]} over the prefix, by prefix x suffix products.
  void compute_others(const T* theta) {
    T suffix = T(1);
    for (Index i = length - 1; i >= 0; --i) {
      const auto k = static_cast<std::size_t>(i);
      others[k] = pre[k] * suffix;
      suffix *= theta[edges[k]];
    }
  }
};

/// A unit of parallel work: a prefix (edges[begin, end) of the task pool) ending at `node`,
/// and the paths it covers: the prefix itself (emit_self) or all its continuations from node.
struct WalkTask {
  Index prefix_begin = 0;
  Index prefix_end = 0;
  NodeId start = -1;
  NodeId node = -1;
  bool emit_self = false;
  Index first_path = 0;
  Index first_entry = 0;
  Index paths = 0;
};

struct WalkPlan {
  std::vector<EdgeId> prefix_pool;
  std::vector<WalkTask> tasks;
};

/// Cuts the walk into tasks of at most about `grain` paths, in canonical order.
WalkPlan plan_walk(const WalkTables& t, Index grain);

/// The task grain for a network: depends on P only (never on the thread count).
Index walk_grain(Index num_paths);

/// The engine's visitor of the canonical walk: carries the prefix and hands every path ending
/// on an output to sink.single(prefix, end_node), and every memo node v reached (with
/// suffixes) to sink.block(prefix, v), which emits v's suffixes behind the prefix at once.
template <class T, class Sink>
struct EngineVisitor {
  const WalkTables& t;
  Prefix<T>& prefix;
  const T* theta;
  Sink& sink;

  [[gnu::always_inline]] WalkStep arrive(EdgeId e, NodeId w) {
    const auto wi = static_cast<std::size_t>(w);
    prefix.push(e, theta);
    if (t.dag.is_output[wi] != 0) {
      sink.single(prefix, w);
    }
    if (t.suffix_count[wi] == 0) {
      prefix.pop();
      return WalkStep::skip;
    }
    if (t.memo_row[wi] >= 0) {
      sink.block(prefix, w);
      prefix.pop();
      return WalkStep::skip;
    }
    return WalkStep::descend;
  }
  [[gnu::always_inline]] void leave() { prefix.pop(); }
};

/// Walks every continuation of `prefix` from node u (u's non-empty suffixes), in canonical
/// order, calling sink.single(prefix, end_node) for each path ending on an output and
/// sink.block(prefix, v) when it reaches a memo node v with suffixes (except at the root when
/// `memo_at_root` is false). T is the scalar of the prefix products (theta may be null).
template <class T, class Sink>
[[gnu::always_inline]] inline void walk_from(const WalkTables& t, NodeId u, Prefix<T>& prefix,
                                             const T* theta, Sink& sink, bool memo_at_root = true) {
  if (memo_at_root && t.memo_row[static_cast<std::size_t>(u)] >= 0) {
    sink.block(prefix, u);
    return;
  }
  EngineVisitor<T, Sink> visitor{t, prefix, theta, sink};
  canonical_walk(t.dag, u, visitor);
}

/// Runs `make_sink(task)`'s walk for every task of the plan on `threads` OpenMP threads
/// (0 = all), reporting progress (fraction of paths done) from the calling thread.
template <class T, class MakeSink>
void run_plan(const WalkTables& t, const WalkPlan& plan, const T* theta, int threads,
              const std::function<void(double)>& progress, MakeSink&& make_sink) {
  const auto num_tasks = static_cast<std::int64_t>(plan.tasks.size());
  std::atomic<Index> done{0};
  const int nthreads = resolve_threads(threads);
  const double total = static_cast<double>(std::max<Index>(t.num_paths, 1));
  // Small walks run on the calling thread: starting a thread team costs more than they do.
  const bool parallel = num_tasks > 1 && t.nnz >= k_parallel_min_entries;
  run_team(nthreads, parallel, [&] {
    Prefix<T> prefix(t.max_length);
    double reported = 0.0;
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t k = 0; k < num_tasks; ++k) {
      const WalkTask& task = plan.tasks[static_cast<std::size_t>(k)];
      prefix.length = 0;
      prefix.start = task.start;
      for (Index i = task.prefix_begin; i < task.prefix_end; ++i) {
        prefix.push(plan.prefix_pool[static_cast<std::size_t>(i)], theta);
      }
      auto sink = make_sink(task);
      if (task.emit_self) {
        sink.single(prefix, task.node);
      } else {
        walk_from(t, task.node, prefix, theta, sink);
      }
      const Index now = done.fetch_add(task.paths, std::memory_order_relaxed) + task.paths;
      if (progress && omp_get_thread_num() == 0) {
        const double fraction = static_cast<double>(now) / total;
        if (fraction - reported >= 0.01) {
          reported = fraction;
          progress(fraction);
        }
      }
    }
#if defined(__SSE2__)
    _mm_sfence();  // streaming stores (PhiSink) are visible before the team's barrier
#endif
  });
  if (progress) {
    progress(1.0);
  }
}

/// Sorts the entries [begin, end) of a row by column, carrying values along (rows are short).
template <class T>
void sort_row(EdgeId* cols, T* values, Index n) {
  for (Index i = 1; i < n; ++i) {
    const EdgeId c = cols[i];
    const T v = values ? values[i] : T();
    Index j = i - 1;
    while (j >= 0 && cols[j] > c) {
      cols[j + 1] = cols[j];
      if (values) {
        values[j + 1] = values[j];
      }
      --j;
    }
    cols[j + 1] = c;
    if (values) {
      values[j + 1] = v;
    }
  }
}

}  // namespace pathlift::detail
