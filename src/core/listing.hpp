#pragma once
// An English list for messages: "a, b and c", or "a, b, c and 4 more".

#include <fmt/format.h>

#include <cstddef>
#include <string>
#include <vector>

namespace pathlift::detail {

/// "a, b and c", or "a, b, c and 4 more" when `total` is more than the items shown.
inline std::string listing(const std::vector<std::string>& shown, std::size_t total) {
  std::string out;
  for (std::size_t i = 0; i < shown.size(); ++i) {
    out += i == 0 ? "" : (i + 1 == shown.size() && total == shown.size() ? " and " : ", ");
    out += shown[i];
  }
  if (total > shown.size()) {
    out += fmt::format(" and {} more", total - shown.size());
  }
  return out;
}

}  // namespace pathlift::detail
