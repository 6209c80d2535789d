#pragma once
// The rule behind check_theta (network.hpp), for the callers that hold no Network: a PathSet
// knows only d, so its messages cannot label the edges.

#include <span>
#include <string_view>

#include "pathlift/network.hpp"
#include "pathlift/types.hpp"

namespace pathlift::detail {

/// Throws std::invalid_argument "<what> has N entries but the network has d edges" unless
/// size == num_edges.
void check_parameter_count(std::size_t size, Index num_edges, std::string_view what,
                           std::string_view noun = "edges");

/// `values` has `num_edges` entries, each finite. Throws std::invalid_argument
/// "<what> has N entries but the network has d edges" or "<what>[7] (edge a -> b) is not
/// finite: nan", without "(edge ...)" when `net` is null.
template <class T>
void check_parameters(std::span<const T> values, Index num_edges, const Network* net,
                      std::string_view what);

extern template void check_parameters(std::span<const double>, Index, const Network*,
                                      std::string_view);
extern template void check_parameters(std::span<const float>, Index, const Network*,
                                      std::string_view);

}  // namespace pathlift::detail
