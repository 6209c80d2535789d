// Tests of rank.hpp: modular elimination against independent references (exact Bareiss
// elimination over Q, brute-force GF(2)), the rank certificate of B (Theorem 1) on random
// DAGs and feed-forward networks, the Gram certificate, and the numerical rank of dPhi.

#include "pathlift/rank.hpp"
#include "pathlift/symmetry.hpp"

#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>

#include "pathlift/builtins.hpp"
#include "pathlift/error.hpp"
#include "pathlift/lifting.hpp"
#include "pathlift/paths.hpp"
#include "reference.hpp"
#include "src/core/random.hpp"
#include "support.hpp"

namespace pathlift {
namespace {

using Dense = std::vector<std::vector<std::int64_t>>;

/// Exact rank over Q (Bareiss); the matrices used here never overflow its 128-bit entries.
Index rank_over_q(const Dense& a) {
  const std::optional<Index> r = testing::bareiss_rank(a);
  EXPECT_TRUE(r.has_value()) << "Bareiss overflowed";
  return r.value_or(-1);
}

using testing::rank_gf2;

SparseIntMatrix to_sparse(const Dense& a, Index cols) {
  SparseIntMatrix m(static_cast<Index>(a.size()), cols);
  for (std::size_t r = 0; r < a.size(); ++r) {
    for (std::size_t c = 0; c < a[r].size(); ++c) {
      m.set(static_cast<Index>(r), static_cast<Index>(c), a[r][c]);
    }
  }
  return m;
}

Dense random_matrix(detail::SplitMix64& rng, std::size_t rows, std::size_t cols, int spread,
                    double density) {
  Dense a(rows, std::vector<std::int64_t>(cols, 0));
  for (auto& row : a) {
    for (auto& x : row) {
      if (rng.uniform() < density) {
        x = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(2 * spread + 1))) -
            spread;
      }
    }
  }
  // Make some rows combinations of others so the rank is often deficient.
  if (rows >= 3 && rng.uniform() < 0.5) {
    for (std::size_t j = 0; j < cols; ++j) {
      a[rows - 1][j] = a[0][j] - 2 * a[1][j];
    }
  }
  return a;
}

Dense dense_skeleton(const Network& net) {
  Dense b;
  for (const auto& row : testing::ref_skeleton(testing::ref_paths(net), net.num_edges())) {
    std::vector<std::int64_t> r;
    for (const double x : row) {
      r.push_back(static_cast<std::int64_t>(x));
    }
    b.push_back(r);
  }
  return b;
}

// ---------------------------------------------------------------------------------------------

TEST(SparseIntMatrix, SetAtAndPattern) {
  SparseIntMatrix m(2, 3);
  m.set(0, 2, 5);
  m.set(0, 0, -1);
  m.set(1, 1, 7);
  EXPECT_EQ(m.at(0, 0), -1);
  EXPECT_EQ(m.at(0, 1), 0);
  EXPECT_EQ(m.at(0, 2), 5);
  EXPECT_EQ(m.nnz(), 3);
  m.set(0, 2, 0);
  EXPECT_EQ(m.at(0, 2), 0);
  EXPECT_EQ(m.nnz(), 2);
  EXPECT_EQ(m.row_entries[0].size(), 1U);
  EXPECT_THROW((void)m.at(2, 0), std::out_of_range);
  EXPECT_THROW(m.set(0, 3, 1), std::out_of_range);

  const Network net = fig1();
  const CsrPattern b = skeleton(net);
  const SparseIntMatrix s = SparseIntMatrix::from_pattern(b);
  const Dense ref = dense_skeleton(net);
  ASSERT_EQ(s.rows(), static_cast<Index>(ref.size()));
  for (Index r = 0; r < s.rows(); ++r) {
    for (Index c = 0; c < s.cols; ++c) {
      EXPECT_EQ(s.at(r, c), ref[static_cast<std::size_t>(r)][static_cast<std::size_t>(c)]);
    }
  }
}

TEST(Modular, IsPrime) {
  for (const std::uint64_t p : {2ULL, 3ULL, 5ULL, 97ULL, 65537ULL, 2147483647ULL, 1000000007ULL,
                                2305843009213693951ULL, 18446744073709551557ULL}) {
    EXPECT_TRUE(is_prime(p)) << p;
  }
  // 3215031751 = 151 * 751 * 28351 is a strong pseudoprime to bases 2, 3, 5 and 7.
  for (const std::uint64_t n : {0ULL, 1ULL, 4ULL, 561ULL, 3215031751ULL, 2305843009213693953ULL,
                                (1ULL << 61) + 1, 18446744073709551615ULL}) {
    EXPECT_FALSE(is_prime(n)) << n;
  }
  // Trial division agrees on a range.
  for (std::uint64_t n = 0; n < 3000; ++n) {
    bool prime = n >= 2;
    for (std::uint64_t q = 2; q * q <= n; ++q) {
      if (n % q == 0) {
        prime = false;
        break;
      }
    }
    EXPECT_EQ(is_prime(n), prime) << n;
  }
}

