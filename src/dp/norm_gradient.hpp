#pragma once
// The checks of path_norm and path_norm_gradient and the parts of the gradient shared by the
// DAG (norms.cpp) and the layer graph (layer_dp.cpp).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "pathlift/norms.hpp"

namespace pathlift::detail {

/// Throws std::invalid_argument unless s >= 0 (inf included: max_p |Phi_p|), naming s.
void check_norm_exponent(double s);

/// Throws std::invalid_argument unless s is finite and > 0, saying why for 0 and inf.
void check_gradient_exponent(double s);

/// Throws std::invalid_argument, naming label(k), when s < 1 and some theta_k = 0: there
/// |t|^s has an infinite slope and the norm is not differentiable.
void check_differentiable(std::span<const double> theta, double s,
                          const std::function<std::string(Index)>& label);

/// norm^(1 - s) = S^((1 - s) / s) for the sum S = sum_p |Phi_p|^s: the factor of
/// |theta|^(s-1) sign(theta) F G in the gradient of the norm (1 for s = 1 or S = 0).
ScaledReal norm_gradient_factor(const ScaledReal& sum, double s);

/// x 2^k, an entry of the gradient, as a double; a non-zero entry float64 holds only as 0 or a
/// subnormal is counted in `underflows`.
double gradient_entry(double x, std::int64_t k, std::size_t& underflows);

/// Throws RangeError when `underflows` of the d entries of the gradient underflowed.
void require_no_underflow(std::size_t underflows, std::size_t d);

/// theta_k times the gradient of ||Phi||_1 (of_gradient()): the path magnitude sum_p |Phi_p|
/// (with multiplicity) through k, 0 at theta_k = 0 even where the gradient overflowed; a
/// RangeError of the gradient says it was the path magnitudes'.
std::vector<double> magnitude_from_gradient(
    std::span<const double> theta, const std::function<std::vector<double>()>& of_gradient);

}  // namespace pathlift::detail
