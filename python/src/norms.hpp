#pragma once
// Numbers beyond double's range for Python: a float by default, a pathlift.ScaledReal (known by
// its log10) when asked for (the trace of the path kernel).

#include <vector>

#include "common.hpp"
#include "pathlift/norms.hpp"

namespace pathlift::python {

/// A value beyond double's range, for a function with a `scaled` keyword: the ScaledReal when
/// `scaled`, else the nearest float (inf beyond 1.8e308, 0 below 4.9e-324).
py::object scaled_result(const ScaledReal& x, bool scaled);

}  // namespace pathlift::python
