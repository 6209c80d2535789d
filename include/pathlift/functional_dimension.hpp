#pragma once
/// \file functional_dimension.hpp
/// The batch functional dimension of a network on data (Grigsby, Lindsey, Meyerhoff, Wu 2022):
/// the rank of the batch Jacobian J_X = d f(X; theta) / d theta, (N q) x d, rows sample-major
/// (row i q + j is the gradient of output j on sample i), certified with exact arithmetic.
///
/// Lower bound: the rank modulo a prime of J_X's exact entries at the activation pattern of the
/// forward pass. Every double is a dyadic rational, so theta, X and the slopes reduce exactly
/// mod p (dyadic_residue, mod_p.hpp) and so does every entry of J_X, a polynomial in them;
/// a minor that is non-zero mod p is non-zero over Q. Upper bound: the smallest of q times the
/// number of distinct samples, the certified upper bound of rank(dPhi) (J_X = L(X) dPhi), and
/// d minus the kernel known exactly (docs/functional-dimension.md). The rank is certified when the
/// bounds meet; a floating-point rank is reported beside it, never in its place. With a prime
/// drawn at random (the default), the lower bound is also the rank except with a probability
/// bounded and reported (a Monte Carlo certificate, monte_carlo_rank).

#include <Eigen/Core>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pathlift/forward.hpp"
#include "pathlift/mod_p.hpp"
#include "pathlift/model.hpp"
#include "pathlift/numerical_rank.hpp"
#include "pathlift/options.hpp"
#include "pathlift/types.hpp"

namespace pathlift {

/// What functional_dimension() concluded.
enum class FunctionalDimensionStatus : std::uint8_t {
  certified,  ///< lower == upper: rank J_X is known exactly
  bounds,     ///< lower < upper: both certified, the rank lies between them
  /// Some pre-activation (or max-pool ordering) is within the rounding error of the forward
  /// pass of a kink: the activation pattern, hence J_X, is not certain. lower and upper are
  /// those of J_X at the pattern the floating-point forward pass chose.
  pattern_uncertain
};

/// "certified", "bounds", "pattern_uncertain".
std::string_view to_string(FunctionalDimensionStatus status);

/// Options of functional_dimension().
struct FunctionalDimensionOptions {
  /// 0 (the default): a prime drawn uniformly at random among the primes in [2^60, 2^61)
  /// (random_prime()), which makes the lower bound a Monte Carlo certificate of the rank as
  /// well (FunctionalDimension::monte_carlo_rank); else an odd prime < 2^63
  /// (std::invalid_argument otherwise), for a reproducible elimination.
  std::uint64_t prime = 0;
  /// The numerical rank of J_X beside the exact one: dense SVD (LAPACK dgesvd) of all N q rows.
  /// method and svd_max_entries are ignored; with when = automatic it is skipped (and the note
  /// says so) above automatic_max_flops (2 max(N q, d) min(N q, d)^2 + 6 min(N q, d)^3, here
  /// about 20 s of LAPACK on two cores).
  NumericalRankOptions numerical = [] {
    NumericalRankOptions o;
    o.automatic_max_flops = 3e11;
    return o;
  }();
  /// The parameters whose columns are eliminated (empty: all of them). The lower bound is then
  /// the rank of J_X restricted to these columns, still a lower bound of rank J_X, and the
  /// elimination's memory and time shrink with them: a model too large for the whole J_X is
  /// bounded from below by the columns that fit (say its last layers'). Indices in [0, d),
  /// std::invalid_argument naming the first that is not.
  std::vector<Index> columns;
  /// threads, the memory limit (the dense residues of the rows being eliminated, and the
  /// floating-point J_X for the numerical rank, are refused beyond it with their sizes) and the
  /// progress of the phases.
  EngineOptions engine;
};

/// The functional dimension of a network on a batch, with its certificate.
struct FunctionalDimension {
  Index n = 0;     ///< samples
  Index q = 0;     ///< outputs
  Index d = 0;     ///< parameters
  Index rows = 0;  ///< N q, the rows of J_X
  /// Certified lower bound: the rank mod `prime` of the rows of J_X eliminated.
  Index lower = 0;
  /// Certified upper bound: min(upper_rows, upper_dphi, upper_kernel).
  Index upper = 0;
  FunctionalDimensionStatus status = FunctionalDimensionStatus::certified;
  /// q times the number of distinct samples (equal rows of X give equal rows of J_X).
  Index upper_rows = 0;
  /// The certified upper bound of rank(dPhi(theta)): d - h with one parameter per edge and no
  /// zero weight; from check_rank_theorem's certificate otherwise.
  Index upper_dphi = 0;
  /// d minus the dimension of the kernel of J_X that pathlift knows exactly (its rank mod p
  /// counted): the parameters on no path active on any sample (zero columns), and with one
  /// parameter per edge the symmetries of the batch's linear blocks: hidden nodes with the
  /// same sources, targets and slope on every sample act on the batch as one linear map, so
  /// GL(|S|) acts on their weights without changing f(X) (rescalings when |S| = 1), a block
  /// linear on the whole batch translates through its biases; and a node with more incoming
  /// edges than distinct samples on which it is live has that excess of kernel on them. With
  /// shared parameters: the zero columns and the rescaling of each parameter class.
  Index upper_kernel = 0;
  Index distinct_samples = 0;
  /// The lexicographically first independent rows of J_X (row i q + j), `lower` of them: row t
  /// is here iff it is independent of rows 0..t-1 mod p.
  std::vector<Index> pivot_rows;
  /// 1 + the last pivot row: the rows, in order, that reach `lower` (0 when lower is 0).
  Index rows_to_rank = 0;
  /// Rows computed and eliminated (all of them, unless the rank reached `upper` before).
  Index rows_used = 0;
  /// Columns eliminated: the non-zero columns of J_X (among FunctionalDimensionOptions::columns
  /// when given).
  Index columns_used = 0;
  /// The prime of the eliminations (drawn at random unless FunctionalDimensionOptions::prime).
  std::uint64_t prime = default_prime;
  /// Whether `prime` was drawn at random.
  bool prime_random = false;
  /// With a random prime and every column eliminated: `lower`, which is rank J_X except with
  /// probability at most monte_carlo_error over the draw of the prime. A rank above it needs a
  /// non-zero minor of J_X, scaled to an integer matrix, that the prime divides; the minor's
  /// size bounds its prime factors in [2^60, 2^61) (docs/functional-dimension.md#monte-carlo).
  /// Absent with a prime given or a subset of the columns.
  std::optional<Index> monte_carlo_rank;
  /// The bound on the probability that monte_carlo_rank is wrong (0 when certified).
  std::optional<double> monte_carlo_error;
  /// min |pre-activation| over samples and kinked nodes (ActivationPattern::margin).
  double margin = 0;
  /// Some pre-activation is exactly 0 (ReLU'(0) = 0 is used, as in PyTorch; J_X is then the
  /// Jacobian of that convention, not a derivative).
  bool on_kink = false;
  /// The activation pattern is certain: every kinked pre-activation is farther from 0 than the
  /// forward pass's rounding error bound, or exactly computed (docs/functional-dimension.md).
  bool pattern_certified = true;
  /// Where the pattern is not certain (empty when pattern_certified).
  std::string pattern_note;
  /// The numerical rank of J_X (absent when skipped or not fitting; numerical_note says why).
  std::optional<NumericalRank> numerical;
  std::string numerical_note;
  /// True when the numerical rank was skipped for its estimated work (when = automatic).
  bool numerical_skipped = false;
  std::string explanation;  ///< one sentence: why `status`, which bound is binding

