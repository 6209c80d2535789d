#pragma once
// Adapts a PhaseProgress (phase name, fraction) to the fraction-only callbacks of the
// elimination and the path engine.

#include <functional>
#include <string_view>

#include "pathlift/certificate.hpp"

namespace pathlift::detail {

/// A callback reporting `name`'s fraction to `progress`; empty when `progress` is. `progress`
/// must outlive the callback; `name` must be a literal (or outlive it too).
inline std::function<void(double)> phase_callback(const PhaseProgress& progress,
                                                  std::string_view name) {
  if (!progress) {
    return {};
  }
  return [&progress, name](double fraction) { progress(name, fraction); };
}

}  // namespace pathlift::detail
