#pragma once
// The arguments the rank functions share (rank, functional_dimension).

#include "common.hpp"
#include "pathlift/numerical_rank.hpp"

namespace pathlift::python {

/// NumericalRankOptions::when from None (automatic), True (always) or False (never).
inline NumericalRankOptions::When numerical_when(const py::object& numerical) {
  if (numerical.is_none()) {
    return NumericalRankOptions::When::automatic;
  }
  return numerical.cast<bool>() ? NumericalRankOptions::When::always
                                : NumericalRankOptions::When::never;
}

}  // namespace pathlift::python
