// Parameters distinct from edges (weight sharing, fixed edges) and max nodes, against
// brute-force references written here from the definitions: Phi_p = product of the edge
// weights of p, B[p, k] = number of edges of p carrying k, dPhi[p, k] = sum over those edges of
// the product of the other weights; K = dPhi^T dPhi; h_sym = dimension of the rescaling changes
// by dense elimination of their defining linear system.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <vector>

#include "pathlift/builtins.hpp"
#include "pathlift/certificate.hpp"
#include "pathlift/error.hpp"
#include "pathlift/forward.hpp"
#include "pathlift/io.hpp"
#include "pathlift/kernel.hpp"
#include "pathlift/lifting.hpp"
#include "pathlift/linearize.hpp"
#include "pathlift/norms.hpp"
#include "pathlift/rank.hpp"
#include "pathlift/symmetry.hpp"
#include "reference.hpp"
#include "src/core/random.hpp"
#include "support.hpp"

namespace pathlift {
namespace {

using testing::ref_paths;

/// A copy of `net` whose edges carry parameters from a random map: one edge in five fixed, the
/// others sharing d = 2/3 of the edges' count of parameters.
Network with_random_parameters(const Network& net, std::uint64_t seed) {
  return testing::with_random_parameters(net, {.rng_seed = seed});
}

std::vector<double> random_theta(Index d, std::uint64_t seed) {
  return normal_weights(d, seed);
}

/// dPhi (P x d, dense) by the definition.
Eigen::MatrixXd ref_dphi(const Network& net, const std::vector<double>& theta) {
  const auto paths = ref_paths(net);
  const std::vector<double> w = net.edge_weights(theta);
  Eigen::MatrixXd j = Eigen::MatrixXd::Zero(static_cast<Index>(paths.size()), net.num_params());
  for (std::size_t p = 0; p < paths.size(); ++p) {
    const auto& edges = paths[p].edges;
    for (std::size_t i = 0; i < edges.size(); ++i) {
      const Index k = net.edge_param(edges[i]);
      if (k < 0) {
        continue;
      }
      double others = 1;
      for (std::size_t j2 = 0; j2 < edges.size(); ++j2) {
        if (j2 != i) {
          others *= w[static_cast<std::size_t>(edges[j2])];
        }
      }
      j(static_cast<Index>(p), k) += others;
    }
  }
  return j;
}

TEST(Parameters, LiftingSkeletonJacobianKernelNormsMatchTheDefinitions) {
  int tested = 0;
  for (std::uint64_t seed = 1; seed <= 150; ++seed) {
    const Network net = with_random_parameters(testing::random_network(seed), seed);
    const auto theta = random_theta(net.num_params(), seed);
    const auto paths = ref_paths(net);
    if (paths.empty()) {
      continue;
    }
    ++tested;
    const std::vector<double> w = net.edge_weights(theta);
    const auto phi = path_lifting<double>(net, std::span<const double>(theta));
    ASSERT_EQ(phi.size(), paths.size());
    for (std::size_t p = 0; p < paths.size(); ++p) {
      double x = 1;
      for (const EdgeId e : paths[p].edges) {
        x *= w[static_cast<std::size_t>(e)];
      }
      EXPECT_NEAR(phi[p], x, 1e-12 * (1 + std::abs(x))) << "seed " << seed;
    }
    const Eigen::MatrixXd ref = ref_dphi(net, theta);
    const CsrMatrix<double> j = jacobian<double>(net, std::span<const double>(theta));
    EXPECT_EQ(j.cols(), net.num_params());
    EXPECT_LT((to_dense(j) - ref).cwiseAbs().maxCoeff(), 1e-10) << "seed " << seed;
    const PathSet ps = enumerate_paths(net);
    EXPECT_LT((to_dense(jacobian<double>(ps, std::span<const double>(theta))) - ref)
                  .cwiseAbs()
                  .maxCoeff(),
              1e-10);
    EXPECT_LT(
        (dense_jacobian<double>(ps, std::span<const double>(theta)) - ref).cwiseAbs().maxCoeff(),
        1e-10);
    // K = dPhi^T dPhi: its diagonal, K v and the dense K.
    const Eigen::MatrixXd k = ref.transpose() * ref;
    const double scale = 1 + k.cwiseAbs().maxCoeff();
    const auto diag = kernel_diagonal(net, theta);
    for (Index i = 0; i < net.num_params(); ++i) {
      EXPECT_NEAR(diag[static_cast<std::size_t>(i)], k(i, i), 1e-10 * scale) << "seed " << seed;
    }
    EXPECT_NEAR(kernel_trace(net, theta).value(), k.trace(), 1e-10 * scale * net.num_params());
    const auto v = random_theta(net.num_params(), seed + 1000);
    const Eigen::VectorXd kv = kernel_matvec(net, theta, v);
    const Eigen::VectorXd ref_kv =
        k * Eigen::Map<const Eigen::VectorXd>(v.data(), static_cast<Index>(v.size()));
    EXPECT_LT((kv - ref_kv).cwiseAbs().maxCoeff(), 1e-9 * (1 + ref_kv.cwiseAbs().maxCoeff()));
    EXPECT_LT((kernel(net, theta) - k).cwiseAbs().maxCoeff(), 1e-9 * scale);
    // Path-norms: sum over paths of |Phi_p|^s.
    for (const double s : {1.0, 2.0, 0.5}) {
      double sum = 0;
      for (const double x : phi) {
        sum += std::pow(std::abs(x), s);
      }
      EXPECT_NEAR(path_norm(net, theta, s).sum.value(), sum, 1e-10 * (1 + sum));
    }
    // B: the skeleton, when no path carries a parameter twice (else refused).
    Eigen::MatrixXd ref_b = Eigen::MatrixXd::Zero(ref.rows(), net.num_params());
    for (std::size_t p = 0; p < paths.size(); ++p) {
      for (const EdgeId e : paths[p].edges) {
        if (net.edge_param(e) >= 0) {
          ref_b(static_cast<Index>(p), net.edge_param(e)) += 1;
        }
      }
    }
    if (ref_b.maxCoeff() > 1) {
      EXPECT_THROW((void)skeleton(net), NetworkError);
    } else {
      EXPECT_EQ(to_dense(skeleton(net)), ref_b) << "seed " << seed;
      EXPECT_EQ(to_dense(skeleton(ps)), ref_b) << "seed " << seed;
      // Proposition 2 per parameter: dPhi = diag(Phi) B diag(1/theta) (no theta_k is 0 here).
      const auto paper = jacobian_paper_formula<double>(
          ps, std::span<const double>(phi.data(), phi.size()), std::span<const double>(theta));
      EXPECT_EQ(paper.values.size(), static_cast<std::size_t>(paper.nnz()));
      EXPECT_LT((to_dense(paper) - ref).cwiseAbs().maxCoeff(),
                1e-9 * (1 + ref.cwiseAbs().maxCoeff()))
          << "seed " << seed;
    }
  }
  EXPECT_GT(tested, 100);
}

TEST(Parameters, FileFormatVersion2RoundTrips) {
  const Network net = with_random_parameters(fig1(), 7);
  const std::string text = network_to_json(net, 1);
  EXPECT_TRUE(testing::contains(text, "\"version\": 2"));
  EXPECT_TRUE(testing::contains(text, "\"num_params\""));
  const Network back = parse_network(text);
  EXPECT_EQ(back.num_params(), net.num_params());
  for (EdgeId e = 0; e < net.num_edges(); ++e) {
    EXPECT_EQ(back.edge_param(e), net.edge_param(e));
    EXPECT_EQ(back.fixed_weight(e), net.fixed_weight(e));
  }
  // Version 1 files still mean one parameter per edge.
  EXPECT_TRUE(parse_network(network_to_json(fig1())).one_parameter_per_edge());
}

TEST(Parameters, ThetaIsCheckedAgainstTheParameters) {
  const Network net = with_random_parameters(fig1(), 3);
  std::vector<double> theta(static_cast<std::size_t>(net.num_edges()), 1.0);
  const std::string msg = testing::error_of<std::invalid_argument>(
      [&] { (void)path_lifting<double>(net, std::span<const double>(theta)); });
  EXPECT_TRUE(
      testing::contains(msg, fmt::format("but the network has {} parameters", net.num_params())))
      << msg;
}

/// x0, x1 -> m = max(x0, 2 x1) -> y = 3 m (the max node's in-edges fixed at 1 and 2).
Network max_network() {
  NetworkSpec s;
  s.node_names = {"x0", "x1", "m", "y"};
  s.edges = {{0, 2}, {1, 2}, {2, 3}};
  s.edge_params = {kFixedEdge, kFixedEdge, 0};
  s.fixed_weights = {1.0, 2.0, 0.0};
  s.num_params = 1;
  s.activations = {{2, Activation::max()}};
  return Network(std::move(s));
}

TEST(Parameters, MaxNodesForwardAndLinearize) {
  const Network net = max_network();
  const std::vector<double> theta = {3.0};
  Eigen::MatrixXd X(3, 2);
  X << 1.0, 0.25, -1.0, -2.0, 1.0, 0.5;  // max from x0, from x0, a tie (ties: edge 0)
  const ForwardResult fw = forward(net, theta, X);
  EXPECT_DOUBLE_EQ(fw.outputs(0, 0), 3.0);
  EXPECT_DOUBLE_EQ(fw.outputs(1, 0), -3.0);
  EXPECT_DOUBLE_EQ(fw.outputs(2, 0), 3.0);
  const ActivationPattern pat = activation_pattern(net, fw);
  EXPECT_EQ(pat.max_edges(0, 2), 0);
  EXPECT_EQ(pat.max_edges(1, 2), 0);
  EXPECT_EQ(pat.max_edges(2, 2), 0);  // the tie goes to the smaller edge index
  EXPECT_TRUE(pat.on_kink);
  const Linearization lin = linearize(net, theta, X);
  const auto phi = path_lifting<double>(net, std::span<const double>(theta));
  // Paths: x0 -> m -> y (Phi = 3), x1 -> m -> y (Phi = 6).
  ASSERT_EQ(phi.size(), 2U);
  const Eigen::VectorXd f = to_eigen(lin.map) * Eigen::Map<const Eigen::VectorXd>(phi.data(), 2);
  for (Index i = 0; i < 3; ++i) {
    EXPECT_DOUBLE_EQ(f(i), fw.outputs(i, 0));
  }
  // A max node's in-edge carrying a parameter is refused.
  NetworkSpec s = net.spec();
  s.edge_params[1] = 0;
  EXPECT_TRUE(testing::contains(testing::error_of<NetworkError>([&] { Network bad(s); }),
                                "incoming edges of a max node must be fixed"));
}

/// h_sym by dense elimination of the system alpha(dst) - alpha(src) - c_k = 0 (parameter
/// edges), alpha(dst) - alpha(src) = 0 (fixed edges), alpha = 0 on inputs and outputs:
/// dim {c} = dim of the solution space (c = 0 forces alpha = 0).
Index ref_h_sym(const Network& net) {
  const Index m = net.num_nodes();
  const Index d = net.num_params();
  std::vector<std::vector<std::int64_t>> rows;
  for (EdgeId e = 0; e < net.num_edges(); ++e) {
    std::vector<std::int64_t> r(static_cast<std::size_t>(m + d), 0);
    r[static_cast<std::size_t>(net.target(e))] += 1;
    r[static_cast<std::size_t>(net.source(e))] -= 1;
    if (net.edge_param(e) >= 0) {
      r[static_cast<std::size_t>(m + net.edge_param(e))] -= 1;
    }
    rows.push_back(r);
  }
  for (NodeId v = 0; v < m; ++v) {
    if (!net.is_hidden(v)) {
      std::vector<std::int64_t> r(static_cast<std::size_t>(m + d), 0);
      r[static_cast<std::size_t>(v)] = 1;
      rows.push_back(r);
    }
  }
  const auto rank = testing::bareiss_rank(rows);
  EXPECT_TRUE(rank.has_value());
  return m + d - rank.value_or(0);
}

TEST(Parameters, SymmetryDimensionMatchesTheLinearSystem) {
  for (std::uint64_t seed = 1; seed <= 120; ++seed) {
    const Network plain = testing::random_network(seed);
    EXPECT_EQ(rescaling_symmetry_dimension(plain).h_sym, plain.num_hidden());
    const Network net = with_random_parameters(plain, seed);
    EXPECT_EQ(rescaling_symmetry_dimension(net).h_sym, ref_h_sym(net)) << "seed " << seed;
  }
}

TEST(Parameters, CertifiedRankEqualsTheRankOfTheDenseSkeleton) {
  int certified = 0;
  int below = 0;
  for (std::uint64_t seed = 1; seed <= 120; ++seed) {
    const Network net = with_random_parameters(testing::random_network(seed), seed);
    if (ref_paths(net).empty() || net.one_parameter_per_edge()) {
      continue;  // (a random map can be the identity: then it is the plain network)
    }
    CsrPattern b;
    try {
      b = skeleton(net);
    } catch (const NetworkError&) {
      continue;  // a parameter twice on a path: B is not a pattern
    }
    const RankCertificate cert = certify_rank(net, b);
    const Eigen::MatrixXd dense = to_dense(b);
    std::vector<std::vector<std::int64_t>> rows;
    for (Index r = 0; r < dense.rows(); ++r) {
      rows.emplace_back();
      for (Index c = 0; c < dense.cols(); ++c) {
        rows.back().push_back(static_cast<std::int64_t>(dense(r, c)));
      }
    }
    const auto exact = testing::bareiss_rank(rows);
    ASSERT_TRUE(exact.has_value());
    EXPECT_TRUE(cert.certified()) << "seed " << seed;
    EXPECT_EQ(cert.lower, *exact) << "seed " << seed;
    // rank(B) = d - h_sym exactly: ker B is the space of rescaling changes (docs/rank.md).
    EXPECT_EQ(*exact, net.num_params() - ref_h_sym(net)) << "seed " << seed;
    const RankReport rep = check_rank_theorem(net, random_theta(net.num_params(), seed));
    EXPECT_FALSE(rep.one_parameter_per_edge);
    EXPECT_EQ(rep.h_sym, net.num_params() - rep.expected);
    EXPECT_EQ(rep.status == RankStatus::below_symmetry_bound, *exact < rep.expected);
    below += rep.status == RankStatus::below_symmetry_bound ? 1 : 0;
    EXPECT_FALSE(is_failure(rep.status)) << rep.explanation;
    // The path-free route: rank(B) by the symmetry theorem, equal to the exact rank; the
    // path basis and B^T B need one parameter per edge there (refused, not ignored).
    const RankReport free =
        check_rank_theorem(net, random_theta(net.num_params(), seed), {}, {}, RankRoute::path_free);
    EXPECT_EQ(free.rank_B.method, RankMethod::symmetry);
    EXPECT_EQ(free.rank_B.rank(), std::optional<Index>(*exact)) << "seed " << seed;
    EXPECT_EQ(free.status, RankStatus::verified) << free.explanation;
    for (const RankMethod m : {RankMethod::path_basis, RankMethod::gram}) {
      EXPECT_THROW(
          (void)check_rank_theorem(net, random_theta(net.num_params(), seed),
                                   RankOptions{.method = m, .prime = default_prime, .engine = {}},
                                   {}, RankRoute::path_free),
          std::invalid_argument);
    }
    certified += cert.certified() ? 1 : 0;
  }
  EXPECT_GT(certified, 50);
  EXPECT_EQ(below, 0);
}

}  // namespace
}  // namespace pathlift
