#include "pathlift/counting.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "pathlift/error.hpp"

namespace pathlift {

// ---------------------------------------------------------------------------------------------
// Count

Count Count::from_log10(double log10_value) {
  Count c;
  c.m_exact = false;
  c.m_log10 = log10_value;
  return c;
}

std::uint64_t Count::value() const {
  if (!m_exact) {
    throw CountOverflow(
        fmt::format("count ~10^{:.3f} does not fit in 64 bits (max ~1.8e19)", m_log10));
  }
  return m_value;
}

double Count::approx() const {
  if (m_exact) {
    return static_cast<double>(m_value);
  }
  return std::pow(10.0, m_log10);  // inf beyond double's range
}

double Count::log10() const {
  if (m_exact) {
    return m_value == 0 ? -std::numeric_limits<double>::infinity()
                        : std::log10(static_cast<double>(m_value));
  }
  return m_log10;
}

std::string Count::to_string() const {
  if (m_exact) {
    return std::to_string(m_value);
  }
  if (m_log10 < 300) {
    return fmt::format("~{:.6e}", approx());
  }
  return fmt::format("~10^{:.6f}", m_log10);
}

namespace {
double log10_sum(double a, double b) {
  const double hi = std::max(a, b);
  const double lo = std::min(a, b);
  return hi + std::log10(1.0 + std::pow(10.0, lo - hi));
}
}  // namespace

Count operator+(const Count& a, const Count& b) {
  if (a.m_exact && b.m_exact) {
    std::uint64_t sum = 0;
    if (!__builtin_add_overflow(a.m_value, b.m_value, &sum)) {
      return Count(sum);
    }
  }
  if (a.is_zero()) {
    return b;
  }
  if (b.is_zero()) {
    return a;
  }
  return Count::from_log10(log10_sum(a.log10(), b.log10()));
}

Count operator*(const Count& a, const Count& b) {
  if (a.is_zero() || b.is_zero()) {
    return Count(0);
  }
  if (a.m_exact && b.m_exact) {
    std::uint64_t prod = 0;
    if (!__builtin_mul_overflow(a.m_value, b.m_value, &prod)) {
      return Count(prod);
    }
  }
  return Count::from_log10(a.log10() + b.log10());
}

// ---------------------------------------------------------------------------------------------
// Dynamic programming

namespace {

/// F(v): partial paths from any input to v, in topological order.
std::vector<Count> forward_counts(const Network& net) {
  std::vector<Count> f(static_cast<std::size_t>(net.num_nodes()));
  for (NodeId v : net.topological_order()) {
    if (net.is_input(v)) {
      f[static_cast<std::size_t>(v)] = 1;
      continue;
    }
    Count sum = 0;
    for (EdgeId e : net.in_edges(v)) {
      sum += f[static_cast<std::size_t>(net.source(e))];
    }
    f[static_cast<std::size_t>(v)] = sum;
  }
  return f;
}

/// G(v) = [v output] + sum_{v -> w} G(w): paths from v to an output (counting v itself).
std::vector<Count> backward_counts(const Network& net) {
  std::vector<Count> g(static_cast<std::size_t>(net.num_nodes()));
  const auto topo = net.topological_order();
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    const NodeId v = *it;
    Count sum = net.is_output(v) ? 1 : 0;
    for (EdgeId e : net.out_edges(v)) {
      sum += g[static_cast<std::size_t>(net.target(e))];
    }
    g[static_cast<std::size_t>(v)] = sum;
  }
  return g;
}

}  // namespace

Count count_paths_total(const Network& net) {
  const auto f = forward_counts(net);
  Count p = 0;
  for (NodeId o : net.outputs()) {
    p += f[static_cast<std::size_t>(o)];
  }
  return p;
}

PathCounts count_paths(const Network& net) {
  PathCounts out;
  const auto f = forward_counts(net);
  const auto g = backward_counts(net);
  for (NodeId o : net.outputs()) {
    out.per_output.push_back(f[static_cast<std::size_t>(o)]);
    out.paths += f[static_cast<std::size_t>(o)];
  }
  for (NodeId i : net.inputs()) {
    out.per_input.push_back(g[static_cast<std::size_t>(i)]);
  }
  const auto d = static_cast<std::size_t>(net.num_edges());
  out.per_edge.resize(d);
  for (std::size_t e = 0; e < d; ++e) {
    const auto ei = static_cast<EdgeId>(e);
    out.per_edge[e] =
        f[static_cast<std::size_t>(net.source(ei))] * g[static_cast<std::size_t>(net.target(ei))];
    out.nnz += out.per_edge[e];
  }

  // Length histogram: partial-path counts by length into each node, stored only over the
  // node's range [shortest, longest] of lengths (a single length in layered networks).
  const auto m = static_cast<std::size_t>(net.num_nodes());
  std::vector<int> lo(m, 0), hi(m, 0);
  std::vector<std::vector<Count>> by_len(m);
  for (NodeId v : net.topological_order()) {
    const auto vi = static_cast<std::size_t>(v);
    if (net.is_input(v)) {
      by_len[vi] = {Count(1)};
      continue;
    }
    int a = std::numeric_limits<int>::max();
    int b = 0;
    for (EdgeId e : net.in_edges(v)) {
      const auto u = static_cast<std::size_t>(net.source(e));
      a = std::min(a, lo[u] + 1);
      b = std::max(b, hi[u] + 1);
    }
    lo[vi] = a;
    hi[vi] = b;
    auto& counts = by_len[vi];
    counts.assign(static_cast<std::size_t>(b - a + 1), Count(0));
    for (EdgeId e : net.in_edges(v)) {
      const auto u = static_cast<std::size_t>(net.source(e));
      for (int l = lo[u]; l <= hi[u]; ++l) {
        counts[static_cast<std::size_t>(l + 1 - a)] +=
            by_len[u][static_cast<std::size_t>(l - lo[u])];
      }
    }
  }
  for (NodeId o : net.outputs()) {
    out.max_path_length = std::max(out.max_path_length, hi[static_cast<std::size_t>(o)]);
  }
  out.length_histogram.assign(static_cast<std::size_t>(out.max_path_length) + 1, Count(0));
  for (NodeId o : net.outputs()) {
    const auto oi = static_cast<std::size_t>(o);
    for (int l = lo[oi]; l <= hi[oi]; ++l) {
      out.length_histogram[static_cast<std::size_t>(l)] +=
          by_len[oi][static_cast<std::size_t>(l - lo[oi])];
    }
  }
  return out;
}

}  // namespace pathlift
