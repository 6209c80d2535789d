#pragma once
// Counts for Python: an int when exact, else a pathlift.Count known by its log10.

#include "common.hpp"
#include "pathlift/counting.hpp"

namespace pathlift::python {

/// A Python int when the count is exact, else the Count object (log10, approx).
py::object count_to_python(const Count& c);

}  // namespace pathlift::python
