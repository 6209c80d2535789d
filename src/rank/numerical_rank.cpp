#include "pathlift/numerical_rank.hpp"

#include <lapacke.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "pathlift/limits.hpp"
#include "src/core/enum_names.hpp"

namespace pathlift {

namespace {
// The first name of each value is the one to_string gives; the others are the CLI's and
// Python's spellings.
constexpr std::array k_numerical_method_names{
    detail::EnumName<NumericalRankMethod>{NumericalRankMethod::automatic, "automatic"},
    detail::EnumName<NumericalRankMethod>{NumericalRankMethod::automatic, "auto"},
    detail::EnumName<NumericalRankMethod>{NumericalRankMethod::svd, "svd"},
    detail::EnumName<NumericalRankMethod>{NumericalRankMethod::gram_eigenvalues,
                                          "gram_eigenvalues"},
    detail::EnumName<NumericalRankMethod>{NumericalRankMethod::gram_eigenvalues, "eig"}};

constexpr std::array k_numerical_status_names{
    detail::EnumName<NumericalRankStatus>{NumericalRankStatus::conclusive, "conclusive"},
    detail::EnumName<NumericalRankStatus>{NumericalRankStatus::inconclusive, "inconclusive"},
    detail::EnumName<NumericalRankStatus>{NumericalRankStatus::failed, "failed"}};
}  // namespace

std::string_view to_string(NumericalRankMethod method) {
  return detail::enum_name(k_numerical_method_names, method);
}

std::string_view to_string(NumericalRankStatus status) {
  return detail::enum_name(k_numerical_status_names, status);
}

NumericalRankMethod parse_numerical_rank_method(std::string_view name) {
  return detail::parse_enum(k_numerical_method_names, name, "numerical rank method");
}

NumericalRankStatus parse_numerical_rank_status(std::string_view name) {
  return detail::parse_enum(k_numerical_status_names, name, "numerical rank status");
}

double NumericalRank::sigma(Index k) const {
  if (k < 1 || k > static_cast<Index>(singular_values.size())) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  return singular_values[static_cast<std::size_t>(k - 1)];
}

namespace {

NumericalRankMethod resolve(Index p, Index d, const NumericalRankOptions& options) {
  if (options.method != NumericalRankMethod::automatic) {
    return options.method;
  }
  return static_cast<double>(p) * static_cast<double>(d) <=
                 static_cast<double>(options.svd_max_entries)
             ? NumericalRankMethod::svd
             : NumericalRankMethod::gram_eigenvalues;
}

/// Rank, gap and status from descending singular values and a tolerance.
void classify(NumericalRank& nr, double min_gap) {
  const auto& s = nr.singular_values;
  nr.non_finite = static_cast<Index>(
      std::count_if(s.begin(), s.end(), [](double x) { return !std::isfinite(x); }));
  if (nr.non_finite > 0 || !std::isfinite(nr.tolerance)) {
    nr.rank = 0;
    nr.gap = std::numeric_limits<double>::quiet_NaN();
    nr.status = NumericalRankStatus::failed;
    return;
  }
  const double tol = nr.tolerance;
  Index r = 0;
  while (r < static_cast<Index>(s.size()) && s[static_cast<std::size_t>(r)] > tol) {
    ++r;
  }
  nr.rank = r;
  const double inf = std::numeric_limits<double>::infinity();
  const double last_kept = r > 0 ? s[static_cast<std::size_t>(r - 1)] : 0.0;
  const double first_dropped =
      r < static_cast<Index>(s.size()) ? s[static_cast<std::size_t>(r)] : 0.0;
  const double kept_margin = r > 0 ? last_kept / tol : inf;
  if (r == 0) {
    nr.gap = first_dropped == 0 ? inf : 0.0;  // the zero matrix has rank 0 exactly
  } else if (first_dropped > 0) {
    nr.gap = last_kept / first_dropped;
  } else {
    nr.gap = kept_margin;
  }
  nr.status =
      nr.gap < min_gap ? NumericalRankStatus::inconclusive : NumericalRankStatus::conclusive;
}

/// Singular values of a dense column-major matrix by LAPACK's dgesvd (no vectors: bidiagonal
/// QR iteration, dbdsqr), overwriting `a`. NaN when LAPACK reports a failure.
std::vector<double> lapack_singular_values(Eigen::MatrixXd& a) {
  const auto rows = static_cast<lapack_int>(a.rows());
  const auto cols = static_cast<lapack_int>(a.cols());
  const auto n = static_cast<std::size_t>(std::min(rows, cols));
  if (!a.allFinite()) {
    return std::vector<double>(n, std::numeric_limits<double>::quiet_NaN());
  }
  std::vector<double> superb(n > 0 ? n : 1, 0.0);
  std::vector<double> s(n, 0.0);
  double unused = 0;
  const lapack_int info = LAPACKE_dgesvd(LAPACK_COL_MAJOR, 'N', 'N', rows, cols, a.data(),
                                         std::max<lapack_int>(rows, 1), s.data(), &unused, 1,
                                         &unused, 1, superb.data());
  if (info != 0) {
    std::fill(s.begin(), s.end(), std::numeric_limits<double>::quiet_NaN());
  }
  return s;
}

}  // namespace

double numerical_rank_flops(Index p, Index d, Index nnz, const NumericalRankOptions& options) {
  const double dp = static_cast<double>(p);
  const double dd = static_cast<double>(d);
  if (resolve(p, d, options) == NumericalRankMethod::svd) {
    return 2 * dp * dd * std::min(dp, dd) + 6 * dd * dd * dd;
  }
  const double per_row = p > 0 ? static_cast<double>(nnz) / dp : 0.0;
  return dp * per_row * per_row + 4 * dd * dd * dd;
}

NumericalRank numerical_rank(const CsrMatrix<double>& j, const NumericalRankOptions& options) {
  const Index p = j.rows();
  const Index d = j.cols();
  const Index n = std::min(p, d);
  NumericalRank nr;
  nr.method = resolve(p, d, options);
  const double eps = std::numeric_limits<double>::epsilon();
  const double size = static_cast<double>(std::max(p, d));
  if (n == 0) {
    nr.tolerance = 0;
    classify(nr, options.min_gap);
    return nr;
  }
  if (nr.method == NumericalRankMethod::svd) {
    require_dense(p, d, sizeof(double), options.engine.max_memory, "the SVD of dPhi");
    Eigen::MatrixXd a = to_dense(j, options.engine);
    if (p > 2 * d) {
      // A tall matrix has the singular values of its d x d factor R (A = QR): cheaper SVD.
      Eigen::HouseholderQR<Eigen::Ref<Eigen::MatrixXd>> qr(a);
      a = Eigen::MatrixXd(qr.matrixQR().topRows(d).triangularView<Eigen::Upper>());
    }
    nr.singular_values = lapack_singular_values(a);
    const double smax = nr.singular_values.front();
    nr.tolerance = options.tolerance > 0 ? options.tolerance : size * eps * smax;
  } else {
    require_dense(d, d, sizeof(double), options.engine.max_memory, "dPhi^T dPhi");
    Eigen::MatrixXd k = Eigen::MatrixXd::Zero(d, d);
    const auto offsets = j.pattern.offsets();
    const auto cols = j.pattern.indices();
    for (Index r = 0; r < p; ++r) {
      const auto b = static_cast<std::size_t>(offsets[static_cast<std::size_t>(r)]);
      const auto e = static_cast<std::size_t>(offsets[static_cast<std::size_t>(r) + 1]);
      for (std::size_t x = b; x < e; ++x) {
        const double vx = j.values[x];
        for (std::size_t y = b; y <= x; ++y) {
          // Column indices increase within a row: (cols[x], cols[y]) is in the lower triangle.
          k(cols[x], cols[y]) += vx * j.values[y];
        }
      }
    }
    nr.singular_values.assign(static_cast<std::size_t>(n),
                              std::numeric_limits<double>::quiet_NaN());
    if (k.allFinite()) {
      Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(k, Eigen::EigenvaluesOnly);
      if (eig.info() == Eigen::Success) {
        const auto& ev = eig.eigenvalues();  // ascending
        for (Index i = 0; i < n; ++i) {
          nr.singular_values[static_cast<std::size_t>(i)] = std::sqrt(std::max(0.0, ev(d - 1 - i)));
        }
      }
    }
    const double smax = nr.singular_values.front();
    nr.tolerance = options.tolerance > 0 ? options.tolerance
                                         : 10 * std::sqrt(static_cast<double>(d) * eps) * smax;
  }
  classify(nr, options.min_gap);
  return nr;
}

NumericalRank numerical_rank(Eigen::MatrixXd a, const NumericalRankOptions& options) {
  NumericalRank nr;
  nr.method = NumericalRankMethod::svd;
  const double size = static_cast<double>(std::max(a.rows(), a.cols()));
  if (a.rows() == 0 || a.cols() == 0) {
    classify(nr, options.min_gap);
    return nr;
  }
  nr.singular_values = lapack_singular_values(a);
  nr.tolerance = options.tolerance > 0
                     ? options.tolerance
                     : size * std::numeric_limits<double>::epsilon() * nr.singular_values.front();
  classify(nr, options.min_gap);
  return nr;
}

}  // namespace pathlift
