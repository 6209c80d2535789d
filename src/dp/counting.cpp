#include "pathlift/counting.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "pathlift/error.hpp"
#include "pathlift/limits.hpp"
#include "src/core/checked.hpp"
#include "src/core/json.hpp"
#include "src/dp/detail/ring_log10_counts.hpp"
#include "src/dp/path_totals.hpp"
#include "src/network/dag_dp.hpp"

namespace pathlift {

// ---------------------------------------------------------------------------------------------
// Dynamic programming (dag_dp.hpp, over Count: exact, then log10 beyond 64 bits)

namespace {

/// The lengths [lo, hi] of the partial paths from the inputs to a node (empty when hi < lo: no
/// input reaches it), by min- and max-plus over the DAG.
struct LengthRanges {
  struct value_type {
    int lo = std::numeric_limits<int>::max();
    int hi = -1;
    [[nodiscard]] std::size_t size() const {
      return hi < lo ? 0 : static_cast<std::size_t>(hi - lo) + 1;
    }
  };
  [[nodiscard]] static value_type zero() { return {}; }
  [[nodiscard]] static value_type start(NodeId /*v*/) { return {0, 0}; }
  [[nodiscard]] static value_type extend(EdgeId /*e*/, value_type x) {
    return x.size() == 0 ? x : value_type{x.lo + 1, x.hi + 1};
  }
  static void add(value_type& acc, const value_type& x) {
    acc.lo = std::min(acc.lo, x.lo);
    acc.hi = std::max(acc.hi, x.hi);
  }
  static void finish(NodeId /*v*/, value_type& /*acc*/) {}
};

/// A count exact while it fits in 64 bits, else m 2^e (m in [0.5, 1)): the histogram's inner
/// loop adds O(d x max_path_length) of them, where Count's log10 sum would cost a pow and a log
/// each. Converted to a Count (exact, or its log10) once per length.
class ScaledCount {
 public:
  void add(const ScaledCount& x) {
    if (m_e == k_exact && x.m_e == k_exact) {
      std::uint64_t sum = 0;
      if (!detail::add_overflows(m_exact, x.m_exact, sum)) {
        m_exact = sum;
        return;
      }
    }
    auto [am, ae] = scaled();
    auto [bm, be] = x.scaled();
    if (ae < be) {
      std::swap(am, bm);
      std::swap(ae, be);
    }
    // An addend 2^-1100 times smaller does not change a double: no ldexp to a subnormal.
    const double sum = be - ae < -1100 ? am : am + std::ldexp(bm, static_cast<int>(be - ae));
    int k = 0;
    m_m = std::frexp(sum, &k);
    m_e = ae + k;
  }
  void set_one() {
    m_exact = 1;
    m_e = k_exact;
  }
  [[nodiscard]] Count to_count() const {
    if (m_e == k_exact) {
      return Count(m_exact);
    }
    return Count::from_log10(std::log10(m_m) + static_cast<double>(m_e) * std::log10(2.0));
  }

 private:
  static constexpr std::int64_t k_exact = std::numeric_limits<std::int64_t>::min();
  [[nodiscard]] std::pair<double, std::int64_t> scaled() const {
    if (m_e != k_exact) {
      return {m_m, m_e};
    }
    int k = 0;
    const double m = std::frexp(static_cast<double>(m_exact), &k);
    return {m, k};
  }
  std::uint64_t m_exact = 0;
  double m_m = 0;
  std::int64_t m_e = k_exact;
};

/// The path-length histogram by a forward DP over the nodes in topological order: node v holds
/// the counts of its partial paths by length over its range of lengths (a single length in a
/// layered network), and is freed after its last successor has read it, so the memory held is
/// that of the live nodes only (not nodes x depth). The peak is found beforehand from the ranges
/// and refused (TooLarge) above the limit.
class LengthHistogram {
 public:
  explicit LengthHistogram(const detail::DagView& g)
      : m_g(g), m_range(detail::dag_forward(g, LengthRanges{})) {}

  /// The longest input-to-output path, in edges (0 when none).
  [[nodiscard]] int max_path_length() const {
    int longest = 0;
    for (NodeId o : m_g.net->outputs()) {
      longest = std::max(longest, m_range[static_cast<std::size_t>(o)].hi);
    }
    return longest;
  }

