// Path counting by dynamic programming (issue 2, item 6): every count against brute-force
// enumeration on random DAGs, the feed-forward closed forms, Count's overflow-checked
// arithmetic, and a network with more than 2^64 paths.

#include "pathlift/counting.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "pathlift/builtins.hpp"
#include "pathlift/error.hpp"
#include "reference.hpp"

namespace pathlift {
namespace {

constexpr std::uint64_t k_max = std::numeric_limits<std::uint64_t>::max();

// ---------------------------------------------------------------------------------------------
// DP against enumeration

struct Features {
  bool parallel = false;
  bool feeding_output = false;  // an output node with outgoing edges
  bool path_through_output = false;
  bool bias = false;
};

Features features_of(const Network& net, const std::vector<testing::RefPath>& paths) {
  Features f;
  for (EdgeId a = 0; a < net.num_edges(); ++a) {
    for (EdgeId b = a + 1; b < net.num_edges(); ++b) {
      f.parallel = f.parallel || (net.source(a) == net.source(b) && net.target(a) == net.target(b));
    }
  }
  for (NodeId o : net.outputs()) {
    f.feeding_output = f.feeding_output || !net.out_edges(o).empty();
  }
  for (const auto& p : paths) {
    for (std::size_t i = 0; i + 1 < p.edges.size(); ++i) {
      f.path_through_output = f.path_through_output || net.is_output(net.target(p.edges[i]));
    }
  }
  f.bias = !net.bias_nodes().empty();
  return f;
}

/// Compares every field of count_paths with the enumeration. Returns the enumerated P.
std::size_t expect_counts_match_enumeration(const Network& net, Features* features = nullptr) {
  const auto paths = testing::ref_paths(net);
  const PathCounts c = count_paths(net);
  if (features != nullptr) {
    const Features f = features_of(net, paths);
    features->parallel = features->parallel || f.parallel;
    features->feeding_output = features->feeding_output || f.feeding_output;
    features->path_through_output = features->path_through_output || f.path_through_output;
    features->bias = features->bias || f.bias;
  }

  const auto m = static_cast<std::size_t>(net.num_nodes());
  const auto d = static_cast<std::size_t>(net.num_edges());
  std::vector<std::uint64_t> per_node_end(m), per_node_start(m), per_edge(d);
  std::vector<std::uint64_t> hist;
  std::uint64_t nnz = 0;
  int max_len = 0;
  for (const auto& p : paths) {
    ++per_node_end[static_cast<std::size_t>(p.end)];
    ++per_node_start[static_cast<std::size_t>(p.start)];
    for (EdgeId e : p.edges) {
      ++per_edge[static_cast<std::size_t>(e)];
    }
    const std::size_t len = p.edges.size();
    if (hist.size() <= len) {
      hist.resize(len + 1);
    }
    ++hist[len];
    nnz += len;
    max_len = std::max(max_len, static_cast<int>(len));
  }
  hist.resize(static_cast<std::size_t>(max_len) + 1);

  EXPECT_TRUE(c.paths.exact());
  EXPECT_EQ(c.paths.value(), paths.size());
  EXPECT_EQ(count_paths_total(net), c.paths);
  EXPECT_EQ(c.nnz.value(), nnz);
  EXPECT_EQ(c.max_path_length, max_len);
  // Per output, in output order.
  const auto outputs = net.outputs();
  EXPECT_EQ(c.per_output.size(), outputs.size());
  for (std::size_t i = 0; i < outputs.size() && i < c.per_output.size(); ++i) {
    EXPECT_EQ(c.per_output[i].value(), per_node_end[static_cast<std::size_t>(outputs[i])]);
  }
  // Per input (bias included), in input order.
  const auto inputs = net.inputs();
  EXPECT_EQ(c.per_input.size(), inputs.size());
  for (std::size_t i = 0; i < inputs.size() && i < c.per_input.size(); ++i) {
    EXPECT_EQ(c.per_input[i].value(), per_node_start[static_cast<std::size_t>(inputs[i])]);
  }
  // Per edge: column sums of B.
  EXPECT_EQ(c.per_edge.size(), d);
  for (std::size_t e = 0; e < d && e < c.per_edge.size(); ++e) {
    EXPECT_EQ(c.per_edge[e].value(), per_edge[e]) << "edge " << e;
  }
  // Length histogram, entry 0 always 0, one entry per length up to the longest.
  EXPECT_EQ(c.length_histogram.size(), hist.size());
  for (std::size_t l = 0; l < hist.size() && l < c.length_histogram.size(); ++l) {
    EXPECT_EQ(c.length_histogram[l].value(), hist[l]) << "length " << l;
  }
  return paths.size();
}

TEST(CountPaths, PaperNetworks) {
  EXPECT_EQ(expect_counts_match_enumeration(fig1()), 5U);
  EXPECT_EQ(expect_counts_match_enumeration(sketch_h0()), 6U);
  EXPECT_EQ(expect_counts_match_enumeration(sketch_h1()), 6U);
  // fig1 by hand: per edge (1-based) 1,1,1,1,2,2,1; lengths 2,2,2,2,1.
  const PathCounts c = count_paths(fig1());
  std::vector<std::uint64_t> per_edge;
  for (const Count& x : c.per_edge) {
    per_edge.push_back(x.value());
  }
  EXPECT_EQ(per_edge, (std::vector<std::uint64_t>{1, 1, 1, 1, 2, 2, 1}));
  EXPECT_EQ(c.nnz.value(), 9U);
  EXPECT_EQ(c.length_histogram.size(), 3U);
  EXPECT_EQ(c.length_histogram[1].value(), 1U);
  EXPECT_EQ(c.length_histogram[2].value(), 4U);
}

TEST(CountPaths, MatchesEnumerationOnRandomDags) {
  Features seen;
  int networks = 0;
  std::size_t total_paths = 0;
  // Default options (shuffled, every feature), m = 2..13 and p from sparse to complete.
  for (std::uint64_t seed = 0; seed < 900; ++seed) {
    const Index m = 2 + static_cast<Index>(seed % 12);
    const double p = m <= 9 ? 0.1 + 0.1 * static_cast<double>(seed % 9) : 0.25;
    SCOPED_TRACE(::testing::Message() << "random_dag(" << m << ", " << p << ", " << seed << ")");
    total_paths += expect_counts_match_enumeration(random_dag(m, p, seed), &seen);
    ++networks;
  }
  // Many parallel edges and designated outputs, in node order (not shuffled).
  RandomDagOptions heavy;
  heavy.parallel_edge_probability = 0.5;
  heavy.designated_output_probability = 0.5;
  heavy.bias_probability = 0.5;
  heavy.shuffle = false;
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    const Index m = 2 + static_cast<Index>(seed % 8);
    SCOPED_TRACE(::testing::Message() << "heavy random_dag(" << m << ", 0.5, " << seed << ")");
    total_paths += expect_counts_match_enumeration(random_dag(m, 0.5, seed, heavy), &seen);
    ++networks;
  }
  EXPECT_GE(networks, 1000);
  EXPECT_GT(total_paths, 10000U);
  // The sample exercises what the issue asks for.
  EXPECT_TRUE(seen.parallel);
  EXPECT_TRUE(seen.feeding_output);
  EXPECT_TRUE(seen.path_through_output);
  EXPECT_TRUE(seen.bias);
}

TEST(CountPaths, DesignatedOutputsCountEveryPrefix) {
  // a -> b -> c -> d with b, c designated: paths a-b, a-b-c, a-b-c-d.
  NetworkSpec s;
  s.node_names = {"a", "b", "c", "d"};
  s.edges = {{0, 1}, {1, 2}, {2, 3}};
  s.outputs = {1, 2};
  const PathCounts c = count_paths(Network(s));
  EXPECT_EQ(c.paths.value(), 3U);
  EXPECT_EQ(c.nnz.value(), 6U);
  EXPECT_EQ(c.max_path_length, 3);
  ASSERT_EQ(c.per_output.size(), 3U);
  for (const Count& x : c.per_output) {
    EXPECT_EQ(x.value(), 1U);
  }
  EXPECT_EQ(c.per_edge[0].value(), 3U);
  EXPECT_EQ(c.per_edge[2].value(), 1U);
}

// ---------------------------------------------------------------------------------------------
// Feed-forward closed forms

// With biases (docs/conventions.md#feed-forward): P = q (r W_1 + sum_{l=1..L} W_l + 1),
// W_l = prod_{k>=l} w_k; a path from x_i has length L + 1, from bias b_l (l = 1..L+1) length
// L + 2 - l. So nnz = q ((L + 1) r W_1 + sum_{l=1..L} (L + 2 - l) W_l + 1). Without biases
// P = q r W_1 and nnz = (L + 1) P.
struct FfCounts {
  std::uint64_t paths;
  std::uint64_t nnz;
};

FfCounts ff_closed_form(std::uint64_t r, const std::vector<std::uint64_t>& w, std::uint64_t q,
                        bool bias) {
  const std::uint64_t L = w.size();
  std::vector<std::uint64_t> tail(L + 2, 1);  // tail[l] = prod_{k>=l} w_k (1-based), tail[L+1] = 1
  for (std::uint64_t l = L; l >= 1; --l) {
    tail[l] = tail[l + 1] * w[l - 1];
  }
  std::uint64_t paths = r * tail[1];
  std::uint64_t nnz = (L + 1) * r * tail[1];
  if (bias) {
    for (std::uint64_t l = 1; l <= L + 1; ++l) {
      paths += tail[l];
      nnz += (L + 2 - l) * tail[l];
    }
  }
  return {q * paths, q * nnz};
}

TEST(CountPaths, FeedForwardClosedForms) {
  const std::vector<std::vector<std::uint64_t>> shapes = {
      {}, {1}, {7}, {2, 3}, {5, 1, 4}, {3, 3, 3, 3}, {2, 7, 1, 5}, {16, 8}};
  for (const std::uint64_t r : {1U, 4U}) {
    for (const auto& w : shapes) {
      for (const std::uint64_t q : {1U, 3U}) {
        for (const bool bias : {true, false}) {
          std::vector<Index> widths(w.begin(), w.end());
          const Network net =
              feed_forward(static_cast<Index>(r), widths, static_cast<Index>(q), bias);
          const PathCounts c = count_paths(net);
          const FfCounts expected = ff_closed_form(r, w, q, bias);
          EXPECT_EQ(c.paths.value(), expected.paths);
          EXPECT_EQ(c.nnz.value(), expected.nnz);
          EXPECT_EQ(c.max_path_length, static_cast<int>(w.size()) + 1);
          // Each output ends P / q paths.
          for (const Count& x : c.per_output) {
            EXPECT_EQ(x.value(), expected.paths / q);
          }
          // nnz is the sum of the per-edge counts (column sums of B).
          Count sum = 0;
          for (const Count& x : c.per_edge) {
            sum += x;
          }
          EXPECT_EQ(sum, c.nnz);
        }
      }
    }
  }
}

TEST(CountPaths, IssueFeedForward) {
  // ff:5,64,64,64,2 (issue 2's acceptance line).
  const Network net = builtin_network("ff:5,64,64,64,2");
  const PathCounts c = count_paths(net);
  EXPECT_EQ(c.paths.value(), 3154050U);
  EXPECT_EQ(net.num_edges(), 8834);
  EXPECT_EQ(net.num_hidden(), 192);
  EXPECT_EQ(c.nnz.value(), 12607746U);
  EXPECT_EQ(c.max_path_length, 4);
  const FfCounts expected = ff_closed_form(5, {64, 64, 64}, 2, true);
  EXPECT_EQ(c.paths.value(), expected.paths);
  EXPECT_EQ(c.nnz.value(), expected.nnz);
  // Histogram: length 4 from x* and b1, 3 from b2, 2 from b3, 1 from b4.
  ASSERT_EQ(c.length_histogram.size(), 5U);
  EXPECT_EQ(c.length_histogram[4].value(), 2U * (5U * 64 * 64 * 64 + 64 * 64 * 64));
  EXPECT_EQ(c.length_histogram[3].value(), 2U * 64 * 64);
  EXPECT_EQ(c.length_histogram[2].value(), 2U * 64);
  EXPECT_EQ(c.length_histogram[1].value(), 2U);
  EXPECT_EQ(c.length_histogram[0].value(), 0U);
}

TEST(CountPaths, MoreThanTwoToTheSixtyFourPaths) {
  // ff with r = 10, 12 hidden layers of width 64, q = 2: P ~ 1e23. In long double:
  // P = q (r w^12 + sum_{l=1..12} w^(13-l) + 1), nnz = q (13 r w^12 + sum (14-l) w^(13-l) + 1).
  const std::vector<Index> widths(12, 64);
  for (const bool bias : {true, false}) {
    SCOPED_TRACE(bias);
    const Network net = feed_forward(10, widths, 2, bias);
    const PathCounts c = count_paths(net);
    long double paths = 10.0L * std::pow(64.0L, 12);
    long double nnz = 13.0L * paths;
    if (bias) {
      for (int l = 1; l <= 13; ++l) {
        paths += std::pow(64.0L, 13 - l);
        nnz += (14 - l) * std::pow(64.0L, 13 - l);
      }
    }
    paths *= 2;
    nnz *= 2;
    ASSERT_GT(paths, 18446744073709551615.0L);
    EXPECT_FALSE(c.paths.exact());
    EXPECT_THROW((void)c.paths.value(), CountOverflow);
    EXPECT_NEAR(c.paths.log10(), static_cast<double>(std::log10(paths)), 1e-12);
    EXPECT_NEAR(c.paths.approx() / static_cast<double>(paths), 1.0, 1e-12);
    EXPECT_FALSE(c.nnz.exact());
    EXPECT_NEAR(c.nnz.log10(), static_cast<double>(std::log10(nnz)), 1e-12);
    EXPECT_EQ(count_paths_total(net).exact(), false);
    EXPECT_NEAR(count_paths_total(net).log10(), c.paths.log10(), 1e-12);
    EXPECT_EQ(c.max_path_length, 13);
    // Short paths are still exact, the long ones are not; the histogram adds up to P.
    EXPECT_FALSE(c.length_histogram[13].exact());
    EXPECT_NEAR(c.length_histogram[13].log10(),
                static_cast<double>(std::log10(2.0L * (10 + (bias ? 1 : 0)) * std::pow(64.0L, 12))),
                1e-12);
    if (bias) {
      EXPECT_EQ(c.length_histogram[1].value(), 2U);
      EXPECT_EQ(c.length_histogram[11].value(), 2ULL << 60);  // 2 * 64^10
    }
    Count sum = 0;
    for (const Count& x : c.length_histogram) {
      sum += x;
    }
    EXPECT_NEAR(sum.log10(), c.paths.log10(), 1e-12);
    // Per output: half of P each, not exact; per input from x_i: 2 * 64^12 = 2^73.
    for (const Count& x : c.per_output) {
      EXPECT_NEAR(x.log10(), c.paths.log10() - std::log10(2.0), 1e-12);
    }
    EXPECT_NEAR(c.per_input[0].log10(), 73 * std::log10(2.0), 1e-12);
    EXPECT_FALSE(c.per_input[0].exact());
    // The string says it is approximate.
    EXPECT_EQ(c.paths.to_string().front(), '~');
  }
}

// ---------------------------------------------------------------------------------------------
// Count

TEST(Count, ExactArithmetic) {
  EXPECT_EQ(Count(2) + Count(3), Count(5));
  EXPECT_EQ(Count(6) * Count(7), Count(42));
  EXPECT_EQ(Count(k_max - 1) + Count(1), Count(k_max));
  EXPECT_TRUE((Count(k_max - 1) + Count(1)).exact());
  EXPECT_EQ(Count(1ULL << 32) * Count((1ULL << 32) - 1), Count(k_max - (1ULL << 32) + 1));
  EXPECT_EQ(Count(k_max) * Count(1), Count(k_max));
  EXPECT_EQ(Count(k_max) + Count(0), Count(k_max));
  Count c = 10;
  c += Count(5);
  EXPECT_EQ(c.value(), 15U);
  EXPECT_EQ(Count(k_max).to_string(), "18446744073709551615");
  EXPECT_EQ(Count(0).to_string(), "0");
  EXPECT_TRUE(Count().is_zero());
  EXPECT_TRUE(Count().exact());
  EXPECT_FALSE(Count(1).is_zero());
  EXPECT_EQ(Count(0).log10(), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(Count(0).approx(), 0.0);
  EXPECT_DOUBLE_EQ(Count(1000).log10(), 3.0);
  EXPECT_EQ(Count(k_max).approx(), 18446744073709551615.0);
}

TEST(Count, OverflowGoesToLog10WithoutWrapping) {
  const double log_2_64 = 64 * std::log10(2.0);
  const Count sum = Count(k_max) + Count(1);
  EXPECT_FALSE(sum.exact());
  EXPECT_NEAR(sum.log10(), log_2_64, 1e-12);
  EXPECT_THROW((void)sum.value(), CountOverflow);
  EXPECT_THROW((void)sum.value(), std::overflow_error);
  EXPECT_FALSE(sum.is_zero());

  const Count prod = Count(1ULL << 32) * Count(1ULL << 32);
  EXPECT_FALSE(prod.exact());
  EXPECT_NEAR(prod.log10(), log_2_64, 1e-12);
  EXPECT_NEAR(prod.approx(), 18446744073709551616.0, 1e4);

  const Count big = Count(k_max) * Count(k_max);  // 2^128 - 2^65 + 1
  EXPECT_NEAR(big.log10(), 2 * log_2_64, 1e-12);

  // Inexact + inexact: 1e20 + 1e20 = 2e20; inexact * inexact adds the logs.
  const Count a = Count::from_log10(20);
  EXPECT_NEAR((a + a).log10(), 20 + std::log10(2.0), 1e-12);
  EXPECT_NEAR((a * a).log10(), 40, 1e-12);
  // Inexact + exact, in both orders.
  EXPECT_NEAR((a + Count(100000000000000000ULL)).log10(), std::log10(1.001e20), 1e-12);
  EXPECT_NEAR((Count(100000000000000000ULL) + a).log10(), std::log10(1.001e20), 1e-12);
  EXPECT_NEAR((a * Count(1000)).log10(), 23, 1e-12);
  EXPECT_NEAR((Count(1000) * a).log10(), 23, 1e-12);
  // A tiny addend to a huge count does not change it (no NaN from inf - inf either).
  const Count huge = Count::from_log10(5000);
  EXPECT_NEAR((huge + Count(1)).log10(), 5000, 1e-9);
  EXPECT_NEAR((huge + huge).log10(), 5000 + std::log10(2.0), 1e-9);
  EXPECT_NEAR((huge * huge).log10(), 10000, 1e-9);
  // Adding to an overflowed count never comes back to an exact one.
  EXPECT_FALSE((sum + Count(0)).exact());
  EXPECT_FALSE((Count(0) + sum).exact());
}

TEST(Count, ZeroTimesAnythingIsExactZero) {
  const Count big = Count::from_log10(30);
  EXPECT_EQ(Count(0) * big, Count(0));
  EXPECT_EQ(big * Count(0), Count(0));
  EXPECT_TRUE((big * Count(0)).exact());
  EXPECT_EQ((Count(0) + big).log10(), 30);
  EXPECT_EQ((big + Count(0)).log10(), 30);
}

TEST(Count, ToString) {
  EXPECT_EQ(Count(3154050).to_string(), "3154050");
  const std::string s = Count::from_log10(23.017208604471907).to_string();
  ASSERT_FALSE(s.empty());
  EXPECT_EQ(s.front(), '~');
  EXPECT_NEAR(std::stod(s.substr(1)) / 1.0404197901941541e23, 1.0, 1e-6);
  // Beyond double's range: given as a power of ten, never "inf".
  const Count huge = Count::from_log10(1234.5);
  EXPECT_TRUE(std::isinf(huge.approx()));
  EXPECT_EQ(huge.to_string().rfind("~10^1234.5", 0), 0U) << huge.to_string();
  EXPECT_EQ(huge.to_string().find("inf"), std::string::npos);
}

}  // namespace
}  // namespace pathlift