TEST(Modular, RandomPrimesArePrimesOfTheRangeAndVary) {
  // Primes in [2^60, 2^61), confirmed by trial division by the small primes and by is_prime;
  // 200 draws of one of 2.7e16 primes never repeat, and their top bits spread over the range
  // (each half of it gets between 61 and 139 of 200 but with probability 2e-8). Uniformity
  // itself is by construction (rejection sampling), not tested.
  std::set<std::uint64_t> seen;
  int upper_half = 0;
  for (int k = 0; k < 200; ++k) {
    const std::uint64_t p = random_prime();
    ASSERT_GE(p, std::uint64_t{1} << 60);
    ASSERT_LT(p, std::uint64_t{1} << 61);
    for (std::uint64_t q = 2; q < 1000; ++q) {
      ASSERT_NE(p % q, 0U) << p << " divisible by " << q;
    }
    ASSERT_TRUE(is_prime(p)) << p;
    seen.insert(p);
    upper_half += static_cast<int>((p >> 59) & 1);
  }
  EXPECT_EQ(seen.size(), 200U);
  EXPECT_GT(upper_half, 60);
  EXPECT_LT(upper_half, 140);
}

TEST(Modular, RejectsBadPrimes) {
  SparseIntMatrix m(1, 1);
  m.set(0, 0, 1);
  ModularRankOptions o;
  o.prime = 15;
  EXPECT_THROW((void)modular_rank(m, o), std::invalid_argument);
  o.prime = 18446744073709551557ULL;  // prime but not below 2^63
  EXPECT_THROW((void)modular_rank(m, o), std::invalid_argument);
  ModMatrix g{15, 1, 1, {1}};
  EXPECT_THROW((void)modular_rank(g), std::invalid_argument);
  ModMatrix wrong{default_prime, 2, 2, {1, 2, 3}};
  EXPECT_THROW((void)modular_rank(wrong), std::invalid_argument);
  o.prime = default_prime;
  o.column_order = {0, 0};
  EXPECT_THROW((void)modular_rank(m, o), std::invalid_argument);
}

TEST(Modular, SparseRankMatchesExactRankOverQ) {
  detail::SplitMix64 rng(7);
  for (int t = 0; t < 400; ++t) {
    const std::size_t rows = 1 + rng.below(8);
    const std::size_t cols = 1 + rng.below(8);
    const Dense a = random_matrix(rng, rows, cols, 2, 0.5);
    const SparseIntMatrix m = to_sparse(a, static_cast<Index>(cols));
    const Index exact = rank_over_q(a);
    // Every minor is below 10^8 < p: the rank mod p equals the rank over Q.
    EXPECT_EQ(modular_rank(m), exact) << "trial " << t;
    // A random pivot order and an early stop at the true rank change nothing.
    ModularRankOptions o;
    o.column_order.resize(cols);
    std::iota(o.column_order.begin(), o.column_order.end(), 0);
    detail::shuffle(o.column_order, rng);
    EXPECT_EQ(modular_rank(m, o), exact);
    o.stop_at = exact;
    EXPECT_EQ(modular_rank(m, o), exact);
    // Small primes: a lower bound, exact for GF(2) against the brute force.
    for (const std::uint64_t p : {2ULL, 3ULL, 5ULL, 7ULL}) {
      ModularRankOptions small;
      small.prime = p;
      const Index r = modular_rank(m, small);
      EXPECT_LE(r, exact);
      if (p == 2) {
        EXPECT_EQ(r, rank_gf2(a));
      }
    }
    // The dense elimination of the same residues agrees.
    for (const std::uint64_t p :
         std::initializer_list<std::uint64_t>{2, 1000000007, default_prime}) {
      ModMatrix g{p, static_cast<Index>(rows), static_cast<Index>(cols), {}};
      for (const auto& row : a) {
        for (const std::int64_t x : row) {
          const auto q = static_cast<std::int64_t>(p);
          g.data.push_back(static_cast<std::uint64_t>(((x % q) + q) % q));
        }
      }
      ModularRankOptions po;
      po.prime = p;
      EXPECT_EQ(modular_rank(g), modular_rank(m, po)) << "p = " << p;
    }
  }
}