  /// Bytes held at the peak: the live nodes' counts, one vector header per node, the result.
  [[nodiscard]] double peak_bytes(std::size_t& peak_entries) const {
    std::size_t live = 0;
    peak_entries = 0;
    std::vector<Index> last = last_reader();
    for (Index pos = 0; pos < m_g.n; ++pos) {
      const NodeId v = m_g.topo[pos];
      live += m_range[static_cast<std::size_t>(v)].size();
      peak_entries = std::max(peak_entries, live);
      for_freed(pos, v, last,
                [&](NodeId u) { live -= m_range[static_cast<std::size_t>(u)].size(); });
    }
    const double lengths = max_path_length() + 1.0;
    return static_cast<double>(peak_entries) * sizeof(ScaledCount) +
           lengths * (sizeof(ScaledCount) + sizeof(Count)) +
           static_cast<double>(m_g.n) * (sizeof(std::vector<ScaledCount>) + sizeof(Index));
  }

  /// histogram[l] = the paths of length l.
  [[nodiscard]] std::vector<Count> compute() const {
    std::vector<ScaledCount> histogram(static_cast<std::size_t>(max_path_length()) + 1);
    std::vector<std::vector<ScaledCount>> c(static_cast<std::size_t>(m_g.n));
    std::vector<Index> last = last_reader();
    for (Index pos = 0; pos < m_g.n; ++pos) {
      const NodeId v = m_g.topo[pos];
      const auto vi = static_cast<std::size_t>(v);
      const auto& r = m_range[vi];
      std::vector<ScaledCount>& cv = c[vi];
      cv.assign(r.size(), ScaledCount{});
      if (pos < m_g.num_inputs) {
        cv[0].set_one();
      }
      for (Index t = m_g.in_off[v]; t < m_g.in_off[v + 1]; ++t) {
        const auto u = static_cast<std::size_t>(m_g.src[m_g.in_list[t]]);
        if (c[u].empty()) {
          continue;  // no input reaches u
        }
        const auto shift = static_cast<std::size_t>(m_range[u].lo + 1 - r.lo);
        for (std::size_t k = 0; k < c[u].size(); ++k) {
          cv[shift + k].add(c[u][k]);
        }
      }
      if (m_g.is_output[vi] != 0) {
        for (std::size_t k = 0; k < cv.size(); ++k) {
          histogram[static_cast<std::size_t>(r.lo) + k].add(cv[k]);
        }
      }
      for_freed(pos, v, last,
                [&](NodeId u) { std::vector<ScaledCount>().swap(c[static_cast<std::size_t>(u)]); });
    }
    std::vector<Count> out(histogram.size());
    for (std::size_t l = 0; l < out.size(); ++l) {
      out[l] = histogram[l].to_count();
    }
    return out;
  }

 private:
  /// last[v]: the topological position of v's last successor (v's own when it has none).
  [[nodiscard]] std::vector<Index> last_reader() const {
    std::vector<Index> position(static_cast<std::size_t>(m_g.n));
    for (Index pos = 0; pos < m_g.n; ++pos) {
      position[static_cast<std::size_t>(m_g.topo[pos])] = pos;
    }
    std::vector<Index> last(position);
    for (EdgeId e = 0; e < m_g.d; ++e) {
      auto& l = last[static_cast<std::size_t>(m_g.src[e])];
      l = std::max(l, position[static_cast<std::size_t>(m_g.dst[e])]);
    }
    return last;
  }

  /// Calls free(u) for each node whose last reader is v (at position pos): v's predecessors,
  /// and v itself when nothing reads it; marks them freed in `last` (parallel edges).
  template <class Free>
  void for_freed(Index pos, NodeId v, std::vector<Index>& last, Free&& free) const {
    for (Index t = m_g.in_off[v]; t < m_g.in_off[v + 1]; ++t) {
      const NodeId u = m_g.src[m_g.in_list[t]];
      if (last[static_cast<std::size_t>(u)] == pos) {
        free(u);
        last[static_cast<std::size_t>(u)] = -1;
      }
    }
    if (last[static_cast<std::size_t>(v)] == pos) {
      free(v);
      last[static_cast<std::size_t>(v)] = -1;
    }
  }

