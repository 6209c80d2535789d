#pragma once
// Progress on stderr (a terminal only) and timings.

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "pathlift/options.hpp"

namespace pathlift::cli {

/// A progress bar on stderr, drawn only when stderr is a terminal and the work has run for
/// about a second; cleared when done. A negative fraction means "running, extent unknown": the
/// label is shown with the seconds elapsed.
class ProgressBar {
 public:
  explicit ProgressBar(std::string label);
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  ~ProgressBar();
  void operator()(double fraction);

 private:
  void stop_ticker();

  std::string m_label;
  std::chrono::steady_clock::time_point m_start;
  bool m_enabled;
  bool m_drawn = false;
  int m_last_percent = -1;
  // Redraws "label ... N s" every half second while work of unknown extent runs in a library
  // call that reports nothing until it ends (LAPACK, FLINT).
  std::thread m_ticker;
  std::atomic<bool> m_ticking{false};
};

/// f() with a ProgressBar labelled `label` showing the seconds elapsed (work of unknown extent
/// that reports nothing: reading a file, unrolling, a single DP pass).
template <class F>
decltype(auto) with_progress(const std::string& label, F&& f) {
  ProgressBar bar(label);
  bar(-1.0);
  return f();
}

/// A display for the phases of long library work (Progress): one ProgressBar per phase,
/// labelled with the phase's name, on stderr when it is a terminal.
Progress phase_progress();

/// Seconds since `start`, for the timings the commands print.
double seconds_since(std::chrono::steady_clock::time_point start);

}  // namespace pathlift::cli
