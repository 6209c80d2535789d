// The DAG substrate (src/network/dag.hpp, dag_dp.hpp, src/walk/detail/walk.hpp) against brute
// force: each ring's DP against counts taken path by path, the canonical walk against the reference
// walk, and the walks run from inside a caller's OpenMP region.

#include <gtest/gtest.h>
#include <omp.h>

#include <cstdint>
#include <string>
#include <vector>

#include "pathlift/builtins.hpp"
#include "pathlift/error.hpp"
#include "pathlift/paths.hpp"
#include "reference.hpp"
#include "src/dp/detail/ring_log10_counts.hpp"
#include "src/dp/detail/ring_mod_counts.hpp"
#include "src/dp/detail/ring_saturated_u64.hpp"
#include "src/network/dag_dp.hpp"
#include "src/network/ring_longest_paths.hpp"
#include "src/walk/detail/ring_checked_counts.hpp"
#include "src/walk/detail/ring_saturating_counts.hpp"
#include "src/walk/detail/walk.hpp"

namespace pathlift {
namespace {

using detail::DagView;

/// Paths from v to an output, the empty one included when v is an output, by recursion.
std::uint64_t brute_paths_from(const Network& net, NodeId v) {
  std::uint64_t n = net.is_output(v) ? 1 : 0;
  for (const EdgeId e : net.out_edges(v)) {
    n += brute_paths_from(net, net.target(e));
  }
  return n;
}

/// Partial paths from any input to v.
std::uint64_t brute_paths_into(const Network& net, NodeId v) {
  if (net.is_input(v)) {
    return 1;
  }
  std::uint64_t n = 0;
  for (const EdgeId e : net.in_edges(v)) {
    n += brute_paths_into(net, net.source(e));
  }
  return n;
}

std::vector<Network> small_networks() {
  std::vector<Network> nets{fig1(), sketch_h0(), sketch_h1(), feed_forward(3, {4, 3}, 2)};
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    nets.push_back(testing::random_network(seed));
  }
  return nets;
}

TEST(DagDp, EveryRingAgreesWithCountsTakenPathByPath) {
  const std::uint64_t p = 1000003;
  const detail::ModField field(p);
  for (const Network& net : small_networks()) {
    const DagView g(net);
    const auto fwd = detail::dag_forward(g, detail::Log10Counts{});
    const auto bwd = detail::dag_backward(g, detail::Log10Counts{});
    const auto sat = detail::dag_backward(g, detail::SaturatingCounts{3});
    const auto u64 = detail::dag_backward(g, detail::SaturatedU64{});
    const auto mod = detail::dag_backward(g, detail::ModCounts{&field});
    const auto len = detail::dag_backward(g, detail::CheckedCountsAndLengths{&net});
    for (NodeId v = 0; v < net.num_nodes(); ++v) {
      const auto i = static_cast<std::size_t>(v);
      const std::uint64_t total = brute_paths_from(net, v);
      const std::uint64_t suffix = total - (net.is_output(v) ? 1 : 0);
      EXPECT_EQ(fwd[i].value(), brute_paths_into(net, v)) << net.node_name(v);
      EXPECT_EQ(bwd.total[i].value(), total) << net.node_name(v);
      EXPECT_EQ(bwd.suffix[i].value(), suffix) << net.node_name(v);
      EXPECT_EQ(sat.suffix[i], std::min<Index>(static_cast<Index>(suffix), 3));
      EXPECT_EQ(u64.total[i], total);
      EXPECT_EQ(field.to_residue(mod.total[i]), total % p);
      EXPECT_EQ(len.suffix[i].count, suffix);
    }
  }
}

TEST(DagDp, LengthsAreTheSumOfTheSuffixLengths) {
  const auto nets = small_networks();
  for (std::size_t n = 0; n < nets.size(); ++n) {
    const Network& net = nets[n];
    const DagView g(net);
    const auto len = detail::dag_backward(g, detail::CheckedCountsAndLengths{&net});
    std::uint64_t nnz = 0;
    for (const NodeId i : net.inputs()) {
      nnz += len.suffix[static_cast<std::size_t>(i)].length;
    }
    std::uint64_t expected = 0;
    for (const auto& path : testing::ref_paths(net)) {
      expected += path.edges.size();
    }
    EXPECT_EQ(nnz, expected) << "network " << n;
  }
}

TEST(DagDp, CheckedCountsNameTheNodeWhereTheyOverflow) {
  // 2 * 8^25 * 2 = 2^77 paths: some suffix count passes 2^64.
  const Network net = feed_forward(2, std::vector<Index>(25, 8), 2, false);
  const DagView g(net);
  try {
    (void)detail::dag_backward(g, detail::CheckedCountsAndLengths{&net});
    FAIL() << "no overflow reported";
  } catch (const TooLarge& e) {
    EXPECT_NE(std::string(e.what()).find("from node"), std::string::npos) << e.what();
  }
  // Log10 counts carry on past 64 bits; saturated ones stop at the cap.
  const auto f = detail::dag_backward(g, detail::Log10Counts{});
  EXPECT_FALSE(f.total[static_cast<std::size_t>(net.inputs()[0])].exact());
  const auto s = detail::dag_backward(g, detail::SaturatedU64{});
  EXPECT_EQ(s.total[static_cast<std::size_t>(net.inputs()[0])], detail::SaturatedU64::over);
}

/// Records every path the canonical walk emits.
struct Recorder {
  const Network& net;
  NodeId start;
  std::vector<EdgeId> prefix;
  std::vector<testing::RefPath> paths;

