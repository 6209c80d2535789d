// modular.hpp: the default prime of the exact (modular) rank computations.

#include "common.hpp"
#include "pathlift/modular.hpp"

namespace pathlift::python {

void bind_modular(py::module_& m) {
  // The prime every `prime=` keyword defaults to: 2^61 - 1 (a Mersenne prime).
  m.attr("default_prime") = py::int_(default_prime);
}

}  // namespace pathlift::python
