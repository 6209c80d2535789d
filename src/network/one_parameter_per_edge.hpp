#pragma once
// The refusal of the tools of Theorem 1 (rescaling vectors per hidden node, anchors, the path
// basis) on a network whose parameters are not one per edge.

#include "pathlift/network.hpp"

namespace pathlift::detail {

/// Throws NetworkError, naming `what` and the sizes, unless net.one_parameter_per_edge().
void require_one_parameter_per_edge(const Network& net, const char* what);

}  // namespace pathlift::detail