  const detail::DagView& m_g;
  std::vector<LengthRanges::value_type> m_range;
};

}  // namespace

Count count_paths_total(const Network& net) {
  const detail::DagView g(net);
  const auto f = detail::dag_forward(g, detail::Log10Counts{});
  Count p = 0;
  for (NodeId o : net.outputs()) {
    p += f[static_cast<std::size_t>(o)];
  }
  return p;
}

namespace {

/// F(v): partial paths from any input to v; G(v): paths from v to an output (v's own included).
struct ForwardBackward {
  std::vector<Count> f;
  std::vector<Count> g_total;
  explicit ForwardBackward(const detail::DagView& g)
      : f(detail::dag_forward(g, detail::Log10Counts{})),
        g_total(detail::dag_backward(g, detail::Log10Counts{}).total) {}
  /// The paths through edge e.
  [[nodiscard]] Count through(const detail::DagView& g, std::size_t e) const {
    return f[static_cast<std::size_t>(g.src[e])] * g_total[static_cast<std::size_t>(g.dst[e])];
  }
};

}  // namespace

detail::PathTotals detail::path_totals(const Network& net) {
  const DagView g(net);
  const ForwardBackward fb(g);
  PathTotals t;
  for (NodeId o : net.outputs()) {
    t.paths += fb.f[static_cast<std::size_t>(o)];
  }
  for (std::size_t e = 0; e < static_cast<std::size_t>(g.d); ++e) {
    t.nnz += fb.through(g, e);
  }
  return t;
}

PathCounts count_paths(const Network& net, const EngineOptions& options) {
  PathCounts out;
  const detail::DagView g(net);
  const ForwardBackward fb(g);
  for (NodeId o : net.outputs()) {
    out.per_output.push_back(fb.f[static_cast<std::size_t>(o)]);
    out.paths += fb.f[static_cast<std::size_t>(o)];
  }
  for (NodeId i : net.inputs()) {
    out.per_input.push_back(fb.g_total[static_cast<std::size_t>(i)]);
  }
  const auto d = static_cast<std::size_t>(net.num_edges());
  out.per_edge.resize(d);
  for (std::size_t e = 0; e < d; ++e) {
    out.per_edge[e] = fb.through(g, e);
    out.nnz += out.per_edge[e];
  }

  const LengthHistogram by_length(g);
  out.max_path_length = by_length.max_path_length();
  try {
    std::size_t peak_entries = 0;
    const double bytes = by_length.peak_bytes(peak_entries);
    require_bytes(bytes, options.max_memory,
                  fmt::format("the path-length histogram ({} nodes, paths up to {} edges long, {} "
                              "partial counts held at once)",
                              net.num_nodes(), out.max_path_length, peak_entries));
    out.length_histogram = by_length.compute();
  } catch (const TooLarge& e) {
    out.length_histogram_refused = e.what();
    out.length_histogram_memory_bound = e.reason() == TooLarge::Reason::memory_limit;
  }
  return out;
}

std::string to_json(const PathCounts& counts, int indent) {
  using detail::count_json;
  using detail::Json;
  Json j;
  j["P"] = count_json(counts.paths);
  j["P_exact"] = counts.paths.exact();
  j["log10_P"] = counts.paths.log10();
  j["nnz"] = count_json(counts.nnz);
  j["nnz_exact"] = counts.nnz.exact();
  j["max_path_length"] = counts.max_path_length >= 0 ? Json(counts.max_path_length) : Json(nullptr);
  Json hist = Json::object();
  for (std::size_t l = 0; l < counts.length_histogram.size(); ++l) {
    if (!counts.length_histogram[l].is_zero()) {
      hist[std::to_string(l)] = count_json(counts.length_histogram[l]);
    }
  }
  j["length_histogram"] = counts.length_histogram_refused.empty() ? hist : Json(nullptr);
  if (!counts.length_histogram_refused.empty()) {
    j["length_histogram_refused"] = counts.length_histogram_refused;
  }
  return j.dump(indent);
}

}  // namespace pathlift
