// Path engine: enumeration order, Phi, B, dPhi against the paper's printed examples and a
// brute-force reference; thread-count invariance; zero weights; memory limits.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>

#include "pathlift/builtins.hpp"
#include "pathlift/checks.hpp"
#include "pathlift/error.hpp"
#include "pathlift/lifting.hpp"
#include "pathlift/paths.hpp"
#include "pathlift/types.hpp"
#include "reference.hpp"

namespace pathlift {
namespace {

using testing::close;
using testing::ref_jacobian;
using testing::ref_paths;
using testing::ref_phi;

std::vector<std::vector<EdgeId>> all_paths(const PathSet& ps) {
  std::vector<std::vector<EdgeId>> out;
  for (Index p = 0; p < ps.size(); ++p) {
    const auto path = ps.path(p);
    out.emplace_back(path.begin(), path.end());
  }
  return out;
}

std::vector<std::vector<int>> dense_pattern(const CsrPattern& b) {
  std::vector<std::vector<int>> out(static_cast<std::size_t>(b.rows),
                                    std::vector<int>(static_cast<std::size_t>(b.cols), 0));
  for (Index r = 0; r < b.rows; ++r) {
    for (EdgeId c : b.row(r)) {
      out[static_cast<std::size_t>(r)][static_cast<std::size_t>(c)] += 1;
    }
  }
  return out;
}

/// Weights t_k = 2^(k+1): every Phi_p is an exact power of two, so the paper's symbolic
/// products (t1 t5, ...) can be compared exactly.
std::vector<double> powers_of_two(Index d) {
  std::vector<double> t(static_cast<std::size_t>(d));
  for (Index k = 0; k < d; ++k) {
    t[static_cast<std::size_t>(k)] = std::ldexp(1.0, static_cast<int>(k + 1));
  }
  return t;
}

/// The paper's symbolic Phi: each path a list of 1-based parameter numbers.
void expect_golden(const Network& net, const std::vector<std::vector<EdgeId>>& paper_paths_1based,
                   const std::vector<std::vector<int>>& paper_b) {
  const PathSet ps = enumerate_paths(net);
  ASSERT_EQ(ps.size(), static_cast<Index>(paper_paths_1based.size()));
  const auto theta = powers_of_two(net.num_edges());
  const Buffer<double> phi = path_lifting<double>(net, std::span<const double>(theta));
  for (std::size_t p = 0; p < paper_paths_1based.size(); ++p) {
    std::vector<EdgeId> expected;
    double product = 1;
    for (EdgeId k : paper_paths_1based[p]) {
      expected.push_back(k - 1);
      product *= theta[static_cast<std::size_t>(k - 1)];
    }
    EXPECT_EQ(all_paths(ps)[p], expected) << "path " << p;
    EXPECT_EQ(phi[p], product) << "Phi_" << p;
  }
  EXPECT_EQ(dense_pattern(skeleton(net)), paper_b);
  EXPECT_EQ(dense_pattern(skeleton(ps)), paper_b);
}

TEST(Golden, Figure1) {
  // Paper, Figure 1: Phi = (t1 t5, t2 t6, t3 t5, t4 t6, t7).
  expect_golden(fig1(), {{1, 5}, {2, 6}, {3, 5}, {4, 6}, {7}},
                {{1, 0, 0, 0, 1, 0, 0},
                 {0, 1, 0, 0, 0, 1, 0},
                 {0, 0, 1, 0, 1, 0, 0},
                 {0, 0, 0, 1, 0, 1, 0},
                 {0, 0, 0, 0, 0, 0, 1}});
}

TEST(Golden, SketchNoHiddenNode) {
  // Sketch of proof, h = 0: Phi = (t1, t2, t2 t5, t3, t4, t4 t5).
  expect_golden(sketch_h0(), {{1}, {2}, {2, 5}, {3}, {4}, {4, 5}},
                {{1, 0, 0, 0, 0},
                 {0, 1, 0, 0, 0},
                 {0, 1, 0, 0, 1},
                 {0, 0, 1, 0, 0},
                 {0, 0, 0, 1, 0},
                 {0, 0, 0, 1, 1}});
}

TEST(Golden, SketchOneHiddenNode) {
  // Sketch of proof, h = 1: Phi = (t1, t2, t2 t6, t3 t4, t3 t5, t3 t5 t6).
  expect_golden(sketch_h1(), {{1}, {2}, {2, 6}, {3, 4}, {3, 5}, {3, 5, 6}},
                {{1, 0, 0, 0, 0, 0},
                 {0, 1, 0, 0, 0, 0},
                 {0, 1, 0, 0, 0, 1},
                 {0, 0, 1, 1, 0, 0},
                 {0, 0, 1, 0, 1, 0},
                 {0, 0, 1, 0, 1, 1}});
}

TEST(Golden, StartAndEndNodes) {
  const Network net = sketch_h1();
  const PathSet ps = enumerate_paths(net);
  const auto name = [&](NodeId v) { return net.node_name(v); };
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"a", "f"}, {"a", "k"}, {"a", "f"}, {"b", "f"}, {"b", "k"}, {"b", "f"}};
  for (Index p = 0; p < ps.size(); ++p) {
    EXPECT_EQ(name(ps.start[static_cast<std::size_t>(p)]),
              expected[static_cast<std::size_t>(p)].first);
    EXPECT_EQ(name(ps.end[static_cast<std::size_t>(p)]),
              expected[static_cast<std::size_t>(p)].second);
  }
}

