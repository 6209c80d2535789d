#pragma once
/// \file checks.hpp
/// The paper's identities verified numerically on a network at a given theta: Lemma 1
/// (Phi = S exp(B log|theta|)), Proposition 2 (dPhi = diag(Phi) B diag(1/theta), when no
/// weight is 0), Corollary 1 (B = dPhi(1_d)), and dPhi against central finite differences of
/// Phi on a sample of entries.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pathlift/network.hpp"
#include "pathlift/paths.hpp"

namespace pathlift {

/// What became of one check.
enum class CheckStatus {
  passed,          ///< max_error <= tolerance
  failed,          ///< max_error > tolerance, or not a number (NaN, inf)
  not_applicable,  ///< the identity does not apply (e.g. a weight is 0)
  out_of_range     ///< Phi or dPhi overflows or underflows float64 at theta: not checked
};

/// "passed", "failed", "not_applicable", "out_of_range".
std::string_view to_string(CheckStatus status);

/// One verified identity.
struct CheckResult {
  std::string name;        ///< "lemma1", "proposition2", "corollary1", "finite_differences"
  std::string claim;       ///< the identity, in words
  bool applicable = true;  ///< false when the identity does not apply (e.g. a weight is 0)
  bool passed = true;      ///< status == passed, or not applicable
  CheckStatus status = CheckStatus::passed;
  double max_error = 0;  ///< largest relative error seen (NaN or inf when one was not finite)
  double tolerance = 0;
  Index entries = 0;  ///< entries compared
  std::string note;   ///< why not applicable, or where the largest error is
};

struct CheckOptions {
  Index fd_samples = 2000;   ///< entries of dPhi compared with finite differences
  std::uint64_t seed = 0;    ///< which entries
  double tolerance = 1e-10;  ///< relative, for the exact identities (float64 rounding)
  double fd_tolerance = 1e-6;
  EngineOptions engine;
};

/// Runs the four checks. When Phi or dPhi at theta (or a product they are computed from)
/// overflows or underflows float64 (magnitude.hpp), the three that depend on theta are not run:
/// their status is out_of_range and the note gives the magnitudes. A non-finite error is a
/// failure. Relative error of x against a reference y: |x - y| / max(|x|, |y|,
/// floor) where floor = 1e-300 for exact identities and, for finite differences, a small
/// fraction of the largest sampled |dPhi| entry (round-off of the difference quotient).
/// Throws std::invalid_argument for a theta of the wrong size or with a non-finite entry,
/// TooLarge when the paths do not fit in memory.
/// Complexity: O(nnz) time, O(nnz) memory (the path set and dPhi are built).
std::vector<CheckResult> check_identities(const Network& net, std::span<const double> theta,
                                          const CheckOptions& options = {});

/// True when every applicable check passed (false when one is out of range).
bool all_passed(const std::vector<CheckResult>& results);

/// The results as JSON: {"checks": [{name, claim, applicable, passed, status, max_error
/// (null when not finite), tolerance, entries, note}, ...], "passed": all_passed(results)}.
std::string to_json(const std::vector<CheckResult>& results, int indent = 2);

/// True when a check could not be run because of the magnitudes at theta.
bool any_out_of_range(const std::vector<CheckResult>& results);

}  // namespace pathlift
