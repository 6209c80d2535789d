#pragma once
// What the layer-graph entry points share (layer_dp.cpp, layer_kernel_operator.cpp): the check
// of a d-vector, parameter labels for messages, per-parameter scaled accumulators.

#include <cstdint>
#include <span>
#include <string>

#include "pathlift/layers.hpp"
#include "pathlift/types.hpp"
#include "src/dp/dp_scaled.hpp"

namespace pathlift::detail {

/// "parameter 7 (weight of layer 'conv1')", for messages.
std::string layer_param_label(const LayerGraph& g, Index k);

/// Throws std::invalid_argument unless x has d entries, all finite (naming the first that is
/// not, with its layer).
void check_layer_vector(const LayerGraph& g, std::span<const double> x, const char* what);

/// Per-parameter accumulators (mantissa, exponent) of sums over edges.
struct ParamSums {
  Buffer<double> m;
  Buffer<std::int64_t> k;
  explicit ParamSums(Index d)
      : m(static_cast<std::size_t>(d), 0.0),
        k(static_cast<std::size_t>(d), detail::dp_no_exponent) {}
  [[nodiscard]] double value(std::size_t i) const {
    return m[i] == 0 ? 0.0 : detail::dp_ldexp(m[i], k[i]);
  }
};

}  // namespace pathlift::detail
