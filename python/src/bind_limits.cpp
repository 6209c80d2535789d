// limits.hpp: the memory limit (max_memory) and the estimates checked against it.

#include <fmt/format.h>

#include <stdexcept>
#include <string>

#include "common.hpp"
#include "pathlift/counting.hpp"
#include "pathlift/limits.hpp"
#include "pathlift/path_memory.hpp"
#include "pathlift/types.hpp"

namespace pathlift::python {

void bind_limits(py::module_& m) {
  m.def("default_max_memory", &default_max_memory,
        "Half of the physical memory, in bytes: the limit used when max_memory is 0.");
  m.def("effective_max_memory", &effective_max_memory, py::arg("max_memory"),
        "max_memory, or default_max_memory() when it is 0.");
  m.def("format_bytes", &format_bytes, py::arg("bytes"), "'1.50 GiB' style.");
  m.def(
      "release_cached_buffers", [] { return release_cached_buffers(); },
      "Returns to the system the result buffers pathlift keeps for reuse (freed recently: up to "
      "8 blocks of 2 MiB or more, 1 GiB in all, and 16 of 64 KiB to 2 MiB, 16 MiB in all) and "
      "their total bytes.");
  m.def(
      "estimate_bytes",
      [](const NetworkArg& arg, const std::string& what, const py::object& dtype) {
        const Network& net = arg.dag(0);
        const PathObject object = parse_path_object(what);
        const std::size_t scalar = scalar_of(dtype) == Scalar::f64 ? sizeof(double) : sizeof(float);
        py::gil_scoped_release release;
        const PathCounts c = count_paths(net);
        return estimate_bytes(c.paths, c.nnz, net.num_edges(), object, scalar);
      },
      py::arg("net"), py::arg("what") = "jacobian", py::arg("dtype") = py::none(),
      "Bytes the path engine needs to build `what` ('path_set', 'path_lifting', 'skeleton', "
      "'jacobian', 'dense_jacobian') for this network with float64 (default) or float32 "
      "values; computed from the DP counts, nothing enumerated. The functions refuse work "
      "above max_memory with TooLarge (MemoryError).");
}

}  // namespace pathlift::python
