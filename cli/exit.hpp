#pragma once
// The CLI's exit statuses and the exception of a failed check.

#include <stdexcept>

namespace pathlift::cli {

/// The exit status of `pathlift` (docs/cli.md#exit-codes).
enum ExitCode : int {
  exit_ok = 0,            ///< done
  exit_check_failed = 1,  ///< a check or theorem failed (CheckFailed)
  exit_bad_input = 2,     ///< bad usage or bad input: parse error, unreadable file, work refused
  exit_internal = 3,      ///< any other exception: a bug or out of memory
  exit_out_of_range = 4,  ///< a result overflows or underflows float64 (RangeError): not
                          ///< computed, or a check not run; the sign and log10 forms (--log)
                          ///< or the path-free commands give it
};

/// Thrown by a command after it printed its result, when a check or theorem it verified
/// failed: exit 1, with "error: <what>" on stderr.
class CheckFailed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace pathlift::cli
