#pragma once
// Numbers beyond double's range for Python: a float by default, a pathlift.ScaledReal (known by
// its log10) when asked for (the trace of the path kernel), a RangeError when a float cannot hold
// it.

#include <string_view>
#include <vector>

#include "common.hpp"
#include "pathlift/norms.hpp"

namespace pathlift::python {

/// A value beyond double's range, for a function with a `scaled` keyword: the ScaledReal when
/// `scaled`, else the float; RangeError naming `what` when it does not fit one (never a silent
/// inf or lost 0).
py::object scaled_result(const ScaledReal& x, bool scaled, std::string_view what);

}  // namespace pathlift::python
