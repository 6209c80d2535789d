// sparse.hpp: CSR matrices reach Python as scipy.sparse.csr_matrix built on views of the C++
// arrays (arrays.hpp: make_csr); dense matrices as numpy arrays under the memory limit.

#include "common.hpp"
#include "pathlift/sparse.hpp"

namespace pathlift::python {

void bind_sparse(py::module_& m) {
  m.def(
      "dense_bytes",
      [](Index rows, Index cols, const py::object& dtype) {
        return dense_bytes(rows, cols, static_cast<std::size_t>(numpy_dtype(dtype).itemsize()));
      },
      py::arg("rows"), py::arg("cols"), py::arg("dtype") = py::none(),
      "Bytes a dense rows x cols matrix of dtype (default float64) needs: what dense=True "
      "checks against max_memory.");
  m.def("_csr_fast_path", &csr_assembly_fast_path,
        "Whether sparse results are assembled without scipy's validating constructor (checked "
        "once against it at first use); for tests.");
}

}  // namespace pathlift::python
