#pragma once
// Progress (options.hpp) for the loops that know only their fraction: the elimination, the path
// engine, the layer DP, the kernel's passes.

#include <functional>
#include <string_view>

#include "pathlift/options.hpp"

namespace pathlift::detail {

/// A callback reporting `phase`'s fraction to `progress`; empty when `progress` is. `progress`
/// must outlive the callback; `phase` must be a literal (or outlive it too).
inline std::function<void(double)> phase_callback(const Progress& progress,
                                                  std::string_view phase) {
  if (!progress) {
    return {};
  }
  return [&progress, phase](double fraction) { progress(phase, fraction); };
}

/// `progress` with every phase reported as `phase` (a sub-computation shown under its caller's
/// name); empty when `progress` is.
inline Progress renamed(const Progress& progress, std::string_view phase) {
  if (!progress) {
    return {};
  }
  return
      [progress, phase](std::string_view /*inner*/, double fraction) { progress(phase, fraction); };
}

}  // namespace pathlift::detail
