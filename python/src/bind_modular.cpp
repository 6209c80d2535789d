// modular.hpp: the default prime of the exact (modular) rank computations.

#include "common.hpp"
#include "pathlift/modular.hpp"

namespace pathlift::python {

void bind_modular(py::module_& m) {
  // The default of the `prime=` keywords: 2^61 - 1 (a Mersenne prime); functional_dimension
  // draws its prime at random instead (prime=None).
  m.attr("default_prime") = py::int_(default_prime);
}

}  // namespace pathlift::python
