// The kernel's block product and eigenpairs (kernel.hpp, layer_dp.hpp, path_free.hpp): K V
// against column-by-column products, block Lanczos's and LOBPCG's eigenpairs against the
// explicit K's dense eigendecomposition (values to 1e-10, vectors by their residuals and the
// eigenspaces they span), close and repeated eigenvalues (twin units), layer graphs without
// unrolling, and the errors.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <Eigen/Eigenvalues>
#include <cmath>
#include <vector>

#include "pathlift/builtins.hpp"
#include "pathlift/error.hpp"
#include "pathlift/kernel.hpp"
#include "pathlift/layer_dp.hpp"
#include "pathlift/layers.hpp"
#include "pathlift/model.hpp"
#include "pathlift/path_free.hpp"
#include "src/dp/detail/block_eigen.hpp"
#include "support.hpp"
#include "tests/layer_zoo.hpp"
#include "tests/layers_builder.hpp"

namespace pathlift {
namespace {

/// The explicit K's eigenvalues (descending) and eigenvectors (matching columns).
struct DenseEigen {
  Eigen::VectorXd values;
  Eigen::MatrixXd vectors;
};

DenseEigen dense_eigen(const DenseMatrix& k) {
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es{Eigen::MatrixXd(k)};
  return {es.eigenvalues().reverse(), es.eigenvectors().rowwise().reverse()};
}

/// r's values equal the explicit ones to `rel` of the largest, its residuals are within the
/// tolerance, and each eigenvector lies in the explicit eigenspace of its value (the
/// projection on the eigenvectors whose eigenvalues are within 1e-6 keeps its norm).
void expect_eigenpairs(const KernelEigenvalues& r, const DenseEigen& want, Index count, double rel,
                       double tolerance, const std::string& what) {
  ASSERT_EQ(r.status, EigenStatus::converged) << what;
  ASSERT_EQ(r.values.size(), count) << what;
  const double top = want.values(0);
  for (Index i = 0; i < count; ++i) {
    EXPECT_LE(std::fabs(r.values(i) - want.values(i)), rel * top)
        << what << " eigenvalue " << i << ": " << r.values(i) << " vs " << want.values(i);
  }
  ASSERT_EQ(r.residuals.size(), count) << what;
  for (Index i = 0; i < count; ++i) {
    EXPECT_LE(r.residuals(i), 2 * tolerance) << what << " residual " << i;
  }
  if (r.vectors.size() == 0) {
    return;
  }
  ASSERT_EQ(r.vectors.cols(), count) << what;
  for (Index i = 0; i < count; ++i) {
    EXPECT_NEAR(r.vectors.col(i).norm(), 1.0, 1e-10) << what;
    double projected = 0;
    for (Index j = 0; j < want.values.size(); ++j) {
      if (std::fabs(want.values(j) - r.values(i)) <= 1e-6 * top) {
        const double c = want.vectors.col(j).dot(r.vectors.col(i));
        projected += c * c;
      }
    }
    EXPECT_NEAR(projected, 1.0, 1e-8) << what << " eigenvector " << i;
  }
}

TEST(KernelBlock, BlockProductEqualsColumnByColumn) {
  for (const char* name : {"ff:4,16,16,2", "fig1"}) {
    const Network net = builtin_network(name);
    const auto theta = normal_weights(net.num_params(), 3);
    const Index d = net.num_params();
    const auto draws = normal_weights(d * 5, 9);
    const Eigen::MatrixXd v = Eigen::Map<const Eigen::MatrixXd>(draws.data(), d, 5);
    const Eigen::MatrixXd kv = kernel_matmat(net, theta, v);
    for (Index j = 0; j < 5; ++j) {
      const std::vector<double> col(v.col(j).data(), v.col(j).data() + d);
      EXPECT_EQ(kv.col(j), kernel_matvec(net, theta, col)) << name << " column " << j;
    }
  }
}

TEST(KernelBlock, LayerOperatorEqualsTheUnrolledProducts) {
  int index = 0;
  for (const LayerGraph& g : testing::layer_zoo()) {
    ++index;
    if (g.num_params > 20000) {
      continue;
    }
    const Network net = unroll(g);
    const auto theta = normal_weights(g.num_params, 40 + static_cast<std::uint64_t>(index));
    const Index d = g.num_params;
    const auto draws = normal_weights(d * 3, static_cast<std::uint64_t>(index));
    const Eigen::MatrixXd v = Eigen::Map<const Eigen::MatrixXd>(draws.data(), d, 3);
    const LayerKernelOperator op(g, theta);
    EXPECT_EQ(op.size(), d);
    Eigen::MatrixXd kv(d, 3);
    op.apply(v.data(), kv.data(), 3);
    const Eigen::MatrixXd want = kernel_matmat(net, theta, v);
    EXPECT_LE((kv - want).norm(), 1e-11 * want.norm()) << "zoo graph " << index;
    // The same operator again: what it keeps is not changed by a product.
    Eigen::MatrixXd again(d, 3);
    op.apply(v.data(), again.data(), 3);
    EXPECT_EQ(again, kv) << "zoo graph " << index;
    // The Model face: the block product of the layer graph, never unrolled.
    const Model model(g);
    EXPECT_EQ(kernel_matmat(model, theta, v), kv) << "zoo graph " << index;
    // Bit-identical for any thread count.
    EngineOptions three;
    three.threads = 3;
    const LayerKernelOperator op3(g, theta, three);
    Eigen::MatrixXd kv3(d, 3);
    op3.apply(v.data(), kv3.data(), 3);
    EXPECT_EQ(kv3, kv) << "zoo graph " << index;
  }
}

TEST(KernelSpectrum, LobpcgAndLanczosEqualTheExplicitKernel) {
  for (const char* name : {"ff:4,16,16,2", "ff:6,20,20,3", "random"}) {
    const Network net =
        std::string(name) == "random" ? random_dag(40, 0.3, 7) : builtin_network(name);
    const auto theta = normal_weights(net.num_params(), 11);
    const DenseEigen want = dense_eigen(kernel(net, theta));
    for (const EigenMethod m : {EigenMethod::lobpcg, EigenMethod::lanczos}) {
      for (const Index count : {1, 3, 6}) {
        EigenOptions o;
        o.method = m;
        o.vectors = true;
        const KernelEigenvalues r = kernel_top_eigenvalues(net, theta, count, o);
        EXPECT_EQ(r.method, m);
        EXPECT_GT(r.products, 0);
        if (m == EigenMethod::lobpcg) {
          EXPECT_GT(r.iterations, 0);
        }
        expect_eigenpairs(r, want, count, 1e-10, o.tolerance,
                          fmt::format("{} {} top {}", name, to_string(m), count));
      }
    }
  }
}

TEST(KernelSpectrum, LayerGraphTwinChannels) {
  // Equal weights in every layer of a CNN (conv, conv_transpose and linear layers included):
  // twin channels, multiplets, found on the layer graph as on the unrolled network.
  int index = 0;
  for (const LayerGraph& g : testing::layer_zoo()) {
    ++index;
    if (g.num_params > 3000 || g.num_params < 50) {
      continue;
    }
    const std::vector<double> theta(static_cast<std::size_t>(g.num_params), 0.5);
    const DenseEigen want = dense_eigen(kernel(unroll(g), theta));
    EigenOptions o;
    o.method = EigenMethod::lanczos;
    o.vectors = true;
    o.tolerance = 1e-9;
    const KernelEigenvalues r = kernel_top_eigenvalues(g, theta, 4, o);
    expect_eigenpairs(r, want, 4, 1e-9, o.tolerance, fmt::format("zoo graph {}", index));
  }
}

TEST(KernelSpectrum, RepeatedAndCloseEigenvaluesDoNotStallIt) {
  // All weights 1 on a fully connected network: the permutations of each hidden layer are
  // symmetries of K, so its top eigenvalues come in exact multiplets (here 1 and then 0.781 eleven
  // times). Slightly perturbed, they split into a cluster 1e-4 wide that LOBPCG's block of 7
  // cuts: its block grows when the residuals stall. Block Lanczos would find each multiplet once
  // with a block of one vector: the twin units give it a block of 5, and all five come out;
  // perturbed, there are no twins (a block of 1) and the cluster is resolved all the same. At
  // tolerance 1e-8, the eigenvalues are right to 1e-9 (their error is about the residual
  // squared over the gap).
  const Network net = builtin_network("ff:5,12,12,2");
  for (const double eps : {0.0, 1e-4}) {
    std::vector<double> theta = normal_weights(net.num_params(), 5);
    for (double& t : theta) {
      t = 1 + eps * t;
    }
    const DenseEigen want = dense_eigen(kernel(net, theta));
    ASSERT_LT(std::fabs(want.values(1) - want.values(4)), 1e-2) << "a multiplet or a cluster";
    for (const EigenMethod m : {EigenMethod::lobpcg, EigenMethod::lanczos}) {
      EigenOptions o;
      o.method = m;
      o.vectors = true;
      o.tolerance = 1e-8;
      const KernelEigenvalues r = kernel_top_eigenvalues(net, theta, 5, o);
      EXPECT_EQ(r.method, m);
      expect_eigenpairs(r, want, 5, 1e-9, o.tolerance,
                        fmt::format("{} perturbation {}", to_string(m), eps));
      EXPECT_LT(r.iterations, 100) << eps;
    }
  }
}

TEST(KernelSpectrum, EveryMethodGivesVectorsAndResiduals) {
  const Network net = builtin_network("ff:4,16,16,2");
  const auto theta = normal_weights(net.num_params(), 2);
  const DenseEigen want = dense_eigen(kernel(net, theta));
  Eigen::MatrixXd first;
  for (const EigenMethod m : {EigenMethod::dense, EigenMethod::lanczos, EigenMethod::lobpcg}) {
    EigenOptions o;
    o.method = m;
    o.vectors = true;
    const KernelEigenvalues r = kernel_top_eigenvalues(net, theta, 3, o);
    EXPECT_EQ(r.dense, m == EigenMethod::dense);
    EXPECT_EQ(r.method, m);
    expect_eigenpairs(r, want, 3, 1e-10, 1e-8, std::string(to_string(m)));
    // Simple eigenvalues: the vectors agree across methods, their signs fixed alike.
    if (first.size() == 0) {
      first = r.vectors;
    } else {
      EXPECT_LE((r.vectors - first).norm(), 1e-6) << to_string(m);
    }
  }
  // Without vectors: none, and residuals from both iterations (their fresh products).
  EigenOptions lanczos;
  lanczos.method = EigenMethod::lanczos;
  const KernelEigenvalues l = kernel_top_eigenvalues(net, theta, 3, lanczos);
  EXPECT_EQ(l.vectors.size(), 0);
  EXPECT_EQ(l.residuals.size(), 3);
  EigenOptions lobpcg;
  lobpcg.method = EigenMethod::lobpcg;
  const KernelEigenvalues b = kernel_top_eigenvalues(net, theta, 3, lobpcg);
  EXPECT_EQ(b.vectors.size(), 0);
  EXPECT_EQ(b.residuals.size(), 3);
}

TEST(KernelSpectrum, LayerGraphWithoutUnrolling) {
  const LayerGraph g = testing::zoo_cnn();
  const auto theta = normal_weights(g.num_params, 17);
  const Network net = unroll(g);
  const DenseEigen want = dense_eigen(kernel(net, theta));
  EigenOptions o;
  o.method = EigenMethod::lobpcg;
  o.vectors = true;
  const KernelEigenvalues r = kernel_top_eigenvalues(g, theta, 3, o);
  EXPECT_EQ(r.method, EigenMethod::lobpcg);
  expect_eigenpairs(r, want, 3, 1e-10, o.tolerance, "zoo_cnn");
  // The automatic method on a layer graph with d > 256: block Lanczos, the same eigenvalues.
  ASSERT_GT(g.num_params, 256);
  const KernelEigenvalues a = kernel_top_eigenvalues(Model(g), theta, 2);
  EXPECT_EQ(a.method, EigenMethod::lanczos);
  EXPECT_LE(std::fabs(a.values(0) - want.values(0)), 1e-10 * want.values(0));
  EXPECT_LE(std::fabs(a.values(1) - want.values(1)), 1e-10 * want.values(0));
}

TEST(KernelSpectrum, RepeatedEigenvaluesWithoutTwins) {
  // An average pool into a linear layer (issue 50): every path holds one parameter, so K is
  // diagonal whatever theta, 1 for each bias and 2 x (1/2)^2 = 1/2 for each weight: the top
  // eigenvalue repeats `out` times, the next 2 L / 2 x out times, and no two units are twins
  // once the weights are random. A block of one vector saw 1 once ((1, 0.5, 0.5) for the top
  // three, status converged); the multiplicity check finds every copy, on the layer graph as on
  // the unrolled network, and on networks with a ReLU whose spectra repeat the same way.
  for (const Index out : {3, 5}) {
    for (const bool relu : {false, true}) {
      testing::GraphBuilder b({1, 200});
      Index x = b.pool(LayerKind::avg_pool, "pool", 0, {2});
      if (relu) {
        x = b.act("relu", b.conv("conv", x, 2, {1}));
      }
      x = b.linear("fc", b.op(LayerKind::flatten, "flatten", {x}), out);
      const LayerGraph g = b.graph({x});
      const auto theta = normal_weights(g.num_params, 7 + out);
      const Network net = unroll(g);
      ASSERT_GT(net.num_params(), 256);
      const DenseEigen want = dense_eigen(kernel(net, theta));
      for (const Index count : {Index{2}, out, out + 2}) {
        EigenOptions o;
        o.method = EigenMethod::lanczos;
        o.vectors = true;
        const std::string what = fmt::format("out {} relu {} top {}", out, relu, count);
        expect_eigenpairs(kernel_top_eigenvalues(net, theta, count, o), want, count, 1e-10,
                          o.tolerance, what + " (DAG)");
        expect_eigenpairs(kernel_top_eigenvalues(g, theta, count, o), want, count, 1e-10,
                          o.tolerance, what + " (layer graph)");
        // The vectors of a repeated eigenvalue span its eigenspace: orthonormal columns.
        const KernelEigenvalues r = kernel_top_eigenvalues(Model(g), theta, count);
        ASSERT_EQ(r.values.size(), count) << what;
        EXPECT_EQ(r.method, EigenMethod::lanczos) << what;
        for (Index i = 0; i < count; ++i) {
          EXPECT_NEAR(r.values(i), want.values(i), 1e-10 * want.values(0)) << what << " " << i;
        }
      }
      if (!relu) {
        EXPECT_NEAR(want.values(out - 1), 1.0, 1e-12);
        EXPECT_NEAR(want.values(out), 0.5, 1e-12);
      }
    }
  }
}

TEST(KernelSpectrum, RepeatedEigenvectorsAreOrthonormal) {
  // The copies found by the multiplicity check are new directions: V^T V = I.
  testing::GraphBuilder b({1, 120});
  const Index x = b.linear(
      "fc", b.op(LayerKind::flatten, "flatten", {b.pool(LayerKind::avg_pool, "pool", 0, {4})}), 4);
  const LayerGraph g = b.graph({x});
  const auto theta = normal_weights(g.num_params, 3);
  EigenOptions o;
  o.method = EigenMethod::lanczos;
  o.vectors = true;
  const KernelEigenvalues r = kernel_top_eigenvalues(g, theta, 6, o);
  ASSERT_EQ(r.status, EigenStatus::converged);
  ASSERT_EQ(r.vectors.cols(), 6);
  const Eigen::MatrixXd gram = r.vectors.transpose() * r.vectors;
  EXPECT_LE((gram - Eigen::MatrixXd::Identity(6, 6)).cwiseAbs().maxCoeff(), 1e-8);
  for (Index i = 0; i < 4; ++i) {
    EXPECT_NEAR(r.values(i), 1.0, 1e-12) << i;
  }
  EXPECT_NEAR(r.values(4), 4 * 0.25 * 0.25, 1e-12);
}

TEST(KernelSpectrum, LowRankKernel) {
  // theta = 0: K has eigenvalues 1, 1, 0, ..., 0 (tests/kernel_test.cpp); both iterations find
  // the zeros too (their residuals are within the roundoff floor; Lanczos's Krylov space
  // becomes invariant, its Ritz pairs exact).
  const Network net = builtin_network("ff:4,16,16,2");
  const std::vector<double> theta(static_cast<std::size_t>(net.num_params()), 0.0);
  for (const EigenMethod m : {EigenMethod::lobpcg, EigenMethod::lanczos}) {
    EigenOptions o;
    o.method = m;
    const KernelEigenvalues r = kernel_top_eigenvalues(net, theta, 4, o);
    ASSERT_EQ(r.status, EigenStatus::converged) << to_string(m);
    EXPECT_NEAR(r.values(0), 1.0, 1e-12) << to_string(m);
    EXPECT_NEAR(r.values(1), 1.0, 1e-12) << to_string(m);
    EXPECT_NEAR(r.values(2), 0.0, 1e-12) << to_string(m);
    EXPECT_NEAR(r.values(3), 0.0, 1e-12) << to_string(m);
  }
}

TEST(KernelSpectrum, LanczosOnDiagonalOperators) {
  // Block Lanczos on a known operator: diag(values) in a random orthonormal basis would do, a
  // diagonal one is the same for the iteration (its start is random). Rank 2 with 4 wanted
  // and a block of 1: the Krylov space closes after 3 vectors, and fresh random directions
  // find the zeros. A triple eigenvalue with a block of 3: all three copies.
  const Index d = 500;
  const auto run = [&](const Eigen::VectorXd& diag, Index count, Index block) {
    EigenOptions o;
    o.tolerance = 1e-10;
    o.vectors = true;
    return detail::lanczos_top_eigenpairs(
        d,
        [&](const double* x, double* y, Index k) {
          for (Index j = 0; j < k; ++j) {
            for (Index i = 0; i < d; ++i) {
              y[j * d + i] = diag(i) * x[j * d + i];
            }
          }
        },
        count, block, o);
  };
  Eigen::VectorXd low = Eigen::VectorXd::Zero(d);
  low(7) = 3;
  low(300) = 2;
  const KernelEigenvalues r = run(low, 4, 1);
  ASSERT_EQ(r.status, EigenStatus::converged);
  EXPECT_NEAR(r.values(0), 3, 1e-12);
  EXPECT_NEAR(r.values(1), 2, 1e-12);
  EXPECT_NEAR(r.values(2), 0, 1e-12);
  EXPECT_NEAR(r.values(3), 0, 1e-12);
  EXPECT_NEAR(std::fabs(r.vectors(7, 0)), 1, 1e-12);
  Eigen::VectorXd triple = Eigen::VectorXd::LinSpaced(d, 0, 1);
  triple(10) = triple(20) = triple(30) = 2;
  const KernelEigenvalues t = run(triple, 4, 3);
  ASSERT_EQ(t.status, EigenStatus::converged);
  for (Index j = 0; j < 3; ++j) {
    EXPECT_NEAR(t.values(j), 2, 1e-12) << j;
  }
  EXPECT_NEAR(t.values(3), 1, 1e-12);
}

TEST(KernelSpectrum, LanczosKeepsItsBasisOrthogonalWhereItMatters) {
  // One eigenvalue 1e6 times the others: its Ritz vector converges in a few steps, and from then
  // on the three-term recurrence loses orthogonality to it at every step (plain Lanczos then
  // finds it again, a ghost, among the top four). The second Gram-Schmidt pass runs on the
  // columns that F leans on (reorthogonalize), so the four values are 1e6 and the next three.
  const Index d = 3000;
  Eigen::VectorXd diag = Eigen::VectorXd::LinSpaced(d, 0, 1);
  diag(5) = 1e6;
  diag(17) = 1.5;
  diag(29) = 1.25;
  EigenOptions o;
  o.tolerance = 1e-10;
  o.subspace = 40;
  const KernelEigenvalues r = detail::lanczos_top_eigenpairs(
      d,
      [&](const double* x, double* y, Index k) {
        for (Index j = 0; j < k; ++j) {
          for (Index i = 0; i < d; ++i) {
            y[j * d + i] = diag(i) * x[j * d + i];
          }
        }
      },
      4, 1, o);
  ASSERT_EQ(r.status, EigenStatus::converged);
  const double want[] = {1e6, 1.5, 1.25, 1.0};
  for (Index j = 0; j < 4; ++j) {
    EXPECT_NEAR(r.values(j), want[j], 1e-9 * want[j]) << j;
  }
}

TEST(KernelSpectrum, NotConvergedIsAStatus) {
  const Network net = builtin_network("ff:6,20,20,3");
  const auto theta = normal_weights(net.num_params(), 4);
  for (const EigenMethod m : {EigenMethod::lobpcg, EigenMethod::lanczos}) {
    EigenOptions o;
    o.method = m;
    o.max_iterations = 1;
    o.subspace = m == EigenMethod::lanczos ? 9 : 0;
    o.tolerance = 1e-14;
    const KernelEigenvalues r = kernel_top_eigenvalues(net, theta, 3, o);
    EXPECT_EQ(r.status, EigenStatus::not_converged) << to_string(m);
    EXPECT_LT(r.values.size(), 3) << to_string(m);
    EXPECT_EQ(r.residuals.size(), r.values.size()) << to_string(m);
  }
}

TEST(KernelSpectrum, Errors) {
  const Network net = builtin_network("ff:2,3,1");  // d = 13
  const auto theta = normal_weights(net.num_params(), 1);
  EigenOptions o;
  o.method = EigenMethod::lobpcg;
  EXPECT_TRUE(
      testing::contains(testing::error_of<std::invalid_argument>(
                            [&] { (void)kernel_top_eigenvalues(net, theta, 5, o); }),
                        "LOBPCG needs 3 x its block of 7 vectors <= d = 13; use the dense method"));
  o.subspace = 2;
  EXPECT_TRUE(testing::contains(testing::error_of<std::invalid_argument>(
                                    [&] { (void)kernel_top_eigenvalues(net, theta, 3, o); }),
                                "smaller than the 3 eigenpairs"));
  Eigen::MatrixXd v = Eigen::MatrixXd::Ones(net.num_params(), 2);
  v(4, 1) = std::nan("");
  EXPECT_TRUE(testing::contains(
      testing::error_of<std::invalid_argument>([&] { (void)kernel_matmat(net, theta, v); }),
      "column 1 of V"));
  EXPECT_TRUE(testing::contains(
      testing::error_of<std::invalid_argument>([&] { (void)kernel_matmat(Model(net), theta, v); }),
      "V[4, 1] = nan is not finite"));
  const Eigen::MatrixXd tall = Eigen::MatrixXd::Ones(net.num_params() + 1, 1);
  EXPECT_TRUE(testing::contains(
      testing::error_of<std::invalid_argument>([&] { (void)kernel_matmat(net, theta, tall); }),
      "V has 14 rows; the network has d = 13 parameters"));
  // The blocks LOBPCG needs are refused over the memory limit, with the sizes.
  EigenOptions tiny;
  tiny.method = EigenMethod::lobpcg;
  tiny.engine.max_memory = 1000;
  const Network big = builtin_network("ff:4,16,16,2");
  const auto tb = normal_weights(big.num_params(), 1);
  EXPECT_TRUE(testing::contains(
      testing::error_of<TooLarge>([&] { (void)kernel_top_eigenvalues(big, tb, 2, tiny); }),
      "two d x 12 blocks"));
  // Lanczos's default basis narrows to what the limit leaves, down to count + 2 blocks.
  tiny.method = EigenMethod::lanczos;
  EXPECT_TRUE(testing::contains(
      testing::error_of<TooLarge>([&] { (void)kernel_top_eigenvalues(big, tb, 2, tiny); }),
      "a basis of 4 vectors, two blocks of 1 and the 2 eigenvectors with their products) "
      "needs 30.16 KiB"));
  EigenOptions narrow;
  narrow.method = EigenMethod::lanczos;
  narrow.subspace = 4;
  EXPECT_TRUE(testing::contains(
      testing::error_of<std::invalid_argument>(
          [&] { (void)kernel_top_eigenvalues(big, tb, 3, narrow); }),
      "Lanczos's subspace of 4 vectors (within d = 386) must be at least the 3 eigenvalues plus "
      "two blocks of 1"));
}

}  // namespace
}  // namespace pathlift
