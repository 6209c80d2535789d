#pragma once
/// \file numerical_rank.hpp
/// The numerical rank of dPhi at theta from its singular values: a floating-point outcome with
/// the tolerance, the gap at the cut and a status, never a proof (certificate.hpp has the exact
/// ranks). Singular values that are not finite make the computation `failed`; they are never
/// counted.

#include <Eigen/Core>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "pathlift/options.hpp"
#include "pathlift/sparse.hpp"
#include "pathlift/types.hpp"

namespace pathlift {

enum class NumericalRankMethod : std::uint8_t {
  automatic,        ///< svd when the dense P x d matrix is affordable, else gram_eigenvalues
  svd,              ///< dense SVD of dPhi (Householder QR, then LAPACK dgesvd on R)
  gram_eigenvalues  ///< eigenvalues of dPhi^T dPhi (d x d), sigma = sqrt(lambda)
};

enum class NumericalRankStatus : std::uint8_t {
  conclusive,    ///< gap >= min_gap: the cut is clear
  inconclusive,  ///< gap < min_gap: the rank depends on where the tolerance is put
  failed,        ///< a singular value is not finite (e.g. dPhi has inf entries): no rank
};

std::string_view to_string(NumericalRankMethod method);
std::string_view to_string(NumericalRankStatus status);
/// The value named `name`: a to_string name, or "auto", "eig" for the methods. Throws
/// std::invalid_argument naming `name` and listing the valid names otherwise.
NumericalRankMethod parse_numerical_rank_method(std::string_view name);
NumericalRankStatus parse_numerical_rank_status(std::string_view name);

struct NumericalRankOptions {
  NumericalRankMethod method = NumericalRankMethod::automatic;
  /// Absolute tolerance on the singular values; <= 0 = the default: for svd
  /// max(P, d) * eps * sigma_max (numpy's matrix_rank); for gram_eigenvalues
  /// 10 sqrt(d * eps) * sigma_max, i.e. 100 d eps lambda_max on the eigenvalues of
  /// dPhi^T dPhi, whose computed zero eigenvalues come out at about eps * lambda_max.
  double tolerance = 0;
  /// The status is inconclusive when the gap (see NumericalRank::gap) is below this.
  double min_gap = 1e3;
  /// automatic uses svd when P * d <= this many entries, else gram_eigenvalues.
  Index svd_max_entries = Index{1} << 18;
  /// The memory limit of the dense work (threads and progress are not used).
  EngineOptions engine;
  /// Whether check_rank_theorem() computes the numerical rank: automatic skips it when its
  /// estimated work exceeds `automatic_max_flops` (the exact ranks are certified anyway).
  enum class When : std::uint8_t { automatic, always, never } when = When::automatic;
  /// About 10 s on one core of a 2020s machine.
  double automatic_max_flops = 3e10;
};

/// The floating-point operations numerical_rank() needs for a P x d matrix with `nnz` stored
/// entries (the method resolved as `automatic` would): svd 2 P d^2 + 6 d^3, gram_eigenvalues
/// nnz^2 / P + 4 d^3 (an estimate, for deciding to skip it).
double numerical_rank_flops(Index p, Index d, Index nnz, const NumericalRankOptions& options = {});

/// The numerical rank of a matrix (dPhi) from its singular values.
struct NumericalRank {
  Index rank = 0;        ///< singular values above the tolerance; 0 when failed
  double tolerance = 0;  ///< singular values > tolerance are kept
  /// sigma_rank / sigma_{rank+1}: the last kept singular value over the first dropped one; when
  /// none is dropped (rank = min(P, d)) or the first dropped one is exactly 0, the last kept one
  /// over the tolerance. +inf for the zero matrix (rank 0 exactly); 0 when every singular
  /// value is dropped but some is non-zero (a tolerance above sigma_max). NaN when failed.
  double gap = 0;
  NumericalRankStatus status = NumericalRankStatus::conclusive;
  NumericalRankMethod method = NumericalRankMethod::svd;  ///< the method used
  std::vector<double> singular_values;                    ///< descending, min(P, d) of them
  /// The singular values that are not finite (status failed when > 0).
  Index non_finite = 0;

  /// The k-th largest singular value (1-based), NaN outside 1..min(P, d).
  [[nodiscard]] double sigma(Index k) const;
};

/// Numerical rank of `j` (P x d): singular values by dense SVD (Householder QR of the tall
/// matrix, then LAPACK's dgesvd, QR iteration, on the d x d factor R) or as square roots of the
/// eigenvalues of j^T j (d x d, built from the sparse rows), the tolerance, the gap and the
/// status. Eigen 3.4.0's BDCSVD is not used: on R factors of Jacobians of the paper's grid it
/// returned NaN and wrong small singular values (docs/rank.md). Throws TooLarge when the dense
/// matrix needed exceeds the memory limit.
/// Complexity: svd O(P d^2 + d^3); gram_eigenvalues O(sum len^2 + d^3).
NumericalRank numerical_rank(const CsrMatrix<double>& j, const NumericalRankOptions& options = {});

/// The numerical rank of a dense matrix, consumed (pass it with std::move): its singular values
/// by LAPACK's dgesvd on it directly (which reduces a tall matrix by QR first), the tolerance
/// max(rows, cols) eps sigma_max unless options.tolerance > 0; options.method is ignored.
/// Complexity: O(rows cols min(rows, cols)).
NumericalRank numerical_rank(Eigen::MatrixXd a, const NumericalRankOptions& options = {});

}  // namespace pathlift
