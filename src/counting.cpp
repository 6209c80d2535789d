#include "pathlift/counting.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "pathlift/error.hpp"
#include "src/detail/dag_dp.hpp"

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
    if (!detail::add_overflows(a.m_value, b.m_value, sum)) {
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
    if (!detail::mul_overflows(a.m_value, b.m_value, prod)) {
      return Count(prod);
    }
  }
  return Count::from_log10(a.log10() + b.log10());
}

// ---------------------------------------------------------------------------------------------
// Dynamic programming (dag_dp.hpp, over Count: exact, then log10 beyond 64 bits)

namespace {

/// Partial-path counts by length: c[k] paths of length lo + k, stored only over the node's
/// range of lengths (a single length in layered networks). A ring whose extend() shifts the
/// lengths by one edge and whose sum merges the ranges.
struct LengthHistograms {
  struct value_type {
    int lo = 0;
    std::vector<Count> c;
  };
  [[nodiscard]] static value_type zero() { return {}; }
  [[nodiscard]] static value_type start(NodeId /*v*/) { return {0, {Count(1)}}; }
  [[nodiscard]] static value_type extend(EdgeId /*e*/, value_type x) {
    ++x.lo;
    return x;
  }
  static void add(value_type& acc, const value_type& x) {
    if (x.c.empty()) {
      return;
    }
    if (acc.c.empty()) {
      acc = x;
      return;
    }
    const int lo = std::min(acc.lo, x.lo);
    const int hi =
        std::max(acc.lo + static_cast<int>(acc.c.size()), x.lo + static_cast<int>(x.c.size()));
    if (lo < acc.lo || hi > acc.lo + static_cast<int>(acc.c.size())) {
      std::vector<Count> merged(static_cast<std::size_t>(hi - lo), Count(0));
      std::copy(acc.c.begin(), acc.c.end(), merged.begin() + (acc.lo - lo));
      acc.c = std::move(merged);
      acc.lo = lo;
    }
    for (std::size_t k = 0; k < x.c.size(); ++k) {
      acc.c[static_cast<std::size_t>(x.lo - acc.lo) + k] += x.c[k];
    }
  }
  static void finish(NodeId /*v*/, value_type& /*acc*/) {}
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

PathCounts count_paths(const Network& net) {
  PathCounts out;
  const detail::DagView g(net);
  // F(v): partial paths from any input to v; G(v): paths from v to an output (v's own included).
  const auto f = detail::dag_forward(g, detail::Log10Counts{});
  const auto g_total = detail::dag_backward(g, detail::Log10Counts{}).total;
  for (NodeId o : net.outputs()) {
    out.per_output.push_back(f[static_cast<std::size_t>(o)]);
    out.paths += f[static_cast<std::size_t>(o)];
  }
  for (NodeId i : net.inputs()) {
    out.per_input.push_back(g_total[static_cast<std::size_t>(i)]);
  }
  const auto d = static_cast<std::size_t>(net.num_edges());
  out.per_edge.resize(d);
  for (std::size_t e = 0; e < d; ++e) {
    out.per_edge[e] =
        f[static_cast<std::size_t>(g.src[e])] * g_total[static_cast<std::size_t>(g.dst[e])];
    out.nnz += out.per_edge[e];
  }

  const auto by_length = detail::dag_forward(g, LengthHistograms{});
  for (NodeId o : net.outputs()) {
    const auto& h = by_length[static_cast<std::size_t>(o)];
    if (!h.c.empty()) {
      out.max_path_length = std::max(out.max_path_length, h.lo + static_cast<int>(h.c.size()) - 1);
    }
  }
  out.length_histogram.assign(static_cast<std::size_t>(out.max_path_length) + 1, Count(0));
  for (NodeId o : net.outputs()) {
    const auto& h = by_length[static_cast<std::size_t>(o)];
    for (std::size_t k = 0; k < h.c.size(); ++k) {
      out.length_histogram[static_cast<std::size_t>(h.lo) + k] += h.c[k];
    }
  }
  return out;
}

}  // namespace pathlift
