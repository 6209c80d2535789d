// The path kernel K = dPhi^T dPhi and B^T B by dynamic programming (issue 8, items 2-5): the
// diagonal, the full matrix, K v, the trace and top eigenvalues, B^T B exactly and modulo a
// prime, all against explicit enumeration (dPhi and B from the path engine) on 1,200 random DAGs
// and feed-forward shapes, with zero weights, and against long-double enumeration where node
// sums leave double's range.

#include "pathlift/kernel.hpp"

#include <gtest/gtest.h>

#include <Eigen/Eigenvalues>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "pathlift/builtins.hpp"
#include "pathlift/counting.hpp"
#include "pathlift/error.hpp"
#include "pathlift/lifting.hpp"
#include "pathlift/paths.hpp"
#include "pathlift/sparse.hpp"
#include "reference.hpp"
#include "src/core/random.hpp"
#include "support.hpp"

namespace pathlift {
namespace {

constexpr double k_tol = 1e-10;

using Dense = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct Reference {
  Dense k;  // J^T J from the path engine's dPhi
  Dense b;  // the skeleton, dense
};

Reference reference(const Network& net, const std::vector<double>& theta) {
  const CsrMatrix<double> j = jacobian<double>(net, std::span<const double>(theta));
  const Dense jd = to_dense(j);
  Reference r;
  r.k = jd.transpose() * jd;
  r.b = to_dense(skeleton(net));
  return r;
}

/// Weights with a few zeros: one theta_k = 0 (seed % 3 == 1) and every incoming weight of one
/// non-input node 0 (seed % 5 == 2).
std::vector<double> weights_with_zeros(const Network& net, std::uint64_t seed) {
  std::vector<double> theta = normal_weights(net.num_edges(), seed + 17);
  if (seed % 3 == 1) {
    theta[seed % theta.size()] = 0;
  }
  if (seed % 5 == 2) {
    for (NodeId v = net.num_nodes() - 1; v >= 0; --v) {
      if (!net.is_input(v)) {
        for (EdgeId e : net.in_edges(v)) {
          theta[static_cast<std::size_t>(e)] = 0;
        }
        break;
      }
    }
  }
  return theta;
}

std::vector<double> random_vector(Index d, std::uint64_t seed) {
  return normal_weights(d, seed ^ 0x5555);
}

/// Entrywise relative comparison (K's entries are sums of same-sign terms: no cancellation).
void expect_matrix_near(const Dense& got, const Dense& want, const std::string& what) {
  ASSERT_EQ(got.rows(), want.rows()) << what;
  ASSERT_EQ(got.cols(), want.cols()) << what;
  for (Index i = 0; i < want.rows(); ++i) {
    for (Index j = 0; j < want.cols(); ++j) {
      ASSERT_TRUE(testing::close(got(i, j), want(i, j), k_tol) &&
                  std::fabs(got(i, j) - want(i, j)) <=
                      k_tol * std::max(std::fabs(want(i, j)), 1e-300))
          << what << " (" << i << ", " << j << "): " << got(i, j) << " vs " << want(i, j);
    }
  }
}

/// K v against (J^T J) v, relative to sum_j |K_ij v_j| (K v may cancel).
void expect_matvec_near(const Eigen::VectorXd& got, const Dense& k, const Eigen::VectorXd& v,
                        const std::string& what) {
  const Eigen::VectorXd want = k * v;
  const Eigen::VectorXd scale = k.cwiseAbs() * v.cwiseAbs();
  for (Index i = 0; i < k.rows(); ++i) {
    ASSERT_LE(std::fabs(got(i) - want(i)), k_tol * std::max(scale(i), 1e-300))
        << what << " entry " << i << ": " << got(i) << " vs " << want(i);
  }
}

void expect_kernel_matches(const Network& net, const std::vector<double>& theta, std::uint64_t seed,
                           const std::string& what) {
  const Reference ref = reference(net, theta);
  const Index d = net.num_edges();

  const Buffer<double> diag_buffer = kernel_diagonal(net, theta);
  ASSERT_EQ(static_cast<Index>(diag_buffer.size()), d);
  const Eigen::Map<const Eigen::VectorXd> diag(diag_buffer.data(), d);
  for (Index k = 0; k < d; ++k) {
    ASSERT_TRUE(testing::close(diag(k), ref.k(k, k), k_tol) &&
                std::fabs(diag(k) - ref.k(k, k)) <= k_tol * std::max(ref.k(k, k), 1e-300))
        << what << " diag " << k << ": " << diag(k) << " vs " << ref.k(k, k);
  }
  const double trace = ref.k.trace();
  EXPECT_TRUE(testing::close(kernel_trace(net, theta).value(), trace, k_tol)) << what;

  expect_matrix_near(kernel(net, theta), ref.k, what + " K");

  const auto vs = random_vector(d, seed);
  const Eigen::VectorXd v = Eigen::Map<const Eigen::VectorXd>(vs.data(), d);
  expect_matvec_near(kernel_matvec(net, theta, vs), ref.k, v, what + " K v");

  const Dense btb = ref.b.transpose() * ref.b;
  const CountMatrix g = skeleton_gram_exact(net);
  const ModMatrix gm = skeleton_gram_mod(net);
  const ModMatrix g7 = skeleton_gram_mod(net, 7);
  ASSERT_EQ(gm.rows, d);
  ASSERT_EQ(gm.cols, d);
  EXPECT_EQ(gm.prime, default_prime);
  for (Index i = 0; i < d; ++i) {
    for (Index j = 0; j < d; ++j) {
      const auto want = static_cast<std::uint64_t>(btb(i, j));
      ASSERT_EQ(g(i, j), want) << what << " B^T B (" << i << ", " << j << ")";
      ASSERT_EQ(gm.at(i, j), want % default_prime) << what;
      ASSERT_EQ(g7.at(i, j), want % 7) << what;
    }
  }
}

TEST(Kernel, RandomDagsAgainstEnumeration) {
  const std::uint64_t checked = testing::until_first_failure(1200, [](std::uint64_t seed) {
    const auto [net, name] = testing::small_random_dag(seed);
    expect_kernel_matches(net, weights_with_zeros(net, seed), seed, name);
  });
  EXPECT_EQ(checked, 1200U);
}

TEST(Kernel, FeedForwardShapes) {
  std::uint64_t seed = 1;
  for (const char* name : {"ff:3,4,2", "ff:2,3,3,2", "ff-nobias:2,4,3,1", "ff:1,1,1",
                           "ff:4,2,3,2,3", "fig1", "sketch-h0", "sketch-h1"}) {
    const Network net = builtin_network(name);
    expect_kernel_matches(net, normal_weights(net.num_edges(), seed), seed, name);
    expect_kernel_matches(net, weights_with_zeros(net, 7), seed, std::string(name) + " zeros");
    ++seed;
  }
}

TEST(Kernel, AllWeightsZero) {
  // dPhi = 0 except on paths of length 1 (their derivative is the empty product 1).
  for (const char* name : {"ff:3,4,2", "sketch-h0", "fig1"}) {
    const Network net = builtin_network(name);
    const std::vector<double> theta(static_cast<std::size_t>(net.num_edges()), 0.0);
    expect_kernel_matches(net, theta, 3, std::string(name) + " theta = 0");
  }
}

// ---------------------------------------------------------------------------------------------
// Node sums beyond double's range: long-double enumeration

/// K[i, j] = sum_p J_pi J_pj with J_pk = prod_{e in p, e != k} theta_e, in long double.
std::vector<std::vector<long double>> long_double_kernel(const Network& net,
                                                         const std::vector<double>& theta) {
  const auto d = static_cast<std::size_t>(net.num_edges());
  std::vector<std::vector<long double>> k(d, std::vector<long double>(d, 0));
  for (const auto& p : testing::ref_paths(net)) {
    std::vector<long double> jp(p.edges.size(), 1);
    for (std::size_t a = 0; a < p.edges.size(); ++a) {
      for (std::size_t b = 0; b < p.edges.size(); ++b) {
        if (a != b) {
          jp[a] *= theta[static_cast<std::size_t>(p.edges[b])];
        }
      }
    }
    for (std::size_t a = 0; a < p.edges.size(); ++a) {
      for (std::size_t b = 0; b < p.edges.size(); ++b) {
        k[static_cast<std::size_t>(p.edges[a])][static_cast<std::size_t>(p.edges[b])] +=
            jp[a] * jp[b];
      }
    }
  }
  return k;
}

/// Entries that fit in a double must match; larger ones must be inf (diagonal) or at least
/// beyond the largest double.
void expect_wild_matches(const Network& net, const std::vector<double>& theta,
                         const std::string& what) {
  const auto ref = long_double_kernel(net, theta);
  const auto d = static_cast<std::size_t>(net.num_edges());
  const auto big = static_cast<long double>(std::numeric_limits<double>::max());
  const auto small = static_cast<long double>(std::numeric_limits<double>::min()) * 1e20L;
  const auto fits = [&](long double x) { return std::fabs(x) < big && std::fabs(x) > small; };
  const Buffer<double> diag_buffer = kernel_diagonal(net, theta);
  const Eigen::Map<const Eigen::VectorXd> diag(diag_buffer.data(), net.num_edges());
  const Dense k = kernel(net, theta);
  long double trace = 0;
  for (std::size_t i = 0; i < d; ++i) {
    trace += ref[i][i];
    if (fits(ref[i][i])) {
      EXPECT_TRUE(
          testing::close(diag(static_cast<Index>(i)), static_cast<double>(ref[i][i]), k_tol) &&
          std::fabs(diag(static_cast<Index>(i)) - static_cast<double>(ref[i][i])) <=
              k_tol * static_cast<double>(ref[i][i]))
          << what << " diag " << i << ": " << diag(static_cast<Index>(i)) << " vs "
          << static_cast<double>(ref[i][i]);
    } else if (ref[i][i] >= big) {
      EXPECT_EQ(diag(static_cast<Index>(i)), std::numeric_limits<double>::infinity()) << what;
    }
    for (std::size_t j = 0; j < d; ++j) {
      if (fits(ref[i][j])) {
        const double want = static_cast<double>(ref[i][j]);
        const double got = k(static_cast<Index>(i), static_cast<Index>(j));
        EXPECT_LE(std::fabs(got - want), k_tol * std::fabs(want))
            << what << " K (" << i << ", " << j << "): " << got << " vs " << want;
      }
    }
  }
  if (trace > 0) {
    EXPECT_NEAR(kernel_trace(net, theta).log10(), static_cast<double>(std::log10(trace)), 1e-11)
        << what;
  }
  // K v where sum_j |K_ij v_j| fits in a double (v of order 1).
  const auto v = random_vector(static_cast<Index>(d), d);
  const Eigen::VectorXd kv = kernel_matvec(net, theta, v);
  for (std::size_t i = 0; i < d; ++i) {
    long double want = 0;
    long double scale = 0;
    for (std::size_t j = 0; j < d; ++j) {
      want += ref[i][j] * v[j];
      scale += std::fabs(ref[i][j] * v[j]);
    }
    if (fits(scale)) {
      EXPECT_LE(std::fabs(kv(static_cast<Index>(i)) - static_cast<double>(want)),
                k_tol * static_cast<double>(scale))
          << what << " K v " << i << ": " << kv(static_cast<Index>(i)) << " vs "
          << static_cast<double>(want);
    }
  }
}

TEST(Kernel, WildWeightsAgainstLongDouble) {
  testing::until_first_failure(150, [](std::uint64_t seed) {
    const Network net = random_dag(3 + static_cast<Index>(seed % 6), 0.6, seed + 9000);
    detail::SplitMix64 rng(seed);
    std::vector<double> theta(static_cast<std::size_t>(net.num_edges()));
    for (double& x : theta) {
      // |theta| up to ~1e300: theta^2 and theta * (node mantissa) overflow in double.
      const double spread = seed % 3 == 0 ? 300.0 : (seed % 3 == 1 ? 140.0 : 50.0);
      x = rng.normal() * std::pow(10.0, spread * (2 * rng.uniform() - 1));
    }
    expect_wild_matches(net, theta, "wild seed " + std::to_string(seed));
  });
}

TEST(Kernel, LayerScalesBeyondDouble) {
  // Layer weights 1e250, 1, 1e-250: the forward sums A reach 1e1000 and the backward sums B
  // 1e-1000, yet every K entry through the middle layers is of order 1.
  const Network net = feed_forward(2, {3, 3, 2}, 2, false);
  std::vector<double> theta;
  const std::vector<Index> sizes{2, 3, 3, 2, 2};
  const std::vector<double> scales{1e250, 1e250, 1e-250, 1e-250};
  detail::SplitMix64 rng(4);
  for (std::size_t l = 0; l + 1 < sizes.size(); ++l) {
    for (Index e = 0; e < sizes[l] * sizes[l + 1]; ++e) {
      theta.push_back(scales[l] * (0.5 + rng.uniform()));
    }
  }
  expect_wild_matches(net, theta, "layer scales");
  // And K v on the middle block, where K is of order 1.
  const auto ref = long_double_kernel(net, theta);
  std::vector<double> v(theta.size(), 0.0);
  for (std::size_t e = 6; e < 15; ++e) {
    v[e] = rng.normal();  // the second Linear layer (3 x 3), weights of order 1
  }
  const Eigen::VectorXd kv = kernel_matvec(net, theta, v);
  for (std::size_t i = 6; i < 15; ++i) {
    long double want = 0;
    long double scale = 0;
    for (std::size_t j = 6; j < 15; ++j) {
      want += ref[i][j] * v[j];
      scale += std::fabs(ref[i][j] * v[j]);
    }
    EXPECT_LE(std::fabs(kv(static_cast<Index>(i)) - static_cast<double>(want)),
              k_tol * static_cast<double>(scale))
        << i;
  }
}

// ---------------------------------------------------------------------------------------------
// Eigenvalues, trace, threads

Eigen::VectorXd dense_top(const Dense& k, Index count) {
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(Eigen::MatrixXd(k),
                                                          Eigen::EigenvaluesOnly);
  return es.eigenvalues().reverse().head(count);
}

TEST(Kernel, TopEigenvaluesLanczosAndDense) {
  for (const char* name : {"ff:3,5,5,2", "ff:4,16,16,2"}) {
    const Network net = builtin_network(name);
    const auto theta = normal_weights(net.num_edges(), 5);
    const Dense k = reference(net, theta).k;
    const Eigen::VectorXd want = dense_top(k, 4);
    for (EigenMethod method : {EigenMethod::lanczos, EigenMethod::dense, EigenMethod::automatic}) {
      EigenOptions opt;
      opt.method = method;
      const KernelEigenvalues r = kernel_top_eigenvalues(net, theta, 4, opt);
      ASSERT_EQ(r.status, EigenStatus::converged) << name;
      ASSERT_EQ(r.values.size(), 4) << name;
      EXPECT_EQ(r.dense, method == EigenMethod::dense ||
                             (method == EigenMethod::automatic && net.num_edges() <= 256));
      for (Index i = 0; i < 4; ++i) {
        EXPECT_TRUE(testing::close(r.values(i), want(i), 1e-9 * want(0)))
            << name << " " << i << ": " << r.values(i) << " vs " << want(i);
      }
      if (!r.dense) {
        EXPECT_GT(r.products, 0);
      }
    }
    // trace(K) = sum of all eigenvalues.
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(Eigen::MatrixXd(k),
                                                            Eigen::EigenvaluesOnly);
    EXPECT_TRUE(testing::close(kernel_trace(net, theta).value(), es.eigenvalues().sum(),
                               1e-10 * es.eigenvalues().sum()));
  }
  // All d eigenvalues: dense.
  const Network net = builtin_network("ff:2,3,1");
  const auto theta = normal_weights(net.num_edges(), 1);
  const KernelEigenvalues all = kernel_top_eigenvalues(net, theta, net.num_edges());
  EXPECT_TRUE(all.dense);
  EXPECT_EQ(all.values.size(), net.num_edges());
  EXPECT_GE(all.values(net.num_edges() - 1), -1e-12);  // positive semi-definite
}

TEST(Kernel, TopEigenvaluesOfALowRankKernel) {
  // theta = 0: dPhi is 1 on the two paths of length 1 (output-layer biases), 0 elsewhere, so
  // K has eigenvalues 1, 1, 0, ..., 0 (rank 2 < 4 requested). Lanczos may be inconclusive
  // (a status, not a throw); the automatic method then decides with the dense solver.
  const Network net = builtin_network("ff:4,16,16,2");  // d = 386: Lanczos first
  const std::vector<double> theta(static_cast<std::size_t>(net.num_edges()), 0.0);
  EigenOptions lanczos;
  lanczos.method = EigenMethod::lanczos;
  const KernelEigenvalues l = kernel_top_eigenvalues(net, theta, 4, lanczos);
  if (l.status == EigenStatus::converged) {
    ASSERT_EQ(l.values.size(), 4);
    EXPECT_NEAR(l.values(0), 1.0, 1e-10);
  }
  const KernelEigenvalues a = kernel_top_eigenvalues(net, theta, 4);
  ASSERT_EQ(a.status, EigenStatus::converged);
  ASSERT_EQ(a.values.size(), 4);
  EXPECT_NEAR(a.values(0), 1.0, 1e-12);
  EXPECT_NEAR(a.values(1), 1.0, 1e-12);
  EXPECT_NEAR(a.values(2), 0.0, 1e-12);
  EXPECT_NEAR(a.values(3), 0.0, 1e-12);
}

TEST(Kernel, ThreadCountInvariance) {
  const Network net = builtin_network("ff:4,16,16,4");  // d = 420: threads used
  const auto theta = normal_weights(net.num_edges(), 2);
  EngineOptions one;
  one.threads = 1;
  EngineOptions three;
  three.threads = 3;
  EXPECT_EQ(kernel(net, theta, one), kernel(net, theta, three));
  EXPECT_EQ(skeleton_gram_exact(net, one), skeleton_gram_exact(net, three));
  EXPECT_EQ(skeleton_gram_mod(net, default_prime, one).data,
            skeleton_gram_mod(net, default_prime, three).data);
}

TEST(Kernel, OperatorMatchesMatvec) {
  const Network net = builtin_network("ff:3,6,4,2");
  const auto theta = normal_weights(net.num_edges(), 8);
  const KernelOperator op(net, theta);
  EXPECT_EQ(op.size(), net.num_edges());
  for (std::uint64_t s = 0; s < 3; ++s) {
    const auto v = random_vector(net.num_edges(), s);
    Eigen::VectorXd out(net.num_edges());
    op.apply(v.data(), out.data());
    EXPECT_EQ(out, kernel_matvec(net, theta, v));  // buffers are reused without leftovers
  }
}

// ---------------------------------------------------------------------------------------------
// B^T B at scale: counts beyond 64 bits, the rank-certificate network

/// Paths through each edge of ff-nobias (sizes s_0..s_{L+1}): an edge of Linear layer l joins
/// a node of layer l-1 (s_0 ... s_{l-2} partial paths in) to a node of layer l (s_{l+1} ...
/// s_{L+1} paths out), modulo p.
std::vector<std::uint64_t> ff_edge_counts_mod(const std::vector<Index>& sizes, std::uint64_t p) {
  __extension__ using u128 = unsigned __int128;
  std::vector<std::uint64_t> out;
  for (std::size_t l = 1; l < sizes.size(); ++l) {
    std::uint64_t in = 1;
    for (std::size_t t = 0; t + 1 < l; ++t) {
      in = static_cast<std::uint64_t>(static_cast<u128>(in) * static_cast<std::uint64_t>(sizes[t]) %
                                      p);
    }
    std::uint64_t outc = 1;
    for (std::size_t t = l + 1; t < sizes.size(); ++t) {
      outc = static_cast<std::uint64_t>(static_cast<u128>(outc) *
                                        static_cast<std::uint64_t>(sizes[t]) % p);
    }
    const auto c = static_cast<std::uint64_t>(static_cast<u128>(in) * outc % p);
    out.insert(out.end(), static_cast<std::size_t>(sizes[l - 1] * sizes[l]), c);
  }
  return out;
}

TEST(SkeletonGram, CountsBeyond64Bits) {
  // 2 * 8^25 = 2^76 paths: B^T B does not fit in 64 bits; modulo p it is exact.
  const std::vector<Index> widths(25, 8);
  const Network net = feed_forward(2, widths, 1, false);
  try {
    (void)skeleton_gram_exact(net);
    ADD_FAILURE() << "no CountOverflow";
  } catch (const CountOverflow& e) {
    EXPECT_NE(std::string(e.what()).find("skeleton_gram_mod"), std::string::npos) << e.what();
  }
  const ModMatrix g = skeleton_gram_mod(net);
  std::vector<Index> sizes{2};
  sizes.insert(sizes.end(), widths.begin(), widths.end());
  sizes.push_back(1);
  const auto want = ff_edge_counts_mod(sizes, default_prime);
  ASSERT_EQ(static_cast<Index>(want.size()), g.rows);
  for (Index i = 0; i < g.rows; ++i) {
    ASSERT_EQ(g.at(i, i), want[static_cast<std::size_t>(i)]) << i;
    for (Index j = 0; j < i; j += 37) {
      ASSERT_EQ(g.at(i, j), g.at(j, i));
    }
  }
}

TEST(SkeletonGram, RankCertificateNetwork) {
  // The issue's ff:4,8x12,2 (P = 706,828,903,570, d = 850): diagonal = paths through each edge
  // (count_paths, exact here), symmetric, and the mod-p and exact matrices agree.
  const Network net = builtin_network("ff:4,8,8,8,8,8,8,8,8,8,8,8,8,2");
  ASSERT_EQ(net.num_edges(), 850);
  ASSERT_EQ(count_paths_total(net).value(), 706828903570ULL);
  const ModMatrix g = skeleton_gram_mod(net);
  const CountMatrix exact = skeleton_gram_exact(net);
  const PathCounts counts = count_paths(net);
  for (Index i = 0; i < 850; ++i) {
    ASSERT_EQ(exact(i, i), counts.per_edge[static_cast<std::size_t>(i)].value());
    for (Index j = 0; j < 850; ++j) {
      ASSERT_EQ(g.at(i, j), exact(i, j) % default_prime);
      ASSERT_EQ(exact(i, j), exact(j, i));
    }
  }
  // Row sum of B^T B = sum over the paths through edge i of their lengths; the paths through
  // edge 0 (x0 -> h1_0) all have 13 edges.
  std::uint64_t row = 0;
  for (Index j = 0; j < 850; ++j) {
    row += exact(0, j);
  }
  EXPECT_EQ(row, 13ULL * exact(0, 0));
}

// ---------------------------------------------------------------------------------------------
// Errors and limits

TEST(Kernel, Errors) {
  const Network net = fig1();
  std::vector<double> theta(7, 1.0);
  EXPECT_THROW((void)kernel_diagonal(net, std::vector<double>(5, 1.0)), std::invalid_argument);
  EXPECT_THROW((void)kernel(net, std::vector<double>(8, 1.0)), std::invalid_argument);
  EXPECT_THROW((void)kernel_matvec(net, theta, std::vector<double>(6, 1.0)), std::invalid_argument);
  std::vector<double> v(7, 1.0);
  v[2] = std::nan("");
  try {
    (void)kernel_matvec(net, theta, v);
    ADD_FAILURE() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("v[2]"), std::string::npos) << e.what();
  }
  theta[5] = std::nan("");
  for (int which = 0; which < 4; ++which) {
    try {
      switch (which) {
        case 0:
          (void)kernel_diagonal(net, theta);
          break;
        case 1:
          (void)kernel(net, theta);
          break;
        case 2:
          (void)kernel_matvec(net, theta, std::vector<double>(7, 1.0));
          break;
        default:
          (void)kernel_top_eigenvalues(net, theta, 1);
          break;
      }
      ADD_FAILURE() << "no throw " << which;
    } catch (const std::invalid_argument& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("theta[5]"), std::string::npos) << msg;
      EXPECT_NE(msg.find("f -> h"), std::string::npos) << msg;
    }
  }
  theta[5] = 1.0;
  EXPECT_THROW((void)kernel_top_eigenvalues(net, theta, 0), std::invalid_argument);
  EXPECT_THROW((void)kernel_top_eigenvalues(net, theta, 8), std::invalid_argument);
  EigenOptions lanczos;
  lanczos.method = EigenMethod::lanczos;
  EXPECT_THROW((void)kernel_top_eigenvalues(net, theta, 7, lanczos), std::invalid_argument);
  EXPECT_THROW((void)skeleton_gram_mod(net, 1), std::invalid_argument);
  EXPECT_THROW((void)skeleton_gram_mod(net, std::uint64_t{1} << 63), std::invalid_argument);
}

