#pragma once
// Numbers beyond double's range for Python: a float when it fits, else a pathlift.ScaledReal
// known by its log10 (path-norms, the trace of the path kernel).

#include <vector>

#include "common.hpp"
#include "pathlift/norms.hpp"

namespace pathlift::python {

/// A Python float when x fits in a double (zero included), else the ScaledReal object.
py::object scaled_to_python(const ScaledReal& x);

/// scaled_to_python of each entry, as a list.
py::list scaled_list(const std::vector<ScaledReal>& xs);

}  // namespace pathlift::python
