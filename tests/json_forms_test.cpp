// The library's JSON forms of its results (to_json: one schema home, which the CLI prints):
// each key holds what the result holds, a number beyond double's range is null with its log10
// beside it, and a count beyond 64 bits is its double.

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pathlift/balance.hpp"
#include "pathlift/builtins.hpp"
#include "pathlift/checks.hpp"
#include "pathlift/counting.hpp"
#include "pathlift/model.hpp"
#include "pathlift/norms.hpp"
#include "pathlift/path_metric.hpp"
#include "pathlift/proof.hpp"
#include "pathlift/summary.hpp"
#include "pathlift/symmetry.hpp"
#include "tests/layer_zoo.hpp"

namespace pathlift {
namespace {

using Json = nlohmann::json;

TEST(JsonForms, PathCountsHoldTheCountsAndTheHistogram) {
  const Network net = feed_forward(3, {4, 5}, 2);
  const PathCounts c = count_paths(net);
  const Json j = Json::parse(to_json(c));
  // 3 inputs and a bias into 4, (4 + bias) into 5, (5 + bias) into 2: paths of length 3 from
  // the inputs, 2 from the first bias, 1 from the second.
  EXPECT_EQ(j["P"].get<std::uint64_t>(), c.paths.value());
  EXPECT_EQ(j["P"].get<std::uint64_t>(), 3u * 4 * 5 * 2 + 4 * 5 * 2 + 5 * 2 + 2);
  EXPECT_TRUE(j["P_exact"].get<bool>());
  EXPECT_NEAR(j["log10_P"].get<double>(), std::log10(static_cast<double>(c.paths.value())), 1e-12);
  EXPECT_EQ(j["nnz"].get<std::uint64_t>(), c.nnz.value());
  EXPECT_EQ(j["max_path_length"].get<int>(), 3);
  std::uint64_t total = 0;
  std::uint64_t edges = 0;
  for (const auto& [length, count] : j["length_histogram"].items()) {
    total += count.get<std::uint64_t>();
    edges += std::stoull(length) * count.get<std::uint64_t>();
  }
  EXPECT_EQ(total, c.paths.value());  // the histogram sums to P
  EXPECT_EQ(edges, c.nnz.value());    // and its first moment to nnz(B)
  EXPECT_FALSE(j.contains("length_histogram_refused"));
}

TEST(JsonForms, ABeyondDoubleMetricIsNullWithItsLog10) {
  PathMetric m;
  m.value = ScaledReal{0.75, 5000};  // 0.75 * 2^5000
  m.exact = true;
  const Json j = Json::parse(to_json(m));
  EXPECT_TRUE(j["metric"].is_null());
  EXPECT_NEAR(j["log10_metric"].get<double>(), std::log10(0.75) + 5000 * std::log10(2.0), 1e-9);
  EXPECT_TRUE(j["exact"].get<bool>());
  LipschitzBound b;
  b.constant = ScaledReal::from_double(2.5);
  b.sign_changes = 3;
  const Json k = Json::parse(to_json(b));
  EXPECT_EQ(k["lipschitz_constant"].get<double>(), 2.5);
  EXPECT_NEAR(k["log10_lipschitz_constant"].get<double>(), std::log10(2.5), 1e-15);
  EXPECT_FALSE(k["lipschitz_exact"].get<bool>());
  EXPECT_EQ(k["sign_changes"].get<int>(), 3);
}

TEST(JsonForms, BalanceAndChecksHoldTheirFields) {
  BalanceReport r;
  r.classes = 7;
  r.sweeps = 12;
  r.converged = true;
  r.criterion_before = 3.5;
  r.criterion_after = 1.25;
  r.stationarity = 1e-11;
  r.theta = {1, 2, 3};
  const Json j = Json::parse(to_json(r));
  EXPECT_EQ(j, Json::parse(R"({"classes": 7, "sweeps": 12, "converged": true,
      "criterion_before": 3.5, "criterion_after": 1.25, "stationarity": 1e-11})"));
  std::vector<CheckResult> checks(2);
  checks[0].name = "lemma1";
  checks[0].max_error = 1e-16;
  checks[1].name = "proposition2";
  checks[1].passed = false;
  checks[1].status = CheckStatus::failed;
  checks[1].max_error = std::nan("");
  const Json c = Json::parse(to_json(checks));
  ASSERT_EQ(c["checks"].size(), 2u);
  EXPECT_EQ(c["checks"][0]["name"], "lemma1");
  EXPECT_EQ(c["checks"][1]["status"], std::string(to_string(CheckStatus::failed)));
  EXPECT_TRUE(c["checks"][1]["max_error"].is_null());  // NaN: null
  EXPECT_FALSE(c["passed"].get<bool>());
}

TEST(JsonForms, ASummaryOfALayerGraphIsThatOfItsUnrolledNetwork) {
  // Counted without unrolling, then checked against the unrolled DAG's own summary.
  const Model cnn(testing::zoo_cnn());
  const ModelSummary s = summarise(cnn);
  const Model dag(*cnn.unrolled());
  const ModelSummary u = summarise(dag);
  const Json j = Json::parse(to_json(s));
  const Json k = Json::parse(to_json(u));
  EXPECT_EQ(j["layers"].get<Index>(), static_cast<Index>(cnn.layer_graph()->layers.size()));
  EXPECT_FALSE(k.contains("layers"));
  for (const char* key : {"nodes", "inputs", "bias", "hidden", "outputs", "d", "edges", "h",
                          "h_sym", "d_minus_h_sym", "P", "nnz", "max_path_length"}) {
    EXPECT_EQ(j[key], k[key]) << key;
  }
  const Network& net = *cnn.unrolled();
  EXPECT_EQ(k["nodes"].get<Index>(), net.num_nodes());
  EXPECT_EQ(k["bias"].get<Index>(), static_cast<Index>(net.bias_nodes().size()));
  EXPECT_EQ(k["hidden"].get<Index>(), net.num_hidden());
  EXPECT_EQ(k["h_sym"].get<Index>(), rescaling_symmetry_dimension(net).h_sym);
  EXPECT_EQ(k["d_minus_h_sym"].get<Index>(), net.num_params() - k["h_sym"].get<Index>());
  // Shared convolution weights: d - h is not Theorem 1's rank here.
  EXPECT_TRUE(j["d_minus_h"].is_null());
  EXPECT_EQ(j["P"].get<std::uint64_t>(), count_paths(net).paths.value());
  EXPECT_TRUE(j["warnings"].empty());
}

TEST(JsonForms, ASummaryWithOneParameterPerEdgeGivesTheoremOnesRank) {
  const Network net = feed_forward(3, {4, 5}, 2);
  const Json j = Json::parse(to_json(summarise(Model(net))));
  // Hidden nodes 4 + 5; d = (3 + 1) 4 + (4 + 1) 5 + (5 + 1) 2 edges.
  EXPECT_EQ(j["h"].get<Index>(), 9);
  EXPECT_EQ(j["d"].get<Index>(), 4 * 4 + 5 * 5 + 6 * 2);
  EXPECT_EQ(j["d_minus_h"].get<Index>(), 4 * 4 + 5 * 5 + 6 * 2 - 9);
  EXPECT_EQ(j["h_sym"].get<Index>(), 9);  // with one parameter per edge h_sym = h
  // An MLP layer graph has as many edges as parameters, and is unrolled to tell.
  const Json m = Json::parse(to_json(summarise(Model(testing::zoo_mlp()))));
  EXPECT_EQ(m["d_minus_h"].get<Index>(), m["d"].get<Index>() - m["h"].get<Index>());
}

TEST(JsonForms, NormsAreKeyedByTheirExponentWithTheNodesNamed) {
  const Network net = feed_forward(2, {3}, 2);
  const std::vector<double> theta = normal_weights(net.num_params(), 7);
  std::vector<PathNorm> norms;
  for (const double s : {1.0, 0.5, std::numeric_limits<double>::infinity()}) {
    norms.push_back(path_norm(net, theta, s, PathNormDetail::inputs_and_outputs));
  }
  std::vector<std::string> outs;
  for (const NodeId v : net.outputs()) {
    outs.push_back(net.node_name(v));
  }
  std::vector<std::string> ins;
  for (const NodeId v : net.inputs()) {
    ins.push_back(net.node_name(v));
  }
  const Json j = Json::parse(to_json(norms, outs, ins));
  // The L1 norm is the sum over paths of |Phi_p|: sum over outputs of |w2| (sum of |w1| + 1).
  EXPECT_DOUBLE_EQ(j["norms"]["1"].get<double>(), norms[0].norm.value());
  EXPECT_DOUBLE_EQ(j["norms"]["0.5"].get<double>(), norms[1].norm.value());
  EXPECT_DOUBLE_EQ(j["norms"]["inf"].get<double>(), norms[2].norm.value());
  EXPECT_NEAR(j["log10_norms"]["1"].get<double>(), std::log10(norms[0].norm.value()), 1e-14);
  double sum = 0;  // per output, the L1 norms add up to the total
  for (const std::string& o : outs) {
    sum += std::pow(10.0, j["log10_per_output"]["1"][o].get<double>());
  }
  EXPECT_NEAR(sum, norms[0].norm.value(), 1e-12 * sum);
  EXPECT_EQ(j["log10_per_input"]["1"].size(), ins.size());
  // Without names the nodes are their indices; names of the wrong count are refused.
  const Json k = Json::parse(to_json(norms));
  EXPECT_EQ(k["log10_per_output"]["1"]["0"], j["log10_per_output"]["1"][outs[0]]);
  EXPECT_THROW((void)to_json(norms, std::vector<std::string>{"y"}), std::invalid_argument);
  // Norms without their parts have no per-node keys.
  const Json t = Json::parse(to_json(std::vector<PathNorm>{path_norm(net, theta, 2.0)}, {}, {}));
  EXPECT_FALSE(t.contains("log10_per_input"));
}

TEST(JsonForms, AProofCertificateHoldsEachStepAndItsMatrices) {
  // The paper's sketch with h = 1: one induction step, then the base case; rank 5 = d - h.
  ProveOptions keep;
  keep.keep_matrices = true;
  const ProofCertificate cert = prove_rank(sketch_h1(), keep);
  ASSERT_TRUE(cert.proved());
  const Json j = Json::parse(to_json(cert));
  EXPECT_TRUE(j["proved"].get<bool>());
  EXPECT_EQ(j["rank"].get<Index>(), cert.d - cert.h);
  EXPECT_EQ(j["expected"].get<Index>(), cert.d - cert.h);
  ASSERT_EQ(j["steps"].size(), cert.steps.size());
  EXPECT_EQ(j["steps"][0]["kind"], "induction");
  EXPECT_EQ(j["steps"].back()["kind"], "base");
  EXPECT_EQ(j["steps"][0]["u"], cert.steps[0].network.node_name(cert.steps[0].u));
  EXPECT_TRUE(j["failure"].is_null());
  // Each kept matrix in print order: entry (i, j) is B[row_order[i], col_order[j]].
  const ProofMatrix& m = cert.steps[0].matrices[0];
  const Json& mj = j["steps"][0]["matrices"][m.name];
  const auto dense = displayed(m);
  ASSERT_EQ(mj["data"].size(), static_cast<std::size_t>(dense.rows()));
  for (Index r = 0; r < dense.rows(); ++r) {
    for (Index c = 0; c < dense.cols(); ++c) {
      EXPECT_EQ(mj["data"][r][c].get<std::int64_t>(), dense(r, c));
    }
  }
  // Without the matrices kept, no step has a "matrices" key.
  const Json k = Json::parse(to_json(prove_rank(sketch_h1())));
  EXPECT_FALSE(k["steps"][0].contains("matrices"));
  EXPECT_EQ(k["steps"].size(), j["steps"].size());
}

}  // namespace
}  // namespace pathlift