/// Everything the engine computes on `net` at `theta`, compared with the brute-force reference.
void expect_matches_reference(const Network& net, const std::vector<double>& theta,
                              const std::string& label) {
  SCOPED_TRACE(label);
  const auto ref = ref_paths(net);
  EngineOptions one;
  one.threads = 1;
  const PathSet ps = enumerate_paths(net, one);
  ASSERT_EQ(ps.size(), static_cast<Index>(ref.size()));
  for (std::size_t p = 0; p < ref.size(); ++p) {
    const auto path = ps.path(static_cast<Index>(p));
    ASSERT_EQ(std::vector<EdgeId>(path.begin(), path.end()), ref[p].edges) << "path " << p;
    ASSERT_EQ(ps.start[p], ref[p].start);
    ASSERT_EQ(ps.end[p], ref[p].end);
  }
  const auto span = std::span<const double>(theta);
  const auto rphi = ref_phi(ref, theta);
  const Buffer<double> phi = path_lifting<double>(net, span, one);
  const Buffer<double> phi_paths = path_lifting<double>(ps, span, one);
  const CsrMatrix<double> jac = jacobian<double>(net, span, one);
  const CsrMatrix<double> jac_paths = jacobian<double>(ps, span, one);
  const CsrPattern b = skeleton(net, one);
  ASSERT_EQ(*jac.pattern.row_offsets, *b.row_offsets);
  ASSERT_EQ(*jac.pattern.col_indices, *b.col_indices);
  ASSERT_EQ(*jac_paths.pattern.col_indices, *b.col_indices);
  const auto rjac = ref_jacobian(ref, net.num_edges(), theta);
  for (std::size_t p = 0; p < ref.size(); ++p) {
    ASSERT_TRUE(close(phi[p], rphi[p], 1e-14))
        << "Phi_" << p << ": " << phi[p] << " vs " << rphi[p];
    ASSERT_TRUE(close(phi_paths[p], rphi[p], 1e-14)) << "Phi_" << p;
    // Row p of B: exactly len(p) ones, columns sorted, the path's edges.
    const auto row = b.row(static_cast<Index>(p));
    ASSERT_EQ(row.size(), ref[p].edges.size());
    std::vector<EdgeId> sorted = ref[p].edges;
    std::sort(sorted.begin(), sorted.end());
    ASSERT_EQ(std::vector<EdgeId>(row.begin(), row.end()), sorted);
    const Index begin = (*b.row_offsets)[p];
    for (std::size_t i = 0; i < row.size(); ++i) {
      const double expected = rjac[p][static_cast<std::size_t>(row[i])];
      const double got = jac.values[static_cast<std::size_t>(begin) + i];
      ASSERT_TRUE(std::isfinite(got));
      ASSERT_TRUE(close(got, expected, 1e-14)) << "dPhi[" << p << ", " << row[i] << "]";
      ASSERT_TRUE(close(jac_paths.values[static_cast<std::size_t>(begin) + i], expected, 1e-14));
    }
  }
}

