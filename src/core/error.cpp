#include "pathlift/error.hpp"

#include <fmt/format.h>

#include "src/core/utf8.hpp"

namespace pathlift {

namespace {

/// The length of the well-formed UTF-8 sequence of a non-ASCII character at text[i], else 0
/// (a stray byte, a truncated or overlong sequence, a surrogate, beyond U+10FFFF); its code
/// point in `cp`.
std::size_t utf8_sequence(std::string_view text, std::size_t i, char32_t& cp) {
  const auto c = static_cast<unsigned char>(text[i]);
  const std::size_t n = c >= 0xc2 && c <= 0xdf   ? 2
                        : c >= 0xe0 && c <= 0xef ? 3
                        : c >= 0xf0 && c <= 0xf4 ? 4
                                                 : 0;
  if (n == 0 || i + n > text.size()) {
    return 0;
  }
  cp = c & (0x7f >> n);
  for (std::size_t k = 1; k < n; ++k) {
    const auto b = static_cast<unsigned char>(text[i + k]);
    if ((b & 0xc0) != 0x80) {
      return 0;
    }
    cp = (cp << 6) | (b & 0x3f);
  }
  const bool overlong = (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000);
  const bool bad = cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff);
  return overlong || bad ? 0 : n;
}

/// The length of the well-formed UTF-8 sequence of a printable character at text[i], else 0
/// (a stray byte, or a C1 control character U+0080..U+009F).
std::size_t utf8_printable(std::string_view text, std::size_t i) {
  char32_t cp = 0;
  const std::size_t n = utf8_sequence(text, i, cp);
  return cp < 0xa0 ? 0 : n;
}

}  // namespace

std::string printable(std::string_view text, std::size_t max_chars) {
  std::string out;
  std::size_t chars = 0;
  for (std::size_t i = 0; i < text.size(); ++chars) {
    if (chars >= max_chars) {
      out += "...";
      break;
    }
    const auto c = static_cast<unsigned char>(text[i]);
    if (const std::size_t n = c >= 0x80 ? utf8_printable(text, i) : 0; n > 0) {
      out.append(text.substr(i, n));
      i += n;
      continue;
    }
    ++i;
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\\':
        out += "\\\\";
        break;
      default:
        if (c < 0x20 || c >= 0x7f) {
          out += fmt::format("\\x{:02x}", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

namespace detail {

bool is_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    char32_t cp = 0;
    const std::size_t n = utf8_sequence(text, i, cp);
    if (n == 0) {
      return false;
    }
    i += n;
  }
  return true;
}

}  // namespace detail

}  // namespace pathlift