TEST(Modular, PatternOverloadMatchesIntegerMatrix) {
  const Network net = builtin_network("ff:3,4,3,2");
  const CsrPattern b = skeleton(net);
  const SparseIntMatrix m = SparseIntMatrix::from_pattern(b);
  EXPECT_EQ(modular_rank(b), modular_rank(m));
  EXPECT_EQ(modular_rank(b), net.num_edges() - net.num_hidden());
}

TEST(Rank, SkeletonGramIsBTransposeB) {
  for (const char* name : {"fig1", "sketch-h1", "ff:2,3,2", "random-dag:9,0.4,3"}) {
    const Network net = builtin_network(name);
    const Dense b = dense_skeleton(net);
    const ModMatrix g = skeleton_gram_mod(skeleton(net), 1000000007ULL);
    ASSERT_EQ(g.rows, net.num_edges());
    for (Index i = 0; i < g.rows; ++i) {
      for (Index j = 0; j < g.cols; ++j) {
        std::int64_t s = 0;
        for (const auto& row : b) {
          s += row[static_cast<std::size_t>(i)] * row[static_cast<std::size_t>(j)];
        }
        EXPECT_EQ(g.at(i, j), static_cast<std::uint64_t>(s)) << name << " " << i << "," << j;
      }
    }
    EXPECT_EQ(modular_rank(g), rank_over_q(b));
  }
  EngineOptions tiny;
  tiny.max_memory = 8;
  EXPECT_THROW((void)skeleton_gram_mod(skeleton(fig1()), default_prime, tiny), TooLarge);
}

TEST(Rank, RescalingVectorsAreAnIndependentKernel) {
  for (std::uint64_t seed = 0; seed < 60; ++seed) {
    const Network net = testing::random_network(seed);
    const Dense b = dense_skeleton(net);
    Dense z;
    for (const NodeId v : net.hidden()) {
      const std::vector<int> zv = rescaling_vector(net, v);
      for (const auto& row : b) {
        std::int64_t s = 0;
        for (std::size_t k = 0; k < row.size(); ++k) {
          s += row[k] * zv[k];
        }
        EXPECT_EQ(s, 0) << "B z_v != 0 for node " << net.node_name(v);
      }
      z.emplace_back(zv.begin(), zv.end());
    }
    EXPECT_EQ(rank_over_q(z), net.num_hidden());
    if (!net.inputs().empty()) {
      EXPECT_THROW((void)rescaling_vector(net, net.inputs()[0]), std::invalid_argument);
    }
  }
}

TEST(Rank, ColumnOrderGivesEveryNonAnchorColumnALeadingRow) {
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    const Network net = testing::random_network(seed);
    const auto order = rank_column_order(net);
    std::vector<EdgeId> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (EdgeId i = 0; i < net.num_edges(); ++i) {
      ASSERT_EQ(sorted[static_cast<std::size_t>(i)], i);
    }
    const auto anchors = rank_anchor_edges(net);
    ASSERT_EQ(static_cast<Index>(anchors.size()), net.num_hidden());
    std::vector<Index> position(static_cast<std::size_t>(net.num_edges()));
    for (std::size_t i = 0; i < order.size(); ++i) {
      position[static_cast<std::size_t>(order[i])] = static_cast<Index>(i);
    }
    // The anchors come last.
    for (const EdgeId a : anchors) {
      EXPECT_GE(position[static_cast<std::size_t>(a)], net.num_edges() - net.num_hidden());
    }
    std::vector<int> lead_count(static_cast<std::size_t>(net.num_edges()), 0);
    for (const auto& p : testing::ref_paths(net)) {
      EdgeId lead = p.edges.front();
      for (const EdgeId e : p.edges) {
        if (position[static_cast<std::size_t>(e)] < position[static_cast<std::size_t>(lead)]) {
          lead = e;
        }
      }
      ++lead_count[static_cast<std::size_t>(lead)];
    }
    for (EdgeId e = 0; e < net.num_edges(); ++e) {
      if (std::find(anchors.begin(), anchors.end(), e) == anchors.end()) {
        EXPECT_GT(lead_count[static_cast<std::size_t>(e)], 0)
            << "seed " << seed << ": no path leads with edge " << net.edge_label(e);
      }
    }
  }
}