  [[nodiscard]] bool certified() const { return status == FunctionalDimensionStatus::certified; }
  /// The rank when certified.
  [[nodiscard]] std::optional<Index> rank() const {
    return certified() ? std::optional<Index>(lower) : std::nullopt;
  }
};

/// The certified rank of J_X on the rows of X (n x r: a DAG's data inputs, or a layer graph's
/// flattened input, which is unrolled within options.engine.max_memory).
///
/// Rows are computed by one forward and one backward pass per sample (all q outputs at once),
/// exactly mod p, and eliminated in growing blocks by FLINT's LU of the block's transpose
/// (whose pivot columns are the row rank profile), the previous pivot rows carried over; it
/// stops as soon as the rank reaches the upper bound. The dense residues of one block, d x
/// (rank + block) words, are refused beyond the memory limit with their sizes (TooLarge), as
/// is the N q x d floating-point J_X of the numerical rank (then skipped with a note).
/// Throws what forward() throws for data or theta that do not fit, std::invalid_argument for
/// a prime (other than 0) that is not an odd prime < 2^63.
/// Complexity: O(n q E) for the rows (E edges), O(d K r) for the elimination (K rows used, r
/// the rank); the numerical rank O(N q d^2).
///
/// Example:
/// \code
///   const pathlift::Model m(pathlift::feed_forward(4, {6, 6}, 2));
///   const std::vector<double> theta = pathlift::normal_weights(m.num_params(), 0);
///   const Eigen::MatrixXd X = pathlift::random_data(*m.dag(), 50, 1);
///   const auto fd = pathlift::functional_dimension(m, theta, X);
///   // fd.certified(), fd.lower == fd.upper == 72: d - h = 86 - 12 = 74, less two edges
///   // whose target is inactive on every sample their source is active on (zero columns)
/// \endcode
FunctionalDimension functional_dimension(const Model& model, std::span<const double> theta,
                                         const Eigen::Ref<const Eigen::MatrixXd>& X,
                                         const FunctionalDimensionOptions& options = {});

/// The result as one JSON object (docs/functional-dimension.md lists the keys), indented by
/// `indent` spaces (-1: one line).
std::string to_json(const FunctionalDimension& fd, int indent = 2);

}  // namespace pathlift
