// Memory that the limit sees (issue 19, item 5): the path-length histogram holds only the nodes
// still to be read and is refused, alone, above the limit; a limit above the physical memory is
// refused with both sizes; work holding several results is refused on their sum.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "pathlift/builtins.hpp"
#include "pathlift/checks.hpp"
#include "pathlift/counting.hpp"
#include "pathlift/error.hpp"
#include "pathlift/limits.hpp"
#include "support.hpp"

namespace pathlift {
namespace {

/// Nodes 0 -> 1 -> ... -> n-1 with skips i -> i + 2: the lengths of the paths from node 0 to node
/// v range over [v / 2, v], so keeping every node's histogram needs O(n^2) counts.
Network chain_with_skips(Index n) {
  NetworkSpec s;
  for (Index v = 0; v < n; ++v) {
    s.node_names.push_back(std::to_string(v));
  }
  for (Index v = 0; v + 1 < n; ++v) {
    s.edges.emplace_back(static_cast<NodeId>(v), static_cast<NodeId>(v + 1));
  }
  for (Index v = 0; v + 2 < n; ++v) {
    s.edges.emplace_back(static_cast<NodeId>(v), static_cast<NodeId>(v + 2));
  }
  s.outputs = {static_cast<NodeId>(n - 1)};
  return Network(std::move(s));
}

/// C(k, j): the paths of k steps of 1 or 2 edges over N = k + j edges choose which j are 2.
std::uint64_t binomial(std::uint64_t k, std::uint64_t j) {
  std::uint64_t c = 1;
  for (std::uint64_t i = 1; i <= j; ++i) {
    c = c * (k - j + i) / i;  // exact: c is C(k - j + i, i) after each step
  }
  return c;
}

TEST(MemoryLimits, HistogramOfAChainWithSkipsIsExact) {
  const Index n = 61;  // N = 60 edges from the input to the output: counts below 2^64
  const PathCounts c = count_paths(chain_with_skips(n));
  ASSERT_TRUE(c.length_histogram_refused.empty()) << c.length_histogram_refused;
  const std::uint64_t edges = static_cast<std::uint64_t>(n) - 1;
  ASSERT_EQ(c.length_histogram.size(), edges + 1);
  ASSERT_EQ(c.max_path_length, static_cast<int>(edges));
  Count total = 0;
  for (std::uint64_t k = 0; k <= edges; ++k) {
    const std::uint64_t expected = 2 * k >= edges && k <= edges ? binomial(k, edges - k) : 0;
    EXPECT_EQ(c.length_histogram[k], Count(expected)) << "length " << k;
    total += c.length_histogram[k];
  }
  EXPECT_EQ(total, c.paths);
}

TEST(MemoryLimits, HistogramAloneIsRefusedAboveTheLimitWithItsSizes) {
  // 40,000 nodes: keeping every node's counts would take ~19 GB; the live ones, ~1.5 MB.
  const Network net = chain_with_skips(40000);
  const auto start = std::chrono::steady_clock::now();
  const PathCounts c = count_paths(net, {.max_memory = 1 << 20});
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
  EXPECT_TRUE(c.length_histogram.empty());
  EXPECT_NE(c.length_histogram_refused.find("the path-length histogram (40000 nodes, paths up to "
                                            "39999 edges long"),
            std::string::npos)
      << c.length_histogram_refused;
  EXPECT_NE(c.length_histogram_refused.find("over the memory limit of 1.00 MiB"), std::string::npos)
      << c.length_histogram_refused;
  // Everything else is counted.
  EXPECT_EQ(c.max_path_length, 39999);
  EXPECT_EQ(c.paths, count_paths_total(net));
  EXPECT_EQ(c.per_edge.size(), static_cast<std::size_t>(net.num_edges()));
  EXPECT_FALSE(c.nnz.exact());
}

TEST(MemoryLimits, HistogramHoldsOnlyTheLiveNodes) {
  // 3,000 nodes: every node's counts would be ~2.25 million (54 MB); the live ones fit in 1 MiB.
  const Network net = chain_with_skips(3000);
  const PathCounts c = count_paths(net, {.max_memory = 1 << 20});
  ASSERT_TRUE(c.length_histogram_refused.empty()) << c.length_histogram_refused;
  ASSERT_EQ(c.length_histogram.size(), 3000U);
  Count total = 0;
  for (const Count& x : c.length_histogram) {
    total += x;
  }
  EXPECT_NEAR(total.log10(), c.paths.log10(), 1e-9);
  EXPECT_EQ(c.length_histogram[2999], Count(1));  // the chain itself
  EXPECT_TRUE(c.length_histogram[1499].is_zero());
  EXPECT_EQ(c.length_histogram[1500], Count(1500));  // one unit step among 1500
}

TEST(MemoryLimits, LimitAbovePhysicalMemoryIsRefusedWithBothSizes) {
  const std::size_t physical = 2 * default_max_memory();
  EXPECT_EQ(effective_max_memory(default_max_memory()), default_max_memory());
  const std::string message = testing::error_of<std::invalid_argument>(
      [&] { (void)effective_max_memory(std::numeric_limits<std::size_t>::max() / 2); });
  EXPECT_NE(message.find(std::to_string(std::numeric_limits<std::size_t>::max() / 2) + " bytes"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("above the physical memory"), std::string::npos) << message;
  EXPECT_NE(message.find(std::to_string(physical)), std::string::npos) << message;
  // Every refusal resolves the limit first: no work starts under an impossible one.
  EXPECT_THROW(require_bytes(1, physical + (std::size_t{1} << 30), "one byte"),
               std::invalid_argument);
}

TEST(MemoryLimits, ChecksAreRefusedOnTheirPeakNotOnEachResult) {
  // ff:5,64,64,64,2: P = 3,154,050, nnz = 12,607,746; dPhi alone needs ~170 MiB, the checks hold
  // the paths, Phi, dPhi twice and B (~520 MiB).
  const Network net = feed_forward(5, {64, 64, 64}, 2);
  const std::vector<double> theta(static_cast<std::size_t>(net.num_params()), 1.0);
  CheckOptions o;
  o.engine.max_memory = std::size_t{256} << 20;
  const std::string message =
      testing::error_of<TooLarge>([&] { (void)check_identities(net, theta, o); });
  EXPECT_NE(message.find("checking the identities (path_set + path_lifting + jacobian + jacobian "
                         "+ skeleton)"),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace pathlift