TEST(Kernel, RefusesWhatDoesNotFit) {
  const Network net = builtin_network("ff:10,20,10");  // d = 11 * 20 + 21 * 10 = 430
  const auto theta = normal_weights(net.num_edges(), 0);
  EngineOptions small;
  small.max_memory = 1 << 20;  // 430^2 * 8 bytes = 1.4 MiB > 1 MiB
  for (int which = 0; which < 3; ++which) {
    try {
      switch (which) {
        case 0:
          (void)kernel(net, theta, small);
          break;
        case 1:
          (void)skeleton_gram_exact(net, small);
          break;
        default:
          (void)skeleton_gram_mod(net, default_prime, small);
          break;
      }
      ADD_FAILURE() << "no TooLarge " << which;
    } catch (const TooLarge& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("430"), std::string::npos) << msg;
      EXPECT_NE(msg.find("1479200"), std::string::npos) << msg;  // the bytes
    }
  }
  // The matrix-free quantities need no d x d memory.
  EXPECT_EQ(kernel_diagonal(net, theta).size(), 430U);
  EigenOptions dense;
  dense.method = EigenMethod::dense;
  dense.engine = small;
  EXPECT_THROW((void)kernel_top_eigenvalues(net, theta, 2, dense), TooLarge);
  EigenOptions lanczos;
  lanczos.method = EigenMethod::lanczos;
  lanczos.engine = small;
  EXPECT_EQ(kernel_top_eigenvalues(net, theta, 2, lanczos).status, EigenStatus::converged);
}