TEST(Reference, RandomDags) {
  int with_parallel = 0;
  int with_designated = 0;
  for (std::uint64_t seed = 0; seed < 1000; ++seed) {
    const Index m = 2 + static_cast<Index>(seed % 11);
    const double p = 0.2 + 0.05 * static_cast<double>(seed % 7);
    const Network net = random_dag(m, p, seed);
    auto theta = normal_weights(net.num_edges(), seed + 17);
    if (seed % 4 == 0) {
      theta[seed % theta.size()] = 0.0;  // pruned weights: dPhi stays exact
    }
    for (EdgeId e = 0; e + 1 < net.num_edges(); ++e) {
      for (EdgeId f = e + 1; f < net.num_edges(); ++f) {
        with_parallel += net.source(e) == net.source(f) && net.target(e) == net.target(f);
      }
    }
    for (NodeId v : net.outputs()) {
      with_designated += !net.out_edges(v).empty();
    }
    expect_matches_reference(net, theta, "random_dag seed " + std::to_string(seed));
    if (HasFatalFailure()) {
      return;
    }
  }
  EXPECT_GT(with_parallel, 50);
  EXPECT_GT(with_designated, 50);
}

TEST(Reference, LargerDagsExerciseTasksAndMemo) {
  // Enough paths that the walk is cut into many tasks and uses memo blocks at several depths.
  for (std::uint64_t seed = 0; seed < 6; ++seed) {
    const Network net = random_dag(22, 0.45, 1000 + seed);
    expect_matches_reference(net, normal_weights(net.num_edges(), seed), "dense dag");
  }
  for (const char* name : {"ff:3,7,6,5,2", "ff:4,16,16,16,2", "ff-nobias:3,9,8,7,3", "ff:2,1,1,1,1",
                           "ff:5,2", "fig1", "sketch-h0", "sketch-h1"}) {
    const Network net = builtin_network(name);
    expect_matches_reference(net, normal_weights(net.num_edges(), 3), name);
  }
}

TEST(Reference, ZeroWeightsStayExact) {
  // A node whose incoming weights are all 0, and weights set to 0 on a long path: dPhi is the
  // product of the other weights (no 0/0), so entries through the zero edge are not zero.
  const Network net = builtin_network("ff:3,5,4,2");
  auto theta = normal_weights(net.num_edges(), 5);
  for (std::size_t k = 0; k < theta.size(); k += 3) {
    theta[k] = 0.0;
  }
  expect_matches_reference(net, theta, "a third of the weights zero");
  const std::vector<double> zeros(static_cast<std::size_t>(net.num_edges()), 0.0);
  const auto jac = jacobian<double>(net, std::span<const double>(zeros));
  // At theta = 0 only paths of length 1 have a non-zero derivative (the empty product).
  const auto off = jac.pattern.offsets();
  for (Index p = 0; p < jac.rows(); ++p) {
    const Index len = off[static_cast<std::size_t>(p) + 1] - off[static_cast<std::size_t>(p)];
    for (Index k = off[static_cast<std::size_t>(p)]; k < off[static_cast<std::size_t>(p) + 1];
         ++k) {
      EXPECT_EQ(jac.values[static_cast<std::size_t>(k)], len == 1 ? 1.0 : 0.0);
    }
  }
}

// Phi and dPhi from a path set take the paths in runs of equal length with loops unrolled per
// length; each value must be exactly the product the path-by-path definition computes (Phi:
// left to right; dPhi: prefix product times the suffix product accumulated from the end), for
// every length (1 to 8 unrolled, longer ones generic) and with runs broken at every length
// change. float32 too: the rounding is the same sequence of operations.
template <class T>
void expect_path_by_path(const PathSet& ps, const std::vector<T>& theta, const std::string& what) {
  EngineOptions one;
  one.threads = 1;
  const auto span = std::span<const T>(theta);
  const Buffer<T> phi = path_lifting<T>(ps, span, one);
  const CsrMatrix<T> jac = jacobian<T>(ps, span, one);
  ASSERT_TRUE(ps.walk_order_sorted) << what;  // values in walk order = CSR order
  for (Index p = 0; p < ps.size(); ++p) {
    const auto e = ps.path(p);
    const auto n = static_cast<Index>(e.size());
    T prod = T(1);
    for (Index k = 0; k < n; ++k) {
      prod *= theta[static_cast<std::size_t>(e[static_cast<std::size_t>(k)])];
    }
    ASSERT_EQ(phi[static_cast<std::size_t>(p)], prod) << what << ", path " << p;
    std::vector<T> pre(static_cast<std::size_t>(n));
    T running = T(1);
    for (Index k = 0; k < n; ++k) {
      pre[static_cast<std::size_t>(k)] = running;
      running *= theta[static_cast<std::size_t>(e[static_cast<std::size_t>(k)])];
    }
    T suffix = T(1);
    const Index base = (*ps.offsets)[static_cast<std::size_t>(p)];
    for (Index k = n - 1; k >= 0; --k) {
      ASSERT_EQ(jac.values[static_cast<std::size_t>(base + k)],
                pre[static_cast<std::size_t>(k)] * suffix)
          << what << ", path " << p << ", entry " << k;
      suffix *= theta[static_cast<std::size_t>(e[static_cast<std::size_t>(k)])];
    }
  }
}

