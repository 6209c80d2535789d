#include "src/detail/engine.hpp"

#include <fmt/format.h>

#include "pathlift/error.hpp"
#include "src/detail/sinks.hpp"

namespace pathlift::detail {

namespace {

// A node's suffixes are memoised when there are at most this many, within a pool budget.
constexpr std::uint64_t k_memo_paths = 512;
constexpr std::uint64_t k_memo_pool_entries = std::uint64_t{1} << 22;

[[noreturn]] void throw_overflow(const char* what) {
  throw TooLarge(
      fmt::format("the number of {} does not fit in 64 bits: the paths cannot be "
                  "enumerated (pathlift info gives the count)",
                  what));
}

std::uint64_t checked_add(std::uint64_t a, std::uint64_t b, const char* what) {
  std::uint64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) {
    throw_overflow(what);
  }
  return r;
}

}  // namespace

WalkTables make_walk_tables(const Network& net, bool memo_structure) {
  WalkTables t;
  const auto m = static_cast<std::size_t>(net.num_nodes());
  const auto d = static_cast<std::size_t>(net.num_edges());
  t.out_offsets.assign(net.out_offsets().begin(), net.out_offsets().end());
  t.out_edge.assign(net.out_edge_list().begin(), net.out_edge_list().end());
  t.out_target.resize(d);
  const auto targets = net.targets();  // edge ids are valid: the network checked them
  for (std::size_t k = 0; k < d; ++k) {
    t.out_target[k] = targets[static_cast<std::size_t>(t.out_edge[k])];
  }
  t.edge_source.assign(net.sources().begin(), net.sources().end());
  t.is_output.resize(m);
  for (std::size_t v = 0; v < m; ++v) {
    t.is_output[v] = net.is_output(static_cast<NodeId>(v)) ? 1 : 0;
  }
  t.sorted = net.edges_increase_along_paths();
  t.inputs.assign(net.inputs().begin(), net.inputs().end());

  // S[v] = sum_{v->w} ([w output] + S[w]); lengths likewise, each suffix one edge longer.
  t.suffix_count.assign(m, 0);
  t.suffix_length.assign(m, 0);
  std::vector<int> height(m, 0);
  const auto topo = net.topological_order();
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    const auto v = static_cast<std::size_t>(*it);
    std::uint64_t count = 0;
    std::uint64_t length = 0;
    bool count_overflow = false;  // checked once per node: the loop stays branch-free
    bool length_overflow = false;
    for (Index c = t.out_offsets[v]; c < t.out_offsets[v + 1]; ++c) {
      const auto w = static_cast<std::size_t>(t.out_target[static_cast<std::size_t>(c)]);
      const std::uint64_t through = t.is_output[w] + t.suffix_count[w];  // suffixes via this edge
      std::uint64_t entries = 0;
      count_overflow |= __builtin_add_overflow(count, through, &count);
      length_overflow |= __builtin_add_overflow(through, t.suffix_length[w], &entries);
      length_overflow |= __builtin_add_overflow(length, entries, &length);
      height[v] = std::max(height[v], height[w] + 1);
    }
    if (count_overflow || length_overflow) {
      throw_overflow(count_overflow ? "paths" : "path entries");
    }
    t.suffix_count[v] = count;
    t.suffix_length[v] = length;
  }
  std::uint64_t paths = 0;
  std::uint64_t nnz = 0;
  for (NodeId i : t.inputs) {
    paths = checked_add(paths, t.suffix_count[static_cast<std::size_t>(i)], "paths");
    nnz = checked_add(nnz, t.suffix_length[static_cast<std::size_t>(i)], "path entries");
    t.max_length = std::max(t.max_length, height[static_cast<std::size_t>(i)]);
  }
  constexpr auto k_index_max = static_cast<std::uint64_t>(std::numeric_limits<Index>::max());
  if (paths > k_index_max || nnz > k_index_max) {
    throw TooLarge(fmt::format("P = {} paths with nnz = {} entries exceed 2^63", paths, nnz));
  }
  t.num_paths = static_cast<Index>(paths);
  t.nnz = static_cast<Index>(nnz);

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
  // Depth-first over prefixes whose continuation is larger than the grain; explicit stack.
  struct Frame {
    Index cursor;
    Index end;
  };
  for (NodeId i : t.inputs) {
    const auto ii = static_cast<std::size_t>(i);
    if (t.suffix_count[ii] == 0) {
      continue;
    }
    if (static_cast<Index>(t.suffix_count[ii]) <= grain || t.memo_row[ii] >= 0) {
      add_task(i, i, false);
      continue;
    }
    std::vector<Frame> frames{{t.out_offsets[ii], t.out_offsets[ii + 1]}};
    while (!frames.empty()) {
      Frame& f = frames.back();
      if (f.cursor == f.end) {
        frames.pop_back();
        if (!frames.empty()) {
          prefix.pop_back();
        }
        continue;
      }
      const auto c = static_cast<std::size_t>(f.cursor++);
      const NodeId w = t.out_target[c];
      const auto wi = static_cast<std::size_t>(w);
      prefix.push_back(t.out_edge[c]);
      if (t.is_output[wi] != 0) {
        add_task(i, w, true);
      }
      if (t.suffix_count[wi] == 0) {
        prefix.pop_back();
      } else if (static_cast<Index>(t.suffix_count[wi]) <= grain || t.memo_row[wi] >= 0) {
        add_task(i, w, false);
        prefix.pop_back();
      } else {
        frames.push_back({t.out_offsets[wi], t.out_offsets[wi + 1]});
      }
    }
  }
  return plan;
}

}  // namespace pathlift::detail
