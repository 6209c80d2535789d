// The map L of Proposition 1 against a brute-force reference (paths by plain recursion, c_p^i
// from a scalar forward pass), f = L Phi against the forward pass, L dPhi against central
// finite differences, and the verification's own verdicts (ok, on_kink, inconclusive,
// mismatch).

#include "pathlift/linearize.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "pathlift/builtins.hpp"
#include "pathlift/counting.hpp"
#include "pathlift/error.hpp"
#include "pathlift/lifting.hpp"
#include "reference.hpp"
#include "support.hpp"

namespace pathlift {
namespace {

using testing::close;
using testing::ref_input_value;
using testing::ref_paths;
using testing::RefPath;
using testing::with_random_activations;

// ---------------------------------------------------------------------------------------------
// Reference slopes and outputs of one sample, from the reference forward pass.

struct RefState {
  std::vector<double> slope;   // per node
  std::vector<double> output;  // per output
};

RefState ref_state(const Network& net, const std::vector<double>& theta, const double* x) {
  const testing::RefSample r = testing::ref_forward(net, theta, x);
  RefState s;
  for (NodeId v = 0; v < net.num_nodes(); ++v) {
    const double p = r.pre[static_cast<std::size_t>(v)];
    s.slope.push_back(p > 0 ? 1.0 : testing::ref_negative_slope(net, v));
  }
  for (const NodeId o : net.outputs()) {
    s.output.push_back(r.value[static_cast<std::size_t>(o)]);
  }
  return s;
}

/// Dense L ((n q) x P) from the brute-force paths: x[start] * prod_{e in p} slope(dst e).
Eigen::MatrixXd ref_map(const Network& net, const std::vector<double>& theta,
                        const Eigen::MatrixXd& X, const std::vector<RefPath>& paths) {
  const auto q = static_cast<Index>(net.outputs().size());
  Eigen::MatrixXd L = Eigen::MatrixXd::Zero(X.rows() * q, static_cast<Index>(paths.size()));
  for (Index i = 0; i < X.rows(); ++i) {
    const Eigen::VectorXd x = X.row(i);
    const RefState s = ref_state(net, theta, x.data());
    for (std::size_t p = 0; p < paths.size(); ++p) {
      double c = ref_input_value(net, x.data(), paths[p].start);
      for (const EdgeId e : paths[p].edges) {
        c *= s.slope[static_cast<std::size_t>(net.target(e))];
      }
      Index j = 0;
      while (net.outputs()[static_cast<std::size_t>(j)] != paths[p].end) {
        ++j;
      }
      L(i * q + j, static_cast<Index>(p)) = c;
    }
  }
  return L;
}

/// Random data with about one exact zero in ten entries.
Eigen::MatrixXd data_with_zeros(const Network& net, Index n, std::uint64_t seed) {
  Eigen::MatrixXd X = random_data(net, n, seed);
  for (Index i = 0; i < X.rows(); ++i) {
    for (Index c = 0; c < X.cols(); ++c) {
      if ((i * 7 + c * 3 + static_cast<Index>(seed)) % 10 == 0) {
        X(i, c) = 0.0;
      }
    }
  }
  return X;
}

Eigen::VectorXd as_vector(const Buffer<double>& v) {
  return Eigen::Map<const Eigen::VectorXd>(v.data(), static_cast<Index>(v.size()));
}

/// |L Phi - f| <= tol * (|L| |Phi|) entrywise (the scale of the sum's terms).
void expect_l_phi_is_f(const CsrMatrix<double>& L, const Buffer<double>& phi,
                       const Eigen::MatrixXd& f, double tol, const std::string& where) {
  const auto Ls = to_eigen(L);
  const Eigen::VectorXd ph = as_vector(phi);
  const Eigen::VectorXd lphi = Ls * ph;
  const Eigen::VectorXd scale = Ls.cwiseAbs() * ph.cwiseAbs();
  const Index q = f.cols();
  ASSERT_EQ(lphi.size(), f.rows() * q) << where;
  for (Index r = 0; r < lphi.size(); ++r) {
    ASSERT_LE(std::abs(lphi(r) - f(r / q, r % q)), tol * scale(r))
        << where << " row " << r << ": L Phi " << lphi(r) << " f " << f(r / q, r % q);
  }
}

void expect_valid_csr(const CsrMatrix<double>& L, const std::string& where) {
  const auto off = L.pattern.offsets();
  const auto col = L.pattern.indices();
  ASSERT_EQ(off.size(), static_cast<std::size_t>(L.rows()) + 1) << where;
  ASSERT_EQ(L.values.size(), col.size()) << where;
  for (Index r = 0; r < L.rows(); ++r) {
    for (Index k = off[static_cast<std::size_t>(r)]; k < off[static_cast<std::size_t>(r) + 1];
         ++k) {
      ASSERT_NE(L.values[static_cast<std::size_t>(k)], 0.0) << where << " stored zero";
      if (k > off[static_cast<std::size_t>(r)]) {
        ASSERT_LT(col[static_cast<std::size_t>(k) - 1], col[static_cast<std::size_t>(k)]) << where;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------

TEST(Linearize, Fig1ByHand) {
  const Network net = fig1();
  const std::vector<double> t = {0.5, -1.0, 2.0, 0.25, 1.5, -0.5, 3.0};
  Eigen::MatrixXd X(4, 2);
  X << 1.0, 2.0,  // d on (4.5), f off (-0.5)
      -1.0, 0.5,  // d on (0.5), f on (1.125)
      2.0, -4.0,  // both off
      0.0, 3.0;   // both on, a = 0
  const Linearization lin = linearize(net, t, X);
  const CsrMatrix<double>& L = lin.map;
  // Paths: a-d-h, a-f-h, c-d-h, c-f-h, g-h.
  EXPECT_EQ(L.rows(), 4);
  EXPECT_EQ(L.cols(), 5);
  const std::vector<Index> off = {0, 3, 8, 9, 12};
  const std::vector<EdgeId> col = {0, 2, 4, 0, 1, 2, 3, 4, 4, 2, 3, 4};
  const std::vector<double> val = {1, 2, 1, -1, -1, 0.5, 0.5, 1, 1, 3, 3, 1};
  EXPECT_EQ(std::vector<Index>(L.pattern.offsets().begin(), L.pattern.offsets().end()), off);
  EXPECT_EQ(std::vector<EdgeId>(L.pattern.indices().begin(), L.pattern.indices().end()), col);
  EXPECT_EQ(std::vector<double>(L.values.begin(), L.values.end()), val);
  const Buffer<double> phi = path_lifting<double>(net, std::span<const double>(t));
  expect_l_phi_is_f(L, phi, lin.forward.outputs, 1e-15, "fig1");
  const LinearizationCheck check = check_linearization(net, t, X);
  EXPECT_EQ(check.status, LinearizationStatus::ok) << check.message;
  EXPECT_EQ(check.n, 4);
  EXPECT_EQ(check.q, 1);
  EXPECT_EQ(check.P, 5);
  EXPECT_EQ(check.nnz_L, 12);
  EXPECT_EQ(check.margin, 0.5);
  EXPECT_EQ(check.grad_entries, 4 * 7);
}

TEST(Linearize, RandomDagsMatchBruteForceAndProposition1) {
  int checked_grad = 0;
  int kinks = 0;
  for (std::uint64_t seed = 0; seed < 520; ++seed) {
    Network net = seed < 500      ? random_dag(2 + static_cast<Index>(seed % 9),
                                               0.25 + 0.1 * static_cast<double>(seed % 5), seed)
                  : seed % 2 == 0 ? sketch_h0()
                                  : sketch_h1();
    if (seed % 3 == 1) {
      net = with_random_activations(net, seed);
    }
    const std::string where = "seed " + std::to_string(seed);
    const std::vector<double> theta = normal_weights(net.num_edges(), seed + 7);
    // Exact zeros in a quarter of the batches: L skips those paths, and a hidden ReLU fed
    // only by zeros sits exactly on its kink.
    const Eigen::MatrixXd X =
        seed % 4 == 0 ? data_with_zeros(net, 4, seed + 11) : random_data(net, 4, seed + 11);
    const Linearization lin = linearize(net, theta, X);
    const std::vector<RefPath> paths = ref_paths(net);
    const auto q = static_cast<Index>(net.outputs().size());
    ASSERT_EQ(lin.map.rows(), 4 * q) << where;
    ASSERT_EQ(lin.map.cols(), static_cast<Index>(paths.size())) << where;
    expect_valid_csr(lin.map, where);
    const Eigen::MatrixXd ref = ref_map(net, theta, X, paths);
    const auto dense = to_dense(lin.map);
    for (Index r = 0; r < ref.rows(); ++r) {
      for (Index p = 0; p < ref.cols(); ++p) {
        ASSERT_TRUE(close(dense(r, p), ref(r, p), 1e-15))
            << where << " L(" << r << ", " << p << ") = " << dense(r, p) << " vs " << ref(r, p);
      }
    }
    // f = L Phi, with Phi from the path engine, f from the forward pass and the reference.
    const Buffer<double> phi = path_lifting<double>(net, std::span<const double>(theta));
    expect_l_phi_is_f(lin.map, phi, lin.forward.outputs, 1e-10, where);
    for (Index i = 0; i < X.rows(); ++i) {
      const Eigen::VectorXd x = X.row(i);
      const RefState s = ref_state(net, theta, x.data());
      for (Index j = 0; j < q; ++j) {
        ASSERT_TRUE(close(lin.forward.outputs(i, j), s.output[static_cast<std::size_t>(j)], 1e-12))
            << where;
      }
    }
    // The library's own verification agrees.
    const CsrMatrix<double> dphi = jacobian<double>(net, std::span<const double>(theta));
    LinearizationCheckOptions all;
    all.grad_params = 1000;
    const LinearizationCheck check = verify_linearization(net, theta, X, lin, phi, dphi, all);
    ASSERT_LE(check.max_err_f, 1e-10) << where;
    ASSERT_LE(check.max_err_grad, 1e-6) << where;
    if (check.margin == 0) {  // a hidden ReLU fed only by zero inputs: exactly on its kink
      ASSERT_EQ(check.status, LinearizationStatus::on_kink) << where << ": " << check.message;
      ++kinks;
    } else {
      ASSERT_EQ(check.status, LinearizationStatus::ok) << where << ": " << check.message;
      ASSERT_EQ(check.grad_entries, 4 * q * net.num_edges()) << where;
    }
    checked_grad += static_cast<int>(check.grad_entries);
  }
  EXPECT_GT(checked_grad, 5000);
  EXPECT_LT(kinks, 130);  // only batches with zeros sit on kinks
}

TEST(Linearize, LdPhiEqualsFiniteDifferencesOfTheForwardPass) {
  // Independent of verify_linearization: dense L dPhi against central differences of the
  // reference forward pass, skipping entries whose step changes the activation pattern.
  Index compared = 0;
  Index skipped = 0;
  for (std::uint64_t seed = 0; seed < 500; ++seed) {
    Network net = random_dag(2 + static_cast<Index>(seed % 8), 0.4, seed + 5000);
    if (seed % 2 == 0) {
      net = with_random_activations(net, seed);
    }
    const std::string where = "seed " + std::to_string(seed);
    const std::vector<double> theta = normal_weights(net.num_edges(), seed + 3);
    const Eigen::MatrixXd X = random_data(net, 3, seed + 4);
    const Linearization lin = linearize(net, theta, X);
    const CsrMatrix<double> dphi = jacobian<double>(net, std::span<const double>(theta));
    const Eigen::MatrixXd J = to_dense(lin.map) * to_dense(dphi);  // (n q) x d
    const auto q = static_cast<Index>(net.outputs().size());
    constexpr double h = 1e-6;
    for (Index i = 0; i < X.rows(); ++i) {
      const Eigen::VectorXd x = X.row(i);
      const RefState at = ref_state(net, theta, x.data());
      for (Index k = 0; k < net.num_edges(); ++k) {
        std::vector<double> tp = theta;
        std::vector<double> tm = theta;
        tp[static_cast<std::size_t>(k)] += h;
        tm[static_cast<std::size_t>(k)] -= h;
        const RefState plus = ref_state(net, tp, x.data());
        const RefState minus = ref_state(net, tm, x.data());
        if (plus.slope != at.slope || minus.slope != at.slope) {
          skipped += q;
          continue;
        }
        for (Index j = 0; j < q; ++j) {
          const auto js = static_cast<std::size_t>(j);
          const double fd = (plus.output[js] - minus.output[js]) /
                            (tp[static_cast<std::size_t>(k)] - tm[static_cast<std::size_t>(k)]);
          ASSERT_TRUE(close(fd, J(i * q + j, k), 1e-6))
              << where << " sample " << i << " output " << j << " edge " << k << ": fd " << fd
              << " L dPhi " << J(i * q + j, k);
          ++compared;
        }
      }
    }
  }
  EXPECT_GT(compared, 20000);
  EXPECT_LT(skipped, compared / 100);
}

TEST(Linearize, FeedForwardShapes) {
  const std::vector<std::string> shapes = {"ff:3,4,5,2", "ff:2,3,3,3,1", "ff-nobias:4,6,3",
                                           "ff:1,2,1"};
  for (const auto& name : shapes) {
    const Network net = builtin_network(name);
    for (std::uint64_t seed = 0; seed < 3; ++seed) {
      const std::vector<double> theta = normal_weights(net.num_edges(), seed);
      const Eigen::MatrixXd X = random_data(net, 16, seed + 100);
      const LinearizationCheck check = check_linearization(net, theta, X);
      EXPECT_EQ(check.status, LinearizationStatus::ok) << name << ": " << check.message;
      EXPECT_LE(check.max_err_f, 1e-10) << name;
      EXPECT_LE(check.max_err_grad, 1e-6) << name;
      EXPECT_EQ(check.P, static_cast<Index>(count_paths_total(net).value())) << name;
      const Linearization lin = linearize(net, theta, X);
      expect_valid_csr(lin.map, name);
      const Buffer<double> phi = path_lifting<double>(net, std::span<const double>(theta));
      expect_l_phi_is_f(lin.map, phi, lin.forward.outputs, 1e-10, name);
    }
  }
}

TEST(Linearize, InputOnAKinkIsReportedWithMarginZero) {
  const Network net = fig1();
  const std::vector<double> t = {1.0, 2.0, -1.0, 1.0, 1.0, 1.0, 0.5};
  Eigen::MatrixXd X(2, 2);
  X << 1.0, 0.25,  //
      0.5, 0.5;    // pre(d) = 0.5 - 0.5 = 0
  const LinearizationCheck check = check_linearization(net, t, X);
  EXPECT_EQ(check.margin, 0.0);
  EXPECT_EQ(check.status, LinearizationStatus::on_kink);
  EXPECT_EQ(to_string(check.status), "on_kink");
  EXPECT_NE(check.message.find("margin 0"), std::string::npos) << check.message;
  EXPECT_NE(check.message.find("node d"), std::string::npos) << check.message;
  EXPECT_LE(check.max_err_f, 1e-15);  // f = L Phi still holds at theta
  EXPECT_GT(check.grad_skipped, 0);   // theta_0, theta_2 move pre(d) off 0 on sample 1
  EXPECT_GT(check.grad_entries, 0);
  EXPECT_LE(check.max_err_grad, 1e-6);
}

TEST(Linearize, TinyMarginIsInconclusiveNotWrong) {
  const Network net = fig1();
  // pre(d) = 1 - (1 - 2^-52) = 2^-52 > 0: no step down to 2^-46 keeps d active.
  const std::vector<double> t = {1.0, 1.0, -(1.0 - 0x1.0p-52), 1.0, 1.0, 1.0, 1.0};
  const Eigen::MatrixXd X = Eigen::MatrixXd::Ones(1, 2);
  const LinearizationCheck check = check_linearization(net, t, X);
  EXPECT_EQ(check.margin, 0x1.0p-52);
  EXPECT_EQ(check.status, LinearizationStatus::inconclusive) << check.message;
  EXPECT_EQ(check.grad_skipped, 2);  // theta_0 and theta_2
  EXPECT_EQ(check.grad_entries, 5);
  EXPECT_LE(check.max_err_grad, 1e-6);
}

TEST(Linearize, BatchOfOneAndOfTenThousand) {
  const Network net = feed_forward(3, {4, 4}, 2);
  const std::vector<double> theta = normal_weights(net.num_edges(), 9);
  for (const Index n : {Index{1}, Index{10000}}) {
    const Eigen::MatrixXd X = random_data(net, n, 10);
    const Linearization lin = linearize(net, theta, X);
    EXPECT_EQ(lin.map.rows(), 2 * n);
    const Buffer<double> phi = path_lifting<double>(net, std::span<const double>(theta));
    expect_l_phi_is_f(lin.map, phi, lin.forward.outputs, 1e-10, "n = " + std::to_string(n));
    const LinearizationCheck check = check_linearization(net, theta, X);
    EXPECT_EQ(check.status, LinearizationStatus::ok) << check.message;
    EXPECT_EQ(check.n, n);
  }
  // n = 0: an empty map with the right number of columns.
  const Linearization none = linearize(net, theta, Eigen::MatrixXd(0, 3));
  EXPECT_EQ(none.map.rows(), 0);
  EXPECT_EQ(none.map.nnz(), 0);
  EXPECT_EQ(none.map.cols(), static_cast<Index>(count_paths_total(net).value()));
}

TEST(Linearize, ThreadCountDoesNotChangeL) {
  const Network net = with_random_activations(random_dag(12, 0.5, 77), 77);
  const std::vector<double> theta = normal_weights(net.num_edges(), 1);
  const Eigen::MatrixXd X = data_with_zeros(net, 300, 2);
  const Linearization a = linearize(net, theta, X, testing::with_threads(1));
  const Linearization b = linearize(net, theta, X, testing::with_threads(3));
  EXPECT_TRUE(std::equal(a.map.pattern.offsets().begin(), a.map.pattern.offsets().end(),
                         b.map.pattern.offsets().begin(), b.map.pattern.offsets().end()));
  EXPECT_TRUE(std::equal(a.map.pattern.indices().begin(), a.map.pattern.indices().end(),
                         b.map.pattern.indices().begin(), b.map.pattern.indices().end()));
  EXPECT_TRUE(a.map.values == b.map.values);
}

TEST(Linearize, VerificationDetectsWrongMaps) {
  const Network net = feed_forward(3, {5, 4}, 2);
  const std::vector<double> theta = normal_weights(net.num_edges(), 2);
  const Eigen::MatrixXd X = random_data(net, 12, 3);
  const Linearization lin = linearize(net, theta, X);
  const Buffer<double> phi = path_lifting<double>(net, std::span<const double>(theta));
  const CsrMatrix<double> dphi = jacobian<double>(net, std::span<const double>(theta));
  ASSERT_EQ(verify_linearization(net, theta, X, lin, phi, dphi).status, LinearizationStatus::ok);

  Linearization bad_l = lin;
  bad_l.map.values[bad_l.map.values.size() / 2] *= 1.5;
  const LinearizationCheck f_fails = verify_linearization(net, theta, X, bad_l, phi, dphi);
  EXPECT_EQ(f_fails.status, LinearizationStatus::mismatch);
  EXPECT_GT(f_fails.max_err_f, 1e-6);
  EXPECT_NE(f_fails.message.find("f = L Phi"), std::string::npos) << f_fails.message;

  CsrMatrix<double> bad_dphi = dphi;
  for (double& v : bad_dphi.values) {
    v *= 1.001;
  }
  const LinearizationCheck g_fails = verify_linearization(net, theta, X, lin, phi, bad_dphi);
  EXPECT_EQ(g_fails.status, LinearizationStatus::mismatch);
  EXPECT_LE(g_fails.max_err_f, 1e-10);
  EXPECT_GT(g_fails.max_err_grad, 1e-4);
  EXPECT_NE(g_fails.message.find("L dPhi"), std::string::npos) << g_fails.message;

  EXPECT_THROW(
      (void)verify_linearization(net, theta, X, lin, std::span<const double>(phi).first(3), dphi),
      std::invalid_argument);
}

TEST(Linearize, UnderflowedEntriesAreNotStored) {
  // x -> h1 -> h2 -> y and x -> y; h1, h2 leaky with slope 1e-200, both on their negative
  // side: c_p x = 1e-400 underflows to 0 for the long path.
  NetworkSpec spec;
  spec.node_names = {"x", "h1", "h2", "y"};
  spec.edges = {{0, 1}, {1, 2}, {2, 3}, {0, 3}};
  spec.activations = {{1, Activation::leaky_relu(1e-200)}, {2, Activation::leaky_relu(1e-200)}};
  const Network net(std::move(spec));
  const std::vector<double> theta = {-1.0, 1.0, 1.0, 2.0};
  const Eigen::MatrixXd X = Eigen::MatrixXd::Ones(3, 1);
  const Linearization lin = linearize(net, theta, X);
  EXPECT_EQ(lin.pattern.slopes(0, 2), 1e-200);
  expect_valid_csr(lin.map, "underflow");
  EXPECT_EQ(lin.map.nnz(), 3);  // only x -> y (path 1) on each sample
  EXPECT_EQ(lin.map.values.size(), 3U);
  for (Index r = 0; r < 3; ++r) {
    EXPECT_EQ(lin.map.pattern.row(r).size(), 1U);
    EXPECT_EQ(lin.map.pattern.row(r)[0], 1);
  }
  const LinearizationCheck check = check_linearization(net, theta, X);
  EXPECT_LE(check.max_err_f, 1e-15);
}

TEST(Linearize, RefusesWhatDoesNotFit) {
  const Network net = feed_forward(3, {4, 4}, 2);
  const std::vector<double> theta = normal_weights(net.num_edges(), 1);
  const Eigen::MatrixXd X = random_data(net, 50, 1);
  const Linearization lin = linearize(net, theta, X);
  EngineOptions tiny;
  tiny.max_memory = 2048;  // the offsets fit, the entries do not
  try {
    (void)linear_map(net, X, lin.pattern, tiny);
    FAIL() << "no TooLarge";
  } catch (const TooLarge& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("nnz = " + std::to_string(lin.map.nnz())), std::string::npos) << what;
    EXPECT_NE(what.find("memory limit"), std::string::npos) << what;
  }
  EXPECT_THROW((void)linear_map(net, X.leftCols(2), lin.pattern), FormatError);
  EXPECT_THROW((void)linear_map(net, X.topRows(3), lin.pattern), std::invalid_argument);
}

TEST(Linearize, StatusNamesAndJsonForm) {
  for (const auto s : {LinearizationStatus::ok, LinearizationStatus::inconclusive,
                       LinearizationStatus::on_kink, LinearizationStatus::mismatch}) {
    EXPECT_EQ(parse_linearization_status(to_string(s)), s) << to_string(s);
  }
  EXPECT_EQ(
      testing::error_of<std::invalid_argument>([] { (void)parse_linearization_status("fine"); }),
      "unknown linearization status 'fine': expected ok, inconclusive, on_kink or mismatch");

  // The schema of `pathlift linearize --json`: keys in order, null for what is not finite.
  const LinearizationCheck c{.n = 4,
                             .q = 1,
                             .P = 5,
                             .nnz_L = 12,
                             .max_err_f = 0.25,
                             .status = LinearizationStatus::inconclusive,
                             .message = {}};
  EXPECT_EQ(to_json(c, -1), R"({"n":4,"q":1,"P":5,"nnz_L":12,"margin":null,"max_err_f":0.25,)"
                            R"("max_err_grad":null,"status":"inconclusive"})");
  const Network net = fig1();
  const std::vector<double> theta{0.5, -1.0, 2.0, 0.25, 1.5, -0.5, 3.0};
  const Eigen::MatrixXd X{{1.0, 2.0}, {-1.0, 0.5}, {2.0, -4.0}, {0.0, 3.0}};
  const LinearizationCheck fig = check_linearization(net, theta, X);
  EXPECT_EQ(to_json(fig, -1), R"({"n":4,"q":1,"P":5,"nnz_L":12,"margin":0.5,"max_err_f":0.0,)"
                              R"("max_err_grad":0.0,"status":"ok"})");
  EXPECT_TRUE(testing::contains(to_json(fig), "\n  \"status\": \"ok\"\n}"));
}

}  // namespace
}  // namespace pathlift