TEST(PathSetKernels, SameProductsAsPathByPath) {
  // ff-nobias with L hidden layers: all paths have length L + 1 (one run); with biases the
  // lengths change between runs; a chain gives one long path beyond the unrolled lengths.
  std::vector<std::string> names = {"ff:3,4,2", "ff:5,8,8,8,2", "ff:2,3,3,3,3,3,3,3,2",
                                    "ff-nobias:2,2,2,2,2,2,2,2,2,2,2,1"};
  for (const auto& name : names) {
    const Network net = builtin_network(name);
    const PathSet ps = enumerate_paths(net);
    const auto theta = normal_weights(net.num_edges(), 5);
    expect_path_by_path<double>(ps, theta, name);
    expect_path_by_path<float>(ps, std::vector<float>(theta.begin(), theta.end()), name);
  }
}

TEST(PathSetKernels, LargePhiWrittenWithStreamingStores) {
  // Phi of ff:5,64,64,64,2 (3.15 M paths: 25 MB in float64, 12.6 MB in float32) is over the
  // size from which the walk writes its blocks with non-temporal stores; every value must
  // still be there, equal to the path set's product up to rounding, for 1 and 2 threads.
  const Network net = builtin_network("ff:5,64,64,64,2");
  const auto theta = normal_weights(net.num_edges(), 8);
  const std::vector<float> theta32(theta.begin(), theta.end());
  const PathSet ps = enumerate_paths(net);
  const Buffer<double> ref = path_lifting<double>(ps, std::span<const double>(theta));
  const Buffer<float> ref32 = path_lifting<float>(ps, std::span<const float>(theta32));
  for (int threads : {1, 2}) {
    EngineOptions o;
    o.threads = threads;
    // The result blocks come from the buffer cache: fill them with NaN first, so that a value
    // not written shows (outside AddressSanitizer, where the cache is off).
    (void)release_cached_buffers();
    { const Buffer<double> poison(ref.size(), std::numeric_limits<double>::quiet_NaN()); }
    const Buffer<double> phi = path_lifting<double>(net, std::span<const double>(theta), o);
    { const Buffer<float> poison(ref32.size(), std::numeric_limits<float>::quiet_NaN()); }
    const Buffer<float> phi32 = path_lifting<float>(net, std::span<const float>(theta32), o);
    ASSERT_EQ(phi.size(), ref.size());
    ASSERT_EQ(phi32.size(), ref32.size());
    for (std::size_t p = 0; p < phi.size(); ++p) {
      ASSERT_TRUE(close(phi[p], ref[p], 1e-14)) << "path " << p << ", threads " << threads;
      ASSERT_TRUE(close(phi32[p], ref32[p], 1e-6)) << "path " << p << ", threads " << threads;
    }
  }
}

TEST(Threads, BitIdenticalForAnyThreadCount) {
  for (const char* name : {"ff:5,16,16,16,2", "random-dag:26,0.45,9"}) {
    const Network net = builtin_network(name);
    const auto theta = normal_weights(net.num_edges(), 11);
    const auto span = std::span<const double>(theta);
    EngineOptions base;
    base.threads = 1;
    const PathSet ps1 = enumerate_paths(net, base);
    const Buffer<double> phi1 = path_lifting<double>(net, span, base);
    const CsrMatrix<double> j1 = jacobian<double>(net, span, base);
    const CsrMatrix<double> jp1 = jacobian<double>(ps1, span, base);
    ASSERT_GT(ps1.size(), 20000);  // large enough to be cut into tasks
    for (int threads : {2, 7}) {
      SCOPED_TRACE(std::string(name) + ", threads " + std::to_string(threads));
      EngineOptions o;
      o.threads = threads;
      const PathSet ps = enumerate_paths(net, o);
      EXPECT_EQ(*ps.offsets, *ps1.offsets);
      EXPECT_EQ(*ps.edges, *ps1.edges);
      EXPECT_EQ(ps.start, ps1.start);
      EXPECT_EQ(ps.end, ps1.end);
      const Buffer<double> phi = path_lifting<double>(net, span, o);
      EXPECT_EQ(0, std::memcmp(phi.data(), phi1.data(), phi.size() * sizeof(double)));
      const CsrMatrix<double> j = jacobian<double>(net, span, o);
      EXPECT_EQ(*j.pattern.col_indices, *j1.pattern.col_indices);
      EXPECT_EQ(0,
                std::memcmp(j.values.data(), j1.values.data(), j.values.size() * sizeof(double)));
      const CsrMatrix<double> jp = jacobian<double>(ps, span, o);
      EXPECT_EQ(
          0, std::memcmp(jp.values.data(), jp1.values.data(), jp.values.size() * sizeof(double)));
    }
  }
}