  detail::WalkStep arrive(EdgeId e, NodeId w) {
    prefix.push_back(e);
    if (net.is_output(w)) {
      paths.push_back({prefix, start, w});
    }
    if (net.out_edges(w).empty()) {
      prefix.pop_back();
      return detail::WalkStep::skip;
    }
    return detail::WalkStep::descend;
  }
  void leave() { prefix.pop_back(); }
};

TEST(CanonicalWalk, EmitsThePathsInTheReferenceOrder) {
  const auto nets = small_networks();
  for (std::size_t n = 0; n < nets.size(); ++n) {
    const Network& net = nets[n];
    const DagView g(net, /*with_out_targets=*/true);
    std::vector<testing::RefPath> walked;
    for (const NodeId i : net.inputs()) {
      Recorder r{net, i, {}, {}};
      detail::canonical_walk(g, i, r);
      walked.insert(walked.end(), r.paths.begin(), r.paths.end());
    }
    const auto ref = testing::ref_paths(net);
    ASSERT_EQ(walked.size(), ref.size()) << "network " << n;
    for (std::size_t k = 0; k < ref.size(); ++k) {
      EXPECT_EQ(walked[k].edges, ref[k].edges) << "network " << n << " path " << k;
      EXPECT_EQ(walked[k].end, ref[k].end) << "network " << n << " path " << k;
    }
  }
}

// A caller's parallel region around a one-thread engine call: the engine's work-sharing loop
// must run whole on each caller thread, not be shared with the caller's team.
TEST(CanonicalWalk, EngineCallsInsideACallersParallelRegionAreWhole) {
  const Network net = feed_forward(5, {16, 16, 16}, 2);  // 41,472 paths: many tasks
  EngineOptions one;
  one.threads = 1;
  const PathSet expected = enumerate_paths(net, one);
  std::vector<Index> sizes(4, -1);
  std::vector<int> same(4, 0);
#pragma omp parallel num_threads(4)
  {
    const auto t = static_cast<std::size_t>(omp_get_thread_num());
    const PathSet got = enumerate_paths(net, one);
    sizes[t] = got.size();
    same[t] = (*got.edges == *expected.edges && *got.offsets == *expected.offsets) ? 1 : 0;
  }
  for (std::size_t t = 0; t < sizes.size(); ++t) {
    if (sizes[t] < 0) {
      continue;  // OpenMP gave fewer threads
    }
    EXPECT_EQ(sizes[t], expected.size());
    EXPECT_EQ(same[t], 1) << "thread " << t;
  }
}

}  // namespace
}  // namespace pathlift