// Theorem 1 on >= 1,000 random DAGs (parallel edges, designated outputs with outgoing edges,
// biases), against an independent reference: the rank of the brute-force skeleton by Eigen's
// full-pivot LU in floating point.
TEST(Rank, CertifiedRankIsDMinusHOnRandomDags) {
  Index with_parallel = 0;
  Index with_designated = 0;
  for (std::uint64_t seed = 0; seed < 1200; ++seed) {
    const Network net = testing::random_network(seed);
    const CsrPattern b = skeleton(net);
    const RankCertificate cert = certify_rank(net, b);
    ASSERT_TRUE(cert.certified()) << "seed " << seed;
    EXPECT_EQ(*cert.rank(), net.num_edges() - net.num_hidden()) << "seed " << seed;
    EXPECT_TRUE(cert.kernel_failures.empty());
    EXPECT_EQ(cert.method, RankMethod::skeleton);
    EXPECT_LE(cert.rows_eliminated, b.rows);
    const Dense ref = dense_skeleton(net);
    Eigen::MatrixXd dense(static_cast<Index>(ref.size()), net.num_edges());
    for (std::size_t r = 0; r < ref.size(); ++r) {
      for (std::size_t c = 0; c < ref[r].size(); ++c) {
        dense(static_cast<Index>(r), static_cast<Index>(c)) = static_cast<double>(ref[r][c]);
      }
    }
    EXPECT_EQ(Eigen::FullPivLU<Eigen::MatrixXd>(dense).rank(), *cert.rank()) << "seed " << seed;
    if (seed % 10 == 0) {
      RankOptions o;
      o.method = RankMethod::gram;
      const RankCertificate g = certify_rank(net, b, o);
      EXPECT_TRUE(g.certified());
      EXPECT_EQ(g.lower, cert.lower);
      EXPECT_EQ(g.method, RankMethod::gram);
    }
    bool parallel = false;
    for (EdgeId x = 0; x + 1 < net.num_edges() && !parallel; ++x) {
      for (EdgeId y = x + 1; y < net.num_edges(); ++y) {
        parallel = parallel || (net.source(x) == net.source(y) && net.target(x) == net.target(y));
      }
    }
    with_parallel += parallel ? 1 : 0;
    for (NodeId v = 0; v < net.num_nodes(); ++v) {
      if (net.is_designated_output(v) && !net.out_edges(v).empty()) {
        ++with_designated;
        break;
      }
    }
  }
  EXPECT_GT(with_parallel, 100);
  EXPECT_GT(with_designated, 100);
}

TEST(Rank, CertifiedRankOnFeedForwardShapes) {
  for (const char* name : {"ff:1,1,1", "ff:2,3,2", "ff:3,4,4,2", "ff:5,16,16,2", "ff-nobias:1,1,1",
                           "ff-nobias:2,3,2", "ff-nobias:3,4,4,2", "ff-nobias:4,6,5,3,2"}) {
    const Network net = builtin_network(name);
    const RankCertificate cert = certify_rank(net);
    ASSERT_TRUE(cert.certified()) << name;
    EXPECT_EQ(*cert.rank(), net.num_edges() - net.num_hidden()) << name;
    EXPECT_EQ(cert.expected, net.num_edges() - net.num_hidden());
    // The structured pivot order needs only d - h rows of B.
    EXPECT_EQ(cert.rows_eliminated, cert.expected) << name;
  }
}

TEST(Rank, CorruptedSkeletonFailsTheKernelCheck) {
  const Network net = builtin_network("ff:2,2,2");
  const CsrPattern b = skeleton(net);
  // Drop the last edge of row 0 (a path through a hidden node): no longer a path.
  auto offsets = std::make_shared<Buffer<Index>>(b.offsets().begin(), b.offsets().end());
  Buffer<EdgeId> cols;
  for (Index r = 0; r < b.rows; ++r) {
    auto row = b.row(r);
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (!(r == 0 && i + 1 == row.size())) {
        cols.push_back(row[i]);
      }
    }
  }
  for (std::size_t i = 1; i < offsets->size(); ++i) {
    (*offsets)[i] -= 1;
  }
  CsrPattern bad = b;
  bad.row_offsets = offsets;
  bad.col_indices = std::make_shared<const Buffer<EdgeId>>(std::move(cols));
  const RankCertificate cert = certify_rank(net, bad);
  EXPECT_FALSE(cert.kernel_failures.empty());
  EXPECT_EQ(cert.kernel_failure_row, 0);
  EXPECT_GT(cert.upper, net.num_edges() - net.num_hidden());
  EXPECT_THROW((void)certify_rank(fig1(), b), std::invalid_argument);
}