TEST(Float32, AgreesWithFloat64) {
  const Network net = builtin_network("ff:5,8,8,8,2");
  const auto theta = normal_weights(net.num_edges(), 2);
  const std::vector<float> theta32(theta.begin(), theta.end());
  const auto phi = path_lifting<double>(net, std::span<const double>(theta));
  const auto phi32 = path_lifting<float>(net, std::span<const float>(theta32));
  ASSERT_EQ(phi.size(), phi32.size());
  for (std::size_t p = 0; p < phi.size(); ++p) {
    ASSERT_TRUE(close(phi32[p], phi[p], 1e-5)) << p;
  }
  const auto j = jacobian<double>(net, std::span<const double>(theta));
  const auto j32 = jacobian<float>(net, std::span<const float>(theta32));
  ASSERT_EQ(*j.pattern.col_indices, *j32.pattern.col_indices);
  for (std::size_t k = 0; k < j.values.size(); ++k) {
    ASSERT_TRUE(close(j32.values[k], j.values[k], 1e-5)) << k;
  }
}

TEST(PaperFormula, EqualsJacobianAwayFromZero) {
  const Network net = builtin_network("random-dag:16,0.4,5");
  const auto theta = normal_weights(net.num_edges(), 8);
  const auto span = std::span<const double>(theta);
  const PathSet ps = enumerate_paths(net);
  const auto phi = path_lifting<double>(ps, span);
  const auto paper = jacobian_paper_formula<double>(ps, std::span<const double>(phi), span);
  const auto exact = jacobian<double>(ps, span);
  ASSERT_EQ(*paper.pattern.col_indices, *exact.pattern.col_indices);
  for (std::size_t k = 0; k < exact.values.size(); ++k) {
    EXPECT_TRUE(close(paper.values[k], exact.values[k], 1e-13)) << k;
  }
  // At a zero weight the paper's formula divides by zero; jacobian() does not.
  auto with_zero = theta;
  with_zero[0] = 0.0;
  const auto zspan = std::span<const double>(with_zero);
  const auto phi0 = path_lifting<double>(ps, zspan);
  const auto paper0 = jacobian_paper_formula<double>(ps, std::span<const double>(phi0), zspan);
  const auto exact0 = jacobian<double>(ps, zspan);
  bool paper_has_nan = false;
  for (std::size_t k = 0; k < exact0.values.size(); ++k) {
    EXPECT_TRUE(std::isfinite(exact0.values[k]));
    paper_has_nan = paper_has_nan || !std::isfinite(paper0.values[k]);
  }
  EXPECT_TRUE(paper_has_nan || ps.nnz() == 0);
}

/// prefix followed by i ("h1_" and 2 give "h1_2").
std::string indexed(const char* prefix, int i) {
  std::string s(prefix);
  s.append(std::to_string(i));
  return s;
}

TEST(Layout, GroupByOutputIsThePapersCartesianOrder) {
  // ff:2,3,2,2 with biases: within each output, paths from the data inputs in lexicographic
  // (x, h1, h2) order, then from b1 (h1, h2), b2 (h2), b3 (): the paper's (q, P1) tensor.
  const Network net = builtin_network("ff:2,3,2,2");
  const PathSet ps = enumerate_paths(net);
  const OutputGrouping g = group_by_output(net, ps);
  ASSERT_EQ(g.counts, (std::vector<Index>{ps.size() / 2, ps.size() / 2}));
  std::vector<std::vector<std::string>> expected;
  for (int y = 0; y < 2; ++y) {
    const std::string out = indexed("y", y);
    for (int x = 0; x < 2; ++x) {
      for (int a = 0; a < 3; ++a) {
        for (int b = 0; b < 2; ++b) {
          expected.push_back({indexed("x", x), indexed("h1_", a), indexed("h2_", b), out});
        }
      }
    }
    for (int a = 0; a < 3; ++a) {
      for (int b = 0; b < 2; ++b) {
        expected.push_back({"b1", indexed("h1_", a), indexed("h2_", b), out});
      }
    }
    for (int b = 0; b < 2; ++b) {
      expected.push_back({"b2", indexed("h2_", b), out});
    }
    expected.push_back({"b3", out});
  }
  ASSERT_EQ(g.order.size(), expected.size());
  for (std::size_t k = 0; k < expected.size(); ++k) {
    const auto path = ps.path(g.order[k]);
    std::vector<std::string> nodes{net.node_name(net.source(path[0]))};
    for (EdgeId e : path) {
      nodes.push_back(net.node_name(net.target(e)));
    }
    EXPECT_EQ(nodes, expected[k]) << "position " << k;
  }
}

