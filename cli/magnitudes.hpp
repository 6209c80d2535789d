#pragma once
// Results beyond float64 in the CLI: the refusal (RangeError, exit 4) of a result that
// overflows or underflows, with the command's way out, and the sign and log10 form (--log).

#include <span>
#include <string>
#include <string_view>

#include "pathlift/lifting.hpp"
#include "pathlift/magnitude.hpp"
#include "pathlift/network.hpp"

namespace pathlift::cli {

/// Throws RangeError naming `what` when one of `values` is not finite (overflow, or NaN from
/// inf - inf) or is subnormal (an underflow that lost precision): "3 of 4 values of f(X) are
/// not finite (overflow)". `hint` ends the message (the command's way out).
void require_representable(std::span<const double> values, std::string_view what,
                           std::string_view hint = {});

/// Throws RangeError (with `hint`) unless Phi (`jacobian` false) or dPhi of `net` at theta fit
/// T: the check made before computing them (magnitude.hpp, require_fits).
template <class T>
void require_lifting_fits(const Network& net, std::span<const double> theta, bool jacobian,
                          std::string_view what, std::string_view hint);

/// x as "sign log10|x|" columns: a P x 2 row-major matrix [sign, log10] for write_dense.
std::vector<double> sign_log10_rows(const SignedLog10& values);

}  // namespace pathlift::cli
