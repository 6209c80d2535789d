// The extension module pathlift._pathlift: one bind_<module>() per public header, each in its
// own python/src/bind_<module>.cpp. Binding a new header = a new file + one entry below.

#include "common.hpp"
#include "pathlift/version.hpp"

// In binding order: a type is registered before the functions whose signatures mention it.
#define PATHLIFT_PYTHON_MODULES(X) \
  X(error)                         \
  X(network)                       \
  X(io)                            \
  X(layers)                        \
  X(layer_graph_builder)           \
  X(model)                         \
  X(builtins)                      \
  X(counting)                      \
  X(limits)                        \
  X(sparse)                        \
  X(paths)                         \
  X(lifting)                       \
  X(modular)                       \
  X(checks)                        \
  X(magnitude)                     \
  X(rank_results)                  \
  X(rank)                          \
  X(proof)                         \
  X(forward)                       \
  X(linearize)                     \
  X(norms)                         \
  X(metric)                        \
  X(generalization)                \
  X(heavy_paths)                   \
  X(balance)                       \
  X(conservation)                  \
  X(functional_dimension)          \
  X(rescaling)                     \
  X(kernel)

namespace pathlift::python {
#define PATHLIFT_DECLARE_BIND(name) void bind_##name(py::module_& m);
PATHLIFT_PYTHON_MODULES(PATHLIFT_DECLARE_BIND)
#undef PATHLIFT_DECLARE_BIND
}  // namespace pathlift::python

PYBIND11_MODULE(_pathlift, m) {
  m.doc() =
      "pathlift's C++ engine: networks, path counts, paths, the path-lifting Phi, the "
      "skeleton B and the Jacobian dPhi of DAG ReLU networks; the paper's checks, certified "
      "ranks and the executed proof of Theorem 1; the forward pass and the linearization "
      "f = L Phi; path-norms and the path kernel by dynamic programming. Import the `pathlift` "
      "package, "
      "which re-exports everything here and adds the PyTorch bridge.";
  m.attr("__version__") = pathlift::version_string;
#define PATHLIFT_CALL_BIND(name) pathlift::python::bind_##name(m);
  PATHLIFT_PYTHON_MODULES(PATHLIFT_CALL_BIND)
#undef PATHLIFT_CALL_BIND
}
