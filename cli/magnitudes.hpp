#pragma once
// Results beyond float64 in the CLI: the refusal (RangeError, exit 4) of a lifting that would
// overflow or underflow, with the command's way out, and the sign and log10 form (--log).
// Computed results are checked by the library's require_representable (magnitude.hpp).

#include <span>
#include <string>
#include <string_view>

#include "pathlift/lifting.hpp"
#include "pathlift/magnitude.hpp"
#include "pathlift/network.hpp"

namespace pathlift::cli {

/// Throws RangeError (with `hint`) unless Phi (`jacobian` false) or dPhi of `net` at theta fit
/// T: the check made before computing them (magnitude.hpp, require_fits).
template <class T>
void require_lifting_fits(const Network& net, std::span<const double> theta, bool jacobian,
                          std::string_view what, std::string_view hint);

/// x as "sign log10|x|" columns: a P x 2 row-major matrix [sign, log10] for write_dense.
std::vector<double> sign_log10_rows(const SignedLog10& values);

}  // namespace pathlift::cli