TEST(KernelTopEigenvalues, NamesAndJsonForm) {
  for (const auto s :
       {EigenStatus::converged, EigenStatus::not_converged, EigenStatus::numerical_issue}) {
    EXPECT_EQ(parse_eigen_status(to_string(s)), s) << to_string(s);
  }
  for (const auto m :
       {EigenMethod::automatic, EigenMethod::lanczos, EigenMethod::dense, EigenMethod::lobpcg}) {
    EXPECT_EQ(parse_eigen_method(to_string(m)), m) << to_string(m);
  }
  EXPECT_EQ(parse_eigen_method("auto"), EigenMethod::automatic);
  EXPECT_EQ(testing::error_of<std::invalid_argument>([] { (void)parse_eigen_method("qr"); }),
            "unknown eigenvalue method 'qr': expected automatic (or auto), lanczos, dense or "
            "lobpcg");
  EXPECT_THROW((void)parse_eigen_status("Converged"), std::invalid_argument);

  // The part of `pathlift kernel --top-eig N --json` that describes the result.
  KernelEigenvalues r;
  r.values = Eigen::VectorXd{{2.5, std::numeric_limits<double>::infinity()}};
  r.status = EigenStatus::not_converged;
  r.iterations = 2;
  r.products = 44;
  r.method = EigenMethod::lanczos;
  EXPECT_EQ(to_json(r, -1), R"({"eigenvalues":[2.5,null],"status":"not_converged",)"
                            R"("method":"lanczos","products":44,"iterations":2,)"
                            R"("residuals":null})");
  r.method = EigenMethod::lobpcg;
  r.residuals = Eigen::VectorXd{{1e-9, std::numeric_limits<double>::infinity()}};
  EXPECT_TRUE(testing::contains(to_json(r, -1), R"("method":"lobpcg","products":44,"iterations":2,)"
                                                R"("residuals":[1e-09,null]})"));
  const Network net = fig1();
  const std::vector<double> theta(static_cast<std::size_t>(net.num_edges()), 1.0);
  EigenOptions dense;
  dense.method = EigenMethod::dense;
  const KernelEigenvalues d = kernel_top_eigenvalues(net, theta, 1, dense);
  EXPECT_TRUE(testing::contains(to_json(d, -1), R"("status":"converged","method":"dense",)"
                                                R"("products":0,"iterations":0,)"
                                                R"("residuals":null})"));
}

}  // namespace
}  // namespace pathlift