TEST(Rank, GramCertificate) {
  for (const char* name : {"fig1", "sketch-h0", "sketch-h1", "ff:3,4,4,2", "ff-nobias:2,3,2",
                           "random-dag:10,0.4,11"}) {
    const Network net = builtin_network(name);
    for (const std::uint64_t p :
         std::initializer_list<std::uint64_t>{default_prime, 1000000007, 2147483647}) {
      const ModMatrix g = skeleton_gram_mod(skeleton(net), p);
      const RankCertificate cert = certify_rank_from_gram(net, g);
      EXPECT_TRUE(cert.certified()) << name;
      EXPECT_EQ(cert.lower, net.num_edges() - net.num_hidden()) << name;
      EXPECT_EQ(cert.prime, p);
      EXPECT_EQ(cert.method, RankMethod::gram);
      EXPECT_EQ(cert.rows_eliminated, net.num_edges());
    }
  }
  // A wrong Gram matrix: (B^T B) z_v != 0 is caught and the upper bound gives way.
  const Network net = builtin_network("ff:2,3,2");
  ModMatrix g = skeleton_gram_mod(skeleton(net));
  g.at(0, 1) += 1;
  g.at(1, 0) += 1;
  const RankCertificate bad = certify_rank_from_gram(net, g);
  EXPECT_FALSE(bad.kernel_failures.empty());
  EXPECT_GT(bad.upper, net.num_edges() - net.num_hidden());
  ModMatrix small{default_prime, 2, 2, {1, 0, 0, 1}};
  EXPECT_THROW((void)certify_rank_from_gram(net, small), std::invalid_argument);
}

CsrMatrix<double> csr_from_dense(const Eigen::MatrixXd& a) {
  auto offsets = std::make_shared<Buffer<Index>>();
  auto cols = std::make_shared<Buffer<EdgeId>>();
  CsrMatrix<double> m;
  offsets->push_back(0);
  for (Index r = 0; r < a.rows(); ++r) {
    for (Index c = 0; c < a.cols(); ++c) {
      if (a(r, c) != 0.0) {
        cols->push_back(static_cast<EdgeId>(c));
        m.values.push_back(a(r, c));
      }
    }
    offsets->push_back(static_cast<Index>(cols->size()));
  }
  m.pattern.rows = a.rows();
  m.pattern.cols = a.cols();
  m.pattern.row_offsets = offsets;
  m.pattern.col_indices = cols;
  return m;
}

TEST(NumericalRank, KnownSingularValues) {
  // An orthonormal Q times diag(3, 2, 1e-3, 0): singular values known exactly.
  detail::SplitMix64 rng(3);
  Eigen::MatrixXd x(6, 4);
  for (Index i = 0; i < x.size(); ++i) {
    x(i) = rng.normal();
  }
  const Eigen::MatrixXd q =
      Eigen::HouseholderQR<Eigen::MatrixXd>(x).householderQ() * Eigen::MatrixXd::Identity(6, 4);
  Eigen::Vector4d s(3, 2, 1e-3, 0);
  const Eigen::MatrixXd a = q * s.asDiagonal();
  const CsrMatrix<double> j = csr_from_dense(a);
  NumericalRankOptions o;
  o.method = NumericalRankMethod::svd;
  const NumericalRank r = numerical_rank(j, o);
  EXPECT_EQ(r.method, NumericalRankMethod::svd);
  ASSERT_EQ(r.singular_values.size(), 4U);
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(r.singular_values[static_cast<std::size_t>(i)], s(i), 1e-12);
  }
  EXPECT_EQ(r.rank, 3);
  EXPECT_NEAR(r.tolerance, 6 * std::numeric_limits<double>::epsilon() * 3, 1e-20);
  EXPECT_EQ(r.status, NumericalRankStatus::conclusive);
  EXPECT_GT(r.gap, 1e9);
  // Two singular values a factor 5 apart around the tolerance: the gap is small.
  const Eigen::Vector4d s2(3, 2, 1e-3, 2e-4);
  o.tolerance = 5e-4;
  const NumericalRank close = numerical_rank(csr_from_dense(q * s2.asDiagonal()), o);
  EXPECT_EQ(close.rank, 3);
  EXPECT_NEAR(close.gap, 5, 1e-6);
  EXPECT_EQ(close.status, NumericalRankStatus::inconclusive);
  // The zero matrix has rank 0 exactly.
  const NumericalRank zero = numerical_rank(csr_from_dense(Eigen::MatrixXd::Zero(3, 2)));
  EXPECT_EQ(zero.rank, 0);
  EXPECT_EQ(zero.status, NumericalRankStatus::conclusive);
  EXPECT_TRUE(std::isinf(zero.gap));
  // Refusal beyond the memory limit.
  o.tolerance = 0;
  o.engine.max_memory = 16;
  EXPECT_THROW((void)numerical_rank(j, o), TooLarge);
  o.method = NumericalRankMethod::gram_eigenvalues;
  EXPECT_THROW((void)numerical_rank(j, o), TooLarge);
}

