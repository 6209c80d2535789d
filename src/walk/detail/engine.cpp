#include "src/walk/detail/engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <span>
#include <string>

#include "pathlift/error.hpp"
#include "src/core/checked.hpp"
#include "src/network/dag_dp.hpp"
#include "src/network/ring_longest_paths.hpp"
#include "src/walk/detail/ring_checked_counts.hpp"
#include "src/walk/detail/sinks.hpp"

namespace pathlift::detail {

namespace {

// A node's suffixes are memoised when there are at most this many, within a pool budget.
constexpr std::uint64_t k_memo_paths = 512;
constexpr std::uint64_t k_memo_pool_entries = std::uint64_t{1} << 22;

std::string overflow_message(const char* what) {
  return fmt::format(
      "the number of {} does not fit in 64 bits: the paths cannot be enumerated (their number "
      "is counted without enumeration)",
      what);
}

}  // namespace

WalkTables make_walk_tables(const Network& net, bool memo_structure) {
  WalkTables t(net);
  const DagView& g = t.dag;
  const auto m = static_cast<std::size_t>(g.n);
  t.sorted = net.edges_increase_along_paths();

  // S[v] and the suffixes' total length, exact or refused (TooLarge naming the node).
  {
    auto sums = dag_backward(g, CheckedCountsAndLengths{&net});
    t.suffix_count.resize(m);
    t.suffix_length.resize(m);
    for (std::size_t v = 0; v < m; ++v) {
      t.suffix_count[v] = sums.suffix[v].count;
      t.suffix_length[v] = sums.suffix[v].length;
    }
  }
  const auto height = dag_backward(g, LongestPaths{}).suffix;
  std::uint64_t paths = 0;
  std::uint64_t nnz = 0;
  for (NodeId i : net.inputs()) {
    const auto ii = static_cast<std::size_t>(i);
    paths = checked_add(paths, t.suffix_count[ii], [] { return overflow_message("paths"); });
    nnz = checked_add(nnz, t.suffix_length[ii], [] { return overflow_message("path entries"); });
    t.max_length = std::max(t.max_length, height[ii]);
  }
  constexpr auto k_index_max = static_cast<std::uint64_t>(std::numeric_limits<Index>::max());
  if (paths > k_index_max || nnz > k_index_max) {
    throw TooLarge(fmt::format("P = {} paths with nnz = {} entries exceed 2^63", paths, nnz),
                   TooLarge::Reason::too_many_paths);
  }
  t.num_paths = static_cast<Index>(paths);
  t.nnz = static_cast<Index>(nnz);
  const std::span<const NodeId> topo(g.topo, m);

  // Memo blocks, children first (reverse topological order), within the pool budget.
  t.memo_row.assign(m, -1);
  std::uint64_t pool_rows = 0;
  std::uint64_t pool_entries = 0;
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    const auto v = static_cast<std::size_t>(*it);
    const std::uint64_t s = t.suffix_count[v];
    if (s == 0 || s > k_memo_paths || pool_entries + t.suffix_length[v] > k_memo_pool_entries) {
      continue;
    }
    t.memo_row[v] = static_cast<Index>(pool_rows);
    t.memo_nodes.push_back(static_cast<NodeId>(v));
    pool_rows += s;
    pool_entries += t.suffix_length[v];
  }
  t.memo_rows = static_cast<Index>(pool_rows);
  t.has_memo_structure = memo_structure;
  if (!memo_structure) {
    return t;
  }
  t.memo_offsets.resize(pool_rows + 1);
  t.memo_edges.resize(pool_entries);
  t.memo_end.resize(pool_rows);
  t.memo_offsets[0] = 0;
  // Each node's rows start where the previous node's rows end (nodes in pool order).
  Prefix<double> prefix(t.max_length);
  Index entry = 0;
  for (NodeId v : t.memo_nodes) {
    prefix.length = 0;
    StructureSink<double> sink{
        &t,      t.memo_offsets.data(), t.memo_edges.data(),
        nullptr, t.memo_end.data(),     t.memo_row[static_cast<std::size_t>(v)],
        entry};
    walk_from<double>(t, v, prefix, nullptr, sink, /*memo_at_root=*/false);
    entry = sink.entry;
  }
  return t;
}

Index walk_grain(Index num_paths) {
  return std::max<Index>(num_paths / 256, 4096);
}

WalkPlan plan_walk(const WalkTables& t, Index grain) {
  WalkPlan plan;
  std::vector<EdgeId> prefix;
  Index path = 0;
  Index entry = 0;
  const auto add_task = [&](NodeId start, NodeId node, bool emit_self) {
    WalkTask task;
    task.prefix_begin = static_cast<Index>(plan.prefix_pool.size());
    plan.prefix_pool.insert(plan.prefix_pool.end(), prefix.begin(), prefix.end());
    task.prefix_end = static_cast<Index>(plan.prefix_pool.size());
    task.start = start;
    task.node = node;
    task.emit_self = emit_self;
    task.first_path = path;
    task.first_entry = entry;
    const auto len = static_cast<Index>(prefix.size());
    const auto n = static_cast<std::size_t>(node);
    if (emit_self) {
      task.paths = 1;
      entry += len;
    } else {
      task.paths = static_cast<Index>(t.suffix_count[n]);
      entry += len * task.paths + static_cast<Index>(t.suffix_length[n]);
    }
    path += task.paths;
    plan.tasks.push_back(task);
  };
  // The canonical walk over the prefixes whose continuation is larger than the grain.
  struct Cutter {
    const WalkTables& t;
    std::vector<EdgeId>& prefix;
    Index grain;
    NodeId input;
    const decltype(add_task)& add;

    WalkStep arrive(EdgeId e, NodeId w) {
      const auto wi = static_cast<std::size_t>(w);
      prefix.push_back(e);
      if (t.dag.is_output[wi] != 0) {
        add(input, w, true);
      }
      if (t.suffix_count[wi] == 0) {
        prefix.pop_back();
        return WalkStep::skip;
      }
      if (static_cast<Index>(t.suffix_count[wi]) <= grain || t.memo_row[wi] >= 0) {
        add(input, w, false);
        prefix.pop_back();
        return WalkStep::skip;
      }
      return WalkStep::descend;
    }
    void leave() { prefix.pop_back(); }
  };
  for (NodeId i : t.dag.net->inputs()) {
    const auto ii = static_cast<std::size_t>(i);
    if (t.suffix_count[ii] == 0) {
      continue;
    }
    if (static_cast<Index>(t.suffix_count[ii]) <= grain || t.memo_row[ii] >= 0) {
      add_task(i, i, false);
      continue;
    }
    Cutter cutter{t, prefix, grain, i, add_task};
    std::vector<WalkFrame> frames;
    canonical_walk(t.dag, i, cutter, frames);
  }
  return plan;
}

}  // namespace pathlift::detail
