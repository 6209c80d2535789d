#include "progress.hpp"

#include <unistd.h>
#include <cstdio>
#include <memory>
#include <utility>

#include "common.hpp"

namespace pathlift::cli {

ProgressBar::ProgressBar(std::string label)
    : m_label(std::move(label)),
      m_start(std::chrono::steady_clock::now()),
      m_enabled(isatty(STDERR_FILENO) != 0) {}

ProgressBar::~ProgressBar() {
  stop_ticker();
  if (m_drawn) {  // work that ended without reporting 1.0
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
}

void ProgressBar::stop_ticker() {
  if (m_ticker.joinable()) {
    m_ticking = false;
    m_ticker.join();
  }
}

void ProgressBar::operator()(double fraction) {
  if (!m_enabled) {
    return;
  }
  if (fraction < 0) {
    if (!m_ticker.joinable()) {
      m_ticking = true;
      m_ticker = std::thread([this] {
        while (m_ticking) {
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          const double s = seconds_since(m_start);
          if (m_ticking && s >= 1.0 && static_cast<int>(s * 10) % 5 == 0) {
            std::fprintf(stderr, "\r%s ... %.0f s", m_label.c_str(), s);
            std::fflush(stderr);
            m_drawn = true;
          }
        }
      });
    }
    return;
  }
  stop_ticker();
  if (fraction >= 1.0) {
    if (m_drawn) {
      std::fprintf(stderr, "\r\033[K");  // clear the line
      std::fflush(stderr);
      m_drawn = false;
    }
    return;
  }
  if (seconds_since(m_start) < 1.0) {
    return;
  }
  const int percent = static_cast<int>(fraction * 100.0);
  if (percent == m_last_percent) {
    return;
  }
  m_last_percent = percent;
  constexpr int width = 30;
  const int filled = percent * width / 100;
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.append(static_cast<std::size_t>(width - filled), '.');
  std::fprintf(stderr, "\r%s [%s] %3d%%", m_label.c_str(), bar.c_str(), percent);
  std::fflush(stderr);
  m_drawn = true;
}

Progress phase_progress() {
  struct State {
    std::string phase;
    std::unique_ptr<ProgressBar> bar;
  };
  auto state = std::make_shared<State>();
  return [state](std::string_view phase, double fraction) {
    if (!state->bar || state->phase != phase) {
      if (state->bar) {
        (*state->bar)(1.0);
      }
      state->phase = std::string(phase);
      state->bar = std::make_unique<ProgressBar>(state->phase);
    }
    (*state->bar)(fraction);
  };
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace pathlift::cli
