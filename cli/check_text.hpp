#pragma once
// The checks' table in text: each check's line, the verdict, the exit it implies.

#include <string>
#include <vector>

namespace pathlift {
struct CheckResult;
enum class CheckStatus;
}  // namespace pathlift

namespace pathlift::cli {
/// "pass  (max rel. error 1.2e-16, tol 1e-10, 9 entries)" or "n/a (...)" / "FAIL (...)".
std::string format_check(const CheckResult& r);

/// The verdict of check_identities' results: "failed" when one failed, else "out_of_range" when
/// one could not be run, else "passed".
CheckStatus checks_status(const std::vector<CheckResult>& results);

/// The last line of the checks' table: "all checks passed", "SOME CHECKS FAILED", ...
std::string checks_verdict(const std::vector<CheckResult>& results);

/// Throws CheckFailed (exit 1) naming the failed checks, else RangeError (exit 4) naming those
/// out of range, else returns.
void throw_unless_passed(const std::vector<CheckResult>& results);
}  // namespace pathlift::cli
