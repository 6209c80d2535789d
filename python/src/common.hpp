#pragma once
// What every bind_<module>.cpp uses: EngineOptions from keyword arguments, the LayerNetwork
// Python holds and NetworkArg, the one conversion of network arguments (a Network or a
// LayerNetwork, as a Model), and theta for it; with the arguments' conversions (arguments.hpp)
// and the results' arrays (arrays.hpp), which it includes for the bindings.

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // every binding file converts std containers: one rule for all

#include <Eigen/Core>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "arguments.hpp"
#include "arrays.hpp"
#include "pathlift/layers.hpp"
#include "pathlift/model.hpp"
#include "pathlift/network.hpp"
#include "pathlift/paths.hpp"
#include "pathlift/sparse.hpp"
#include "pathlift/types.hpp"

namespace pathlift::python {

namespace py = pybind11;

/// EngineOptions from the `threads`, `max_memory` and `progress` keyword arguments (threads >=
/// 0). progress: None shows the call's progress on stderr when it is a terminal, labelled
/// `label` (pathlift._progress, as the CLI does), False shows nothing, a callable is called as
/// progress(phase, fraction) with the GIL held, at most about 10 times a second besides each
/// phase's start and end. An exception in the callback cannot stop the C++ work: it is reported
/// as unraisable and the callback is dropped, except KeyboardInterrupt, raised again when the
/// call returns.
EngineOptions engine_options(int threads, std::size_t max_memory,
                             const py::object& progress = py::bool_(false), const char* label = "");

/// pathlift.LayerNetwork: a layer-graph Model, and the memory limit its unrolling runs under
/// when a function gives none (the max_memory of from_torch and from_onnx).
struct LayerNetworkObject {
  Model model;
  std::size_t max_memory = 0;
};

/// Whether `x` is a torch.nn.Module (without importing torch: a class torch.nn.Module in its
/// type's MRO).
bool is_torch_module(const py::handle& x);

/// The network argument of a function: a pathlift.Network or a pathlift.LayerNetwork (or a
/// Python subclass of either, such as pathlift.torch's network of a module) as a Model, with
/// the Python object it came from. The one conversion of network arguments; the stubs show it
/// as `Network | LayerNetwork`.
class NetworkArg {
 public:
  NetworkArg() = default;
  NetworkArg(Model model, std::size_t unroll_limit, py::object source)
      : m_model(std::move(model)), m_unroll_limit(unroll_limit), m_source(std::move(source)) {}

  [[nodiscard]] const Model& model() const { return *m_model; }

  /// The DAG: the Network itself, or the layer graph unrolled (Model::unrolled, with the GIL
  /// released) within max_memory (0: the LayerNetwork's own limit, else half of physical RAM),
  /// made once and kept by the LayerNetwork. TooLarge (MemoryError) names the node and edge
  /// counts. Functions that need edges call it; the path-free ones never do.
  [[nodiscard]] const Network& dag(std::size_t max_memory = 0) const;
  /// The memory limit dag() unrolls within: max_memory, or the LayerNetwork's own limit.
  [[nodiscard]] std::size_t unroll_limit(std::size_t max_memory = 0) const {
    return max_memory != 0 ? max_memory : m_unroll_limit;
  }

  /// theta when a function's theta is None: the object's `weights` attribute (a Network's or a
  /// LayerNetwork's stored theta; the module's current parameters for a network of a PyTorch
  /// module). ValueError when there are none.
  [[nodiscard]] py::object stored_theta() const;
  /// The object's `weights` attribute: theta, or None.
  [[nodiscard]] py::object model_weights() const { return m_source.attr("weights"); }

 private:
  std::optional<Model> m_model;
  std::size_t m_unroll_limit = 0;
  py::object m_source;
};

/// theta for `net`: the argument, or net.stored_theta() when it is None, as a contiguous
/// array of T checked by check_theta (d finite numbers; ValueError naming the entry). `what`
/// names the argument in messages ("theta2" for a second parameter vector).
template <class T>
py::array_t<T, py::array::c_style | py::array::forcecast> theta_argument(
    const py::object& theta, const NetworkArg& net, const char* what = "theta");

/// f(theta) with theta = theta_argument<double>(theta, net) as a span, called with the GIL
/// released: the shape of every function of (net, theta).
template <class F>
auto with_theta(const NetworkArg& net, const py::object& theta, F&& f) {
  const auto t = theta_argument<double>(theta, net);
  py::gil_scoped_release release;
  return f(as_span<double>(t));
}

}  // namespace pathlift::python

namespace pybind11::detail {

/// NetworkArg from a pathlift.Network or a pathlift.LayerNetwork (see NetworkArg). Nothing is
/// unrolled here.
template <>
struct type_caster<pathlift::python::NetworkArg> {
  PYBIND11_TYPE_CASTER(pathlift::python::NetworkArg, const_name("Network | LayerNetwork"));

  bool load(handle src, bool /*convert*/) {
    using pathlift::python::LayerNetworkObject;
    type_caster_base<pathlift::Network> net;
    if (net.load(src, false)) {
      std::shared_ptr<const pathlift::Network> shared;
      try {
        copyable_holder_caster<pathlift::Network, std::shared_ptr<pathlift::Network>> held;
        if (held.load(src, false)) {
          shared = static_cast<std::shared_ptr<pathlift::Network>>(held);
        }
      } catch (const cast_error&) {
        // A Network viewed inside another object (a proof step's network): not owned here, and
        // kept alive for the call by `source` below.
      }
      if (shared == nullptr) {
        shared = std::shared_ptr<const pathlift::Network>(
            static_cast<const pathlift::Network*>(net.value), [](const pathlift::Network*) {});
      }
      value = {pathlift::Model(std::move(shared)), 0, reinterpret_borrow<object>(src)};
      return true;
    }
    make_caster<LayerNetworkObject> layers;
    if (layers.load(src, false)) {
      const auto& obj = cast_op<const LayerNetworkObject&>(layers);
      value = {obj.model, obj.max_memory, reinterpret_borrow<object>(src)};
      return true;
    }
    if (pathlift::python::is_torch_module(src)) {
      throw type_error(
          "expected a pathlift network (Network or LayerNetwork), got a torch.nn.Module: "
          "pathlift.from_torch(model) makes one that follows the module's parameters; inside a "
          "training loop, pathlift.torch.path_norm(model) and pathlift.torch.kernel_diagonal"
          "(model) take the module itself");
    }
    return false;
  }

  static handle cast(const pathlift::python::NetworkArg&, return_value_policy, handle) {
    throw std::logic_error("a NetworkArg is an argument, never a result");
  }
};

}  // namespace pybind11::detail
