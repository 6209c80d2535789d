#pragma once
// Building blocks of the reports' JSON forms (to_json): JSON has no inf or NaN, so a number that
// is not finite is written null, and so is an absent value.

#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>

namespace pathlift::detail {

using Json = nlohmann::ordered_json;

/// x, or null when x is not finite.
inline Json number_or_null(double x) {
  return std::isfinite(x) ? Json(x) : Json(nullptr);
}

/// *x, or null when x is empty.
template <class T>
Json optional_json(const std::optional<T>& x) {
  return x ? Json(*x) : Json(nullptr);
}

}  // namespace pathlift::detail
