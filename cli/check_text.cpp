#include "check_text.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>

#include "common.hpp"
#include "pathlift/checks.hpp"
#include "pathlift/error.hpp"

namespace pathlift::cli {

std::string format_check(const CheckResult& r) {
  switch (r.status) {
    case CheckStatus::not_applicable:
      return fmt::format("n/a   ({})", r.note);
    case CheckStatus::out_of_range:
      return fmt::format("OUT OF RANGE  ({})", r.note);
    case CheckStatus::passed:
    case CheckStatus::failed:
      break;
  }
  return fmt::format("{}  (max rel. error {:.1e}, tol {:.0e}, {} entries)",
                     r.status == CheckStatus::passed ? "pass" : "FAIL", r.max_error, r.tolerance,
                     r.entries);
}

CheckStatus checks_status(const std::vector<CheckResult>& results) {
  if (std::any_of(results.begin(), results.end(),
                  [](const CheckResult& r) { return r.status == CheckStatus::failed; })) {
    return CheckStatus::failed;
  }
  return any_out_of_range(results) ? CheckStatus::out_of_range : CheckStatus::passed;
}

std::string checks_verdict(const std::vector<CheckResult>& results) {
  switch (checks_status(results)) {
    case CheckStatus::passed:
    case CheckStatus::not_applicable:
      return "all checks passed";
    case CheckStatus::failed:
      return "SOME CHECKS FAILED";
    case CheckStatus::out_of_range:
      break;
  }
  return "SOME CHECKS NOT RUN: the magnitudes at theta are beyond float64";
}

void throw_unless_passed(const std::vector<CheckResult>& results) {
  const CheckStatus status = checks_status(results);
  if (status != CheckStatus::failed && status != CheckStatus::out_of_range) {
    return;
  }
  std::vector<std::string> names;
  for (const auto& r : results) {
    if (r.status == status) {
      names.push_back(r.name);
    }
  }
  if (status == CheckStatus::failed) {
    throw CheckFailed(fmt::format("{} of {} checks failed: {}", names.size(), results.size(),
                                  fmt::join(names, ", ")));
  }
  const auto it = std::find_if(results.begin(), results.end(), [](const CheckResult& r) {
    return r.status == CheckStatus::out_of_range;
  });
  throw RangeError(fmt::format("{} of {} checks not run ({}): {}", names.size(), results.size(),
                               fmt::join(names, ", "), it->note));
}

}  // namespace pathlift::cli
