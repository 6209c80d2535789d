#include "common.hpp"

#include <chrono>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "pathlift/network.hpp"
#include "pathlift/options.hpp"

namespace pathlift::python {

namespace {

/// The Python side of a call's Progress: the callable, throttled, and its errors kept out of the
/// C++ work (engine_options).
class PythonProgress {
 public:
  explicit PythonProgress(py::object callback) : m_callback(std::move(callback)) {}
  PythonProgress(const PythonProgress&) = delete;
  PythonProgress& operator=(const PythonProgress&) = delete;
  ~PythonProgress() {
    const py::gil_scoped_acquire gil;
    if (!m_failed && py::hasattr(m_callback, "close")) {
      try {
        m_callback.attr("close")();
      } catch (py::error_already_set& e) {
        e.discard_as_unraisable("pathlift progress display");
      }
    }
    m_callback = py::object();
  }

  void operator()(std::string_view phase, double fraction) {
    const auto now = std::chrono::steady_clock::now();
    const bool new_phase = phase != m_phase;
    if (m_failed || (!new_phase && fraction >= 0 && fraction < 1 && now - m_last < m_every)) {
      return;
    }
    m_last = now;
    if (new_phase) {
      m_phase = std::string(phase);
    }
    const py::gil_scoped_acquire gil;
    try {
      m_callback(m_phase, fraction);
    } catch (py::error_already_set& e) {
      m_failed = true;
      if (e.matches(PyExc_KeyboardInterrupt)) {
        PyErr_SetInterrupt();  // raised again once the call returns to Python
      } else {
        e.discard_as_unraisable("pathlift progress callback");
      }
    }
  }

 private:
  py::object m_callback;
  std::string m_phase;
  std::chrono::steady_clock::time_point m_last{};
  std::chrono::milliseconds m_every{100};
  bool m_failed = false;
};

}  // namespace

EngineOptions engine_options(int threads, std::size_t max_memory, const py::object& progress,
                             const char* label) {
  if (threads < 0) {
    throw std::invalid_argument(
        fmt::format("threads must be >= 0 (0 = all cores), got {}", threads));
  }
  (void)resolve_threads(threads);  // refuses more than the machine can run
  EngineOptions o;
  o.threads = threads;
  o.max_memory = max_memory;
  const py::object display =
      py::module_::import("pathlift._progress").attr("display")(label, progress);
  if (!display.is_none()) {
    auto state = std::make_shared<PythonProgress>(display);
    o.progress = [state](std::string_view phase, double fraction) { (*state)(phase, fraction); };
  }
  return o;
}

bool is_torch_module(const py::handle& x) {
  for (const auto cls : x.get_type().attr("__mro__")) {
    if (py::str(cls.attr("__module__")).cast<std::string>() == "torch.nn.modules.module" &&
        py::str(cls.attr("__name__")).cast<std::string>() == "Module") {
      return true;
    }
  }
  return false;
}

const Network& NetworkArg::dag(std::size_t max_memory) const {
  EngineOptions options;
  options.max_memory = unroll_limit(max_memory);
  const py::gil_scoped_release release;
  // The model (shared with the LayerNetwork) keeps the DAG it makes.
  return *m_model->unrolled(options);
}

py::object NetworkArg::stored_theta() const {
  py::object w = m_source.attr("weights");
  if (w.is_none()) {
    throw std::invalid_argument(
        "theta is required: the network has no stored weights (pass theta, or build the "
        "network with weights)");
  }
  return w;
}

template <class T>
py::array_t<T, py::array::c_style | py::array::forcecast> theta_argument(const py::object& theta,
                                                                         const NetworkArg& net,
                                                                         const char* what) {
  auto t = vector_argument<T>(theta.is_none() ? net.stored_theta() : theta, what);
  try {
    check_theta(net.model(), as_span<T>(t));
  } catch (const std::invalid_argument& e) {
    // check_theta of a Model names its vector "theta" ("theta has 6 entries ...",
    // "theta[4] ... is not finite"): another argument gets its own name.
    const std::string_view message = e.what();
    if (std::string_view(what) == "theta" || !message.starts_with("theta")) {
      throw;
    }
    throw std::invalid_argument(fmt::format("{}{}", what, message.substr(5)));
  }
  return t;
}

template py::array_t<double, py::array::c_style | py::array::forcecast> theta_argument<double>(
    const py::object&, const NetworkArg&, const char*);
template py::array_t<float, py::array::c_style | py::array::forcecast> theta_argument<float>(
    const py::object&, const NetworkArg&, const char*);

}  // namespace pathlift::python