TEST(NumericalRank, JacobianRankIsDMinusHAtRandomTheta) {
  for (const char* name : {"fig1", "sketch-h0", "sketch-h1", "ff:2,3,2", "ff:3,4,4,2",
                           "ff-nobias:3,4,4,2", "ff-nobias:2,5,3"}) {
    const Network net = builtin_network(name);
    const auto theta = normal_weights(net.num_edges(), 11);
    const CsrMatrix<double> j = jacobian<double>(net, std::span<const double>(theta));
    for (const auto method : {NumericalRankMethod::svd, NumericalRankMethod::gram_eigenvalues}) {
      NumericalRankOptions o;
      o.method = method;
      const NumericalRank r = numerical_rank(j, o);
      EXPECT_EQ(r.rank, net.num_edges() - net.num_hidden()) << name;
      EXPECT_EQ(r.status, NumericalRankStatus::conclusive) << name << " gap " << r.gap;
    }
  }
  // >= 1,000 random DAGs at random theta, both methods: rank(dPhi) = d - h whenever the gap is
  // clear. A path of tiny weight product can blur the gap; that must say "inconclusive" (rare).
  Index inconclusive = 0;
  for (std::uint64_t seed = 0; seed < 1000; ++seed) {
    const Network net = testing::random_network(seed);
    const auto theta = normal_weights(net.num_edges(), seed + 1);
    const RankReport rep = check_rank_theorem(net, theta);
    ASSERT_TRUE(rep.rank_J.has_value());
    EXPECT_TRUE(rep.status == RankStatus::verified || rep.status == RankStatus::rank_J_inconclusive)
        << "seed " << seed << ": " << rep.explanation;
    EXPECT_FALSE(is_failure(rep.status));
    const CsrMatrix<double> j = jacobian<double>(net, std::span<const double>(theta));
    NumericalRankOptions o;
    o.method = NumericalRankMethod::gram_eigenvalues;
    for (const NumericalRank& r : {*rep.rank_J, numerical_rank(j, o)}) {
      if (r.status == NumericalRankStatus::conclusive) {
        EXPECT_EQ(r.rank, rep.expected) << "seed " << seed << " " << to_string(r.method);
      } else {
        ++inconclusive;
      }
    }
  }
  EXPECT_LE(inconclusive, 20);
}

TEST(RankTheorem, ZeroIncomingWeightsLieInTheNullSet) {
  // A hidden node of ff:2,3,2 with all incoming weights 0: the columns of its 2 outgoing edges
  // vanish from dPhi, so rank(dPhi) = d - h - 1.
  const Network net = builtin_network("ff:2,3,2");
  auto theta = normal_weights(net.num_edges(), 5);
  const NodeId v = net.hidden()[0];
  for (const EdgeId e : net.in_edges(v)) {
    theta[static_cast<std::size_t>(e)] = 0;
  }
  const RankReport rep = check_rank_theorem(net, theta);
  EXPECT_EQ(rep.status, RankStatus::theta_in_null_set) << rep.explanation;
  EXPECT_FALSE(is_failure(rep.status));
  ASSERT_TRUE(rep.rank_J);
  EXPECT_EQ(rep.rank_J->rank, rep.expected - 1);
  EXPECT_EQ(rep.rank_J->status, NumericalRankStatus::conclusive);
  EXPECT_EQ(rep.zero_weights.size(), net.in_edges(v).size());
  EXPECT_EQ(*rep.rank_B.rank(), rep.expected);
  EXPECT_NE(rep.explanation.find("null set"), std::string::npos);
  // Nonzero theta: verified.
  const RankReport ok = check_rank_theorem(net, normal_weights(net.num_edges(), 5));
  EXPECT_EQ(ok.status, RankStatus::verified);
  EXPECT_EQ(to_string(ok.status), "verified");
}