TEST(Limits, RefusesWithTheSizes) {
  const Network net = builtin_network("ff:5,64,64,64,2");
  const auto theta = normal_weights(net.num_edges(), 0);
  EngineOptions small;
  small.max_memory = 1 << 20;
  try {
    (void)jacobian<double>(net, std::span<const double>(theta), small);
    FAIL() << "expected TooLarge";
  } catch (const TooLarge& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("P = 3154050"), std::string::npos) << msg;
    EXPECT_NE(msg.find("nnz = 12607746"), std::string::npos) << msg;
    EXPECT_NE(msg.find("bytes"), std::string::npos) << msg;
  }
  EXPECT_THROW((void)enumerate_paths(net, small), std::length_error);
  EXPECT_THROW((void)path_lifting<double>(net, std::span<const double>(theta), small), TooLarge);
  // More than 2^64 paths: refused, not wrapped.
  const Network huge = builtin_network("ff:10,64,64,64,64,64,64,64,64,64,64,64,64,2");
  EXPECT_THROW((void)enumerate_paths(huge), TooLarge);
  // Dense output beyond the limit.
  const Network mid = builtin_network("ff:5,8,8,2");
  const auto jm =
      jacobian<double>(mid, std::span<const double>(normal_weights(mid.num_edges(), 0)));
  EXPECT_THROW((void)to_dense(jm, {.max_memory = 1024}), TooLarge);
  EXPECT_NO_THROW((void)to_dense(jm));
}

TEST(Errors, ThetaOfTheWrongSize) {
  const Network net = fig1();
  const std::vector<double> theta(6, 1.0);
  try {
    (void)path_lifting<double>(net, std::span<const double>(theta));
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("theta has 6 entries but the network has 7 edges"),
              std::string::npos);
  }
  const PathSet ps = enumerate_paths(net);
  EXPECT_THROW((void)jacobian<double>(ps, std::span<const double>(theta)), std::invalid_argument);
}

TEST(Errors, NonFiniteThetaNamesTheEdge) {
  const Network net = fig1();
  std::vector<double> theta(7, 1.0);
  theta[4] = std::nan("");
  try {
    (void)jacobian<double>(net, std::span<const double>(theta));
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("theta[4] (edge d -> h) is not finite"), std::string::npos)
        << e.what();
  }
  const PathSet ps = enumerate_paths(net);
  theta[4] = INFINITY;
  EXPECT_THROW((void)path_lifting<double>(ps, std::span<const double>(theta)),
               std::invalid_argument);
}

TEST(Errors, GroupByOutputRefusesAnotherNetworksPaths) {
  EXPECT_THROW((void)group_by_output(fig1(), enumerate_paths(feed_forward(3, {4}, 2))),
               std::invalid_argument);
  EXPECT_THROW((void)group_by_output(fig1(), enumerate_paths(sketch_h1())), std::invalid_argument);
}

TEST(Checks, PassOnRandomDagsAndFailWhenBroken) {
  for (std::uint64_t seed = 0; seed < 40; ++seed) {
    const Network net = random_dag(3 + static_cast<Index>(seed % 10), 0.4, seed);
    auto theta = normal_weights(net.num_edges(), seed);
    if (seed % 5 == 0) {
      theta[0] = 0.0;
    }
    const auto results = check_identities(net, theta);
    ASSERT_EQ(results.size(), 4U);
    EXPECT_TRUE(all_passed(results)) << "seed " << seed;
    EXPECT_EQ(results[1].applicable, seed % 5 != 0);
  }
  const std::vector<double> bad(7, std::nan(""));
  EXPECT_THROW((void)check_identities(fig1(), bad), std::invalid_argument);
}

}  // namespace
}  // namespace pathlift
