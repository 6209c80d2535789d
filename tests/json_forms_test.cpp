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
#include "pathlift/path_metric.hpp"

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

}  // namespace
}  // namespace pathlift