TEST(RankTheorem, ReportStatuses) {
  const Network net = fig1();  // d = 7, h = 2
  RankCertificate c;
  c.d = 7;
  c.h = 2;
  c.expected = 5;
  c.lower = 4;
  c.upper = 5;
  NumericalRank j;
  j.rank = 5;
  j.status = NumericalRankStatus::conclusive;
  const std::vector<double> theta(7, 1.0);
  EXPECT_EQ(rank_report(net, c, j, theta).status, RankStatus::rank_B_uncertified);
  EXPECT_TRUE(is_failure(RankStatus::rank_B_uncertified));
  c.lower = c.upper = 6;
  EXPECT_EQ(rank_report(net, c, j, theta).status, RankStatus::theorem_fails);
  EXPECT_TRUE(is_failure(RankStatus::theorem_fails));
  c.lower = c.upper = 5;
  EXPECT_EQ(rank_report(net, c, j, theta).status, RankStatus::verified);
  EXPECT_EQ(rank_report(net, c, std::nullopt, {}).status, RankStatus::rank_J_not_computed);
  // No theta_k is 0: rank(dPhi) = rank(B) exactly, so a numerical rank that disagrees or has
  // no clear gap is a floating-point outcome, never a failure of the theorem.
  j.status = NumericalRankStatus::inconclusive;
  EXPECT_EQ(rank_report(net, c, j, theta).status, RankStatus::ill_conditioned);
  j.status = NumericalRankStatus::conclusive;
  j.rank = 4;
  EXPECT_EQ(rank_report(net, c, j, theta).status, RankStatus::ill_conditioned);
  // A numerical rank above the certified rank(B), or non-finite singular values: a failed
  // computation.
  j.rank = 6;
  EXPECT_EQ(rank_report(net, c, j, theta).status, RankStatus::numerical_failure);
  j.rank = 5;
  j.status = NumericalRankStatus::failed;
  EXPECT_EQ(rank_report(net, c, j, theta).status, RankStatus::numerical_failure);
  j.status = NumericalRankStatus::conclusive;
  // Only exact ranks make theorem_fails: a certified rank(dPhi) != d - h with no zero weight.
  JacobianRankCertificate exact;
  exact.lower = exact.upper = 4;
  exact.method = JacobianRankMethod::elimination;
  EXPECT_EQ(rank_report(net, c, exact, j, theta).status, RankStatus::theorem_fails);
  // Zero weights: the exact rank below d - h is the null set; without an exact lower bound the
  // numerical rank decides between null set and inconclusive.
  std::vector<double> zero = theta;
  zero[3] = 0;
  exact.zero_weights = 1;
  EXPECT_EQ(rank_report(net, c, exact, j, zero).status, RankStatus::theta_in_null_set);
  j.rank = 4;
  JacobianRankCertificate unbounded;  // zero weights and no exact lower bound
  unbounded.upper = 5;
  unbounded.zero_weights = 1;
  const RankReport rep = rank_report(net, c, unbounded, j, zero);
  EXPECT_EQ(rep.status, RankStatus::theta_in_null_set);
  EXPECT_EQ(rep.zero_weights, std::vector<EdgeId>{3});
  ASSERT_TRUE(rep.rank_J_exact);
  EXPECT_EQ(rep.rank_J_exact->method, JacobianRankMethod::none);
  j.status = NumericalRankStatus::inconclusive;
  EXPECT_EQ(rank_report(net, c, unbounded, j, zero).status, RankStatus::rank_J_inconclusive);
  // Without a certificate of rank(dPhi), rank_report certifies it exactly by the zero pattern.
  const RankReport by_pattern = rank_report(net, c, std::nullopt, zero);
  ASSERT_TRUE(by_pattern.rank_J_exact && by_pattern.rank_J_exact->certified());
  EXPECT_EQ(by_pattern.rank_J_exact->method, JacobianRankMethod::zero_pattern);
  EXPECT_EQ(*by_pattern.rank_J_exact->rank(), jacobian_rank_by_zero_pattern(net, zero).rank);
  for (const auto s : {RankStatus::verified, RankStatus::theta_in_null_set,
                       RankStatus::rank_J_inconclusive, RankStatus::rank_J_not_computed,
                       RankStatus::ill_conditioned, RankStatus::numerical_failure}) {
    EXPECT_FALSE(is_failure(s));
  }
}

