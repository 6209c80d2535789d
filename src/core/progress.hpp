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

/// Reports work of unknown extent for its lifetime: fraction -1 when built (a display shows
/// the time elapsed), 1 when destroyed. Nothing when `progress` is empty.
class ProgressScope {
 public:
  ProgressScope(const Progress& progress, std::string_view phase)
      : m_progress(phase_callback(progress, phase)) {
    if (m_progress) {
      m_progress(-1.0);
    }
  }
  ProgressScope(const ProgressScope&) = delete;
  ProgressScope& operator=(const ProgressScope&) = delete;
  ~ProgressScope() {
    if (m_progress) {
      m_progress(1.0);
    }
  }

 private:
  std::function<void(double)> m_progress;
};

}  // namespace pathlift::detail
