#pragma once
// UTF-8 validity (error.cpp, beside printable(), which shares its decoder).

#include <string_view>

namespace pathlift::detail {

/// Whether `text` is well-formed UTF-8 (what JSON, and so every file pathlift writes, holds).
bool is_utf8(std::string_view text);

}  // namespace pathlift::detail