TEST(RankTheorem, Routes) {
  // P = 5,102 paths, d = 77: B and dPhi need ~400 KB, B^T B 47 KB.
  const Network net = builtin_network("ff:2,3,3,3,3,3,3,2");
  const auto theta = normal_weights(net.num_edges(), 2);
  const Index expected = net.num_edges() - net.num_hidden();

  // automatic = enumerate when B and dPhi fit: rank(dPhi) computed.
  const RankReport full = check_rank_theorem(net, theta, {}, {}, RankRoute::automatic);
  EXPECT_EQ(full.status, RankStatus::verified) << full.explanation;
  ASSERT_TRUE(full.rank_J);
  EXPECT_EQ(full.rank_J->rank, expected);
  EXPECT_EQ(full.rank_B.method, RankMethod::skeleton);

  // path_free: certified by the path basis, no path enumerated; without theta rank(dPhi) is
  // neither certified nor computed.
  const RankReport dp = check_rank_theorem(net, {}, {}, {}, RankRoute::path_free);
  EXPECT_EQ(dp.status, RankStatus::rank_J_not_computed);
  EXPECT_FALSE(dp.rank_J);
  EXPECT_FALSE(dp.rank_J_exact);
  EXPECT_EQ(dp.rank_B.method, RankMethod::path_basis);
  EXPECT_EQ(dp.rank_B.rank(), std::optional<Index>(expected));
  EXPECT_NE(dp.rank_J_note.find("asked for"), std::string::npos) << dp.rank_J_note;
  // With method gram: B^T B mod p by dynamic programming.
  RankOptions gram;
  gram.method = RankMethod::gram;
  const RankReport dpg = check_rank_theorem(net, theta, gram, {}, RankRoute::path_free);
  EXPECT_EQ(dpg.rank_B.method, RankMethod::gram);
  EXPECT_EQ(dpg.rank_B.rank(), std::optional<Index>(expected));
  // With theta (no zero), rank(dPhi) = rank(B) by the identity: verified without enumeration.
  EXPECT_EQ(dpg.status, RankStatus::verified) << dpg.explanation;
  ASSERT_TRUE(dpg.rank_J_exact);
  EXPECT_EQ(dpg.rank_J_exact->method, JacobianRankMethod::identity);
  EXPECT_EQ(dpg.rank_J_exact->rank(), std::optional<Index>(expected));

  // automatic with B over the memory limit: the path-free route, and the reason quoted.
  RankOptions tight;
  tight.engine.max_memory = 100 * 1024;
  const RankReport small = check_rank_theorem(net, theta, tight, {}, RankRoute::automatic);
  EXPECT_EQ(small.status, RankStatus::verified) << small.explanation;
  EXPECT_FALSE(small.rank_J);
  EXPECT_EQ(small.rank_B.rank(), std::optional<Index>(expected));
  EXPECT_NE(small.rank_J_note.find("not enumerated"), std::string::npos) << small.rank_J_note;
  EXPECT_NE(small.rank_J_note.find("memory"), std::string::npos) << small.rank_J_note;
  // enumerate over the limit: refused with the sizes.
  EXPECT_THROW((void)check_rank_theorem(net, theta, tight, {}, RankRoute::enumerate), TooLarge);
}

TEST(RankNames, EveryEnumReadsBackItsNames) {
  for (const auto s :
       {RankStatus::verified, RankStatus::theta_in_null_set, RankStatus::rank_J_inconclusive,
        RankStatus::rank_J_not_computed, RankStatus::rank_B_uncertified, RankStatus::theorem_fails,
        RankStatus::ill_conditioned, RankStatus::numerical_failure}) {
    EXPECT_EQ(parse_rank_status(to_string(s)), s) << to_string(s);
  }
  for (const auto m :
       {RankMethod::automatic, RankMethod::skeleton, RankMethod::gram, RankMethod::path_basis}) {
    EXPECT_EQ(parse_rank_method(to_string(m)), m) << to_string(m);
  }
  for (const auto m :
       {JacobianRankMethod::none, JacobianRankMethod::identity, JacobianRankMethod::elimination}) {
    EXPECT_EQ(parse_jacobian_rank_method(to_string(m)), m) << to_string(m);
  }
  for (const auto m : {NumericalRankMethod::automatic, NumericalRankMethod::svd,
                       NumericalRankMethod::gram_eigenvalues}) {
    EXPECT_EQ(parse_numerical_rank_method(to_string(m)), m) << to_string(m);
  }
  for (const auto s : {NumericalRankStatus::conclusive, NumericalRankStatus::inconclusive,
                       NumericalRankStatus::failed}) {
    EXPECT_EQ(parse_numerical_rank_status(to_string(s)), s) << to_string(s);
  }
  // The CLI's and Python's spellings.
  EXPECT_EQ(parse_rank_method("auto"), RankMethod::automatic);
  EXPECT_EQ(parse_rank_method("path-basis"), RankMethod::path_basis);
  EXPECT_EQ(parse_numerical_rank_method("auto"), NumericalRankMethod::automatic);
  EXPECT_EQ(parse_numerical_rank_method("eig"), NumericalRankMethod::gram_eigenvalues);

  EXPECT_EQ(testing::error_of<std::invalid_argument>([] { (void)parse_rank_method("qr"); }),
            "unknown rank method 'qr': expected automatic (or auto), skeleton, gram, path_basis "
            "(or path-basis) or symmetry");
  EXPECT_TRUE(testing::contains(
      testing::error_of<std::invalid_argument>([] { (void)parse_numerical_rank_method("SVD"); }),
      "'SVD'"));
  EXPECT_THROW((void)parse_rank_status("ok"), std::invalid_argument);
  EXPECT_THROW((void)parse_jacobian_rank_method(""), std::invalid_argument);
  EXPECT_THROW((void)parse_numerical_rank_status("conclusive "), std::invalid_argument);
}

}  // namespace
}  // namespace pathlift
