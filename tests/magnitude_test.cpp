// magnitude.hpp against brute force: the range of |Phi_p| and of dPhi's entries by DP equals
// the extremes over the enumerated paths, and the sign and log10 forms equal Phi and dPhi
// where those are in range.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "pathlift/builtins.hpp"
#include "pathlift/checks.hpp"
#include "pathlift/error.hpp"
#include "pathlift/lifting.hpp"
#include "pathlift/magnitude.hpp"
#include "pathlift/paths.hpp"

namespace pathlift {
namespace {

std::vector<double> weights(Index d, std::uint64_t seed, double scale, bool zeros) {
  std::vector<double> t(static_cast<std::size_t>(d));
  std::uint64_t s = seed;
  for (auto& x : t) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    const double u = static_cast<double>(s >> 11) / 9007199254740992.0;  // [0, 1)
    x = (u < 0.5 ? -1 : 1) * (0.5 + u) * scale;
    if (zeros && (s >> 7) % 9 == 0) {
      x = 0;
    }
  }
  return t;
}

struct Brute {
  LogRange phi, jacobian;
};

/// The extremes over the enumerated paths and their entries, in long double logs.
Brute brute(const Network& net, const std::vector<double>& theta) {
  const PathSet paths = enumerate_paths(net);
  Brute b;
  auto add = [](LogRange& r, double x) {
    r.min_log10 = std::min(r.min_log10, x);
    r.max_log10 = std::max(r.max_log10, x);
  };
  for (Index p = 0; p < paths.size(); ++p) {
    const auto edges = paths.path(p);
    for (std::size_t skip = 0; skip <= edges.size(); ++skip) {  // edges.size(): none skipped
      double s = 0;
      bool zero = false;
      for (std::size_t i = 0; i < edges.size(); ++i) {
        if (i == skip) {
          continue;
        }
        const double w = theta[static_cast<std::size_t>(edges[i])];
        zero = zero || w == 0;
        s += std::log10(std::abs(w));
      }
      if (!zero) {
        add(skip == edges.size() ? b.phi : b.jacobian, s);
      }
    }
  }
  return b;
}

TEST(Magnitude, RangeByDpEqualsTheExtremesOverThePaths) {
  for (const bool zeros : {false, true}) {
    for (std::uint64_t seed = 1; seed <= 6; ++seed) {
      const Network net = random_dag(12, 0.4, seed);
      const auto theta = weights(net.num_edges(), seed, 1e-30, zeros);
      const LiftingRange r = lifting_range(net, theta);
      const Brute b = brute(net, theta);
      EXPECT_NEAR(r.phi.min_log10, b.phi.min_log10, 1e-9) << seed;
      EXPECT_NEAR(r.phi.max_log10, b.phi.max_log10, 1e-9) << seed;
      EXPECT_NEAR(r.jacobian.min_log10, b.jacobian.min_log10, 1e-9) << seed;
      EXPECT_NEAR(r.jacobian.max_log10, b.jacobian.max_log10, 1e-9) << seed;
    }
  }
}

TEST(Magnitude, LogFormsEqualPhiAndDPhiInRangeAndGoBeyond) {
  const Network net = feed_forward(3, {4, 4, 4}, 2, true);
  for (const double scale : {1.0, 1e-200, 1e200}) {
    const auto theta = weights(net.num_edges(), 3, scale, true);
    const SignedLog10 lp = log_path_lifting(net, theta);
    const LogJacobian lj = log_jacobian(net, theta);
    if (scale == 1.0) {
      const Buffer<double> phi = path_lifting<double>(net, std::span<const double>(theta));
      const CsrMatrix<double> j = jacobian<double>(net, std::span<const double>(theta));
      ASSERT_EQ(phi.size(), lp.sign.size());
      for (std::size_t p = 0; p < phi.size(); ++p) {
        EXPECT_NEAR(lp.sign[p] * std::pow(10.0, lp.log10[p]), phi[p], 1e-13 * std::abs(phi[p]));
      }
      ASSERT_EQ(j.values.size(), lj.values.sign.size());
      EXPECT_EQ(*j.pattern.col_indices, *lj.pattern.col_indices);
      for (std::size_t k = 0; k < j.values.size(); ++k) {
        EXPECT_NEAR(lj.values.sign[k] * std::pow(10.0, lj.values.log10[k]), j.values[k],
                    1e-13 * std::abs(j.values[k]));
      }
      EXPECT_TRUE(lifting_range(net, theta).fits_all<double>());
    } else {
      // Out of float64: refused, while the logs are the DP's range.
      const LiftingRange r = lifting_range(net, theta);
      EXPECT_FALSE(r.fits_all<double>());
      EXPECT_THROW(require_fits<double>(r, false, "Phi"), RangeError);
      double lo = std::numeric_limits<double>::infinity();
      double hi = -lo;
      for (std::size_t p = 0; p < lp.sign.size(); ++p) {
        if (lp.sign[p] != 0) {
          lo = std::min(lo, lp.log10[p]);
          hi = std::max(hi, lp.log10[p]);
        }
      }
      EXPECT_NEAR(lo, r.phi.min_log10, 1e-9);
      EXPECT_NEAR(hi, r.phi.max_log10, 1e-9);
    }
  }
}

TEST(Magnitude, ChecksBeyondFloat64AreOutOfRangeNeverPassed) {
  const Network net = feed_forward(2, {3, 3, 3, 3}, 1, false);
  const auto theta = weights(net.num_edges(), 5, 1e-100, false);  // Phi ~ 1e-500
  const auto results = check_identities(net, theta);
  EXPECT_FALSE(all_passed(results));
  EXPECT_TRUE(any_out_of_range(results));
  for (const auto& r : results) {
    EXPECT_EQ(r.status, r.name == "corollary1" ? CheckStatus::passed : CheckStatus::out_of_range)
        << r.name;
  }
}

TEST(Magnitude, APrefixBeyondFloat64CountsWhereEverySuffixHoldsZeros) {
  // in -> h1 -> h2 -> h3 -> out: the prefix at h2 is 1e400 (inf in float64), and both edges
  // after it are zero, so Phi and every entry of dPhi are 0; the engine would still form
  // inf x 0 = NaN.
  const Network net = feed_forward(1, {1, 1, 1}, 1, false);
  const std::vector<double> theta = {1e200, 1e200, 0.0, 0.0};
  const LiftingRange r = lifting_range(net, theta);
  EXPECT_TRUE(r.phi.empty());
  EXPECT_TRUE(r.jacobian.empty());
  EXPECT_NEAR(r.partial.max_log10, 400.0, 1e-9);
  EXPECT_FALSE(r.fits_all<double>());
  for (const auto& c : check_identities(net, theta)) {
    EXPECT_NE(c.status, CheckStatus::failed) << c.name;
  }
}

}  // namespace
}  // namespace pathlift
