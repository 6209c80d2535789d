#pragma once
// The functions of a batch X (forward, linearize): their Python signature
// (net, theta, X, *, threads=0, max_memory=0), converted and checked under the GIL, then the
// computation with the GIL released.

#include <utility>

#include "common.hpp"
#include "pathlift/network.hpp"

namespace pathlift::python {

/// Binds `name` as f(net, theta, X, EngineOptions) with theta a span (None: the network's
/// weights) and X an Eigen view of an n x r float64 array; a LayerNetwork is unrolled (within
/// max_memory) for it.
template <class F>
void def_batch_function(py::module_& m, const char* name, F f, const char* doc) {
  m.def(
      name,
      [f = std::move(f), name](const NetworkArg& arg, const py::object& theta, const py::object& X,
                               int threads, const py::object& progress, std::size_t max_memory) {
        const EngineOptions o = engine_options(threads, max_memory, progress, name);
        const auto t = theta_argument<double>(theta, arg);
        const Network& net = arg.dag(max_memory);
        const auto x = data_argument(X);
        py::gil_scoped_release release;
        return f(net, as_span<double>(t), as_matrix(x), o);
      },
      py::arg("net"), py::arg("theta"), py::arg("X"), py::kw_only(), py::arg("threads") = 0,
      py::arg("progress") = py::none(), py::arg("max_memory") = 0, doc);
}

}  // namespace pathlift::python
