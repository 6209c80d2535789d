#pragma once
// Building blocks of the reports' JSON forms (to_json): JSON has no inf or NaN, so a number that
// is not finite is written null, and so is an absent value.

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "pathlift/error.hpp"

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

/// A JSON value for an error message, never a whole document: nested arrays and objects below
/// depth 2 shown as [...] and {...}, at most 80 characters ("..." when cut). Bounded recursion,
/// so a value nested 100,000 deep cannot exhaust the stack (J::dump would).
template <class J>
std::string excerpt(const J& value) {
  constexpr std::size_t max_chars = 80;
  std::string out;
  const auto put = [&](const auto& self, const J& v, int depth) -> void {
    if (out.size() > max_chars) {
      return;
    }
    if (!v.is_structured()) {
      const std::string text = v.dump();
      out.append(text, 0, std::min(text.size(), max_chars + 1));
      return;
    }
    const bool array = v.is_array();
    if (depth >= 2 && !v.empty()) {
      out += array ? "[...]" : "{...}";
      return;
    }
    out += array ? "[" : "{";
    bool first = true;
    for (auto it = v.begin(); it != v.end() && out.size() <= max_chars; ++it) {
      out += first ? "" : ", ";
      first = false;
      if (!array) {
        out += J(it.key()).dump() + ": ";
      }
      self(self, *it, depth + 1);
    }
    out += array ? "]" : "}";
  };
  put(put, value, 0);
  if (out.size() > max_chars) {
    out.resize(max_chars - 3);
    out += "...";
  }
  return out;
}

/// JSON text that must hold an object (a network or layer-graph file), as `J`. Throws
/// FormatError "invalid JSON: ..." or "a <kind> file must hold a JSON object, not array".
template <class J>
J parse_json_object(std::string_view text, std::string_view kind) {
  J doc;
  try {
    doc = J::parse(text.begin(), text.end());
  } catch (const typename J::exception& e) {
    throw FormatError(fmt::format("invalid JSON: {}", e.what()));
  }
  if (!doc.is_object()) {
    throw FormatError(
        fmt::format("a {} file must hold a JSON object, not {}", kind, doc.type_name()));
  }
  return doc;
}

/// The files' readable layout: one key a line, and one entry a line for the (non-empty) lists
/// named in `per_line` (a pretty-printer would spend four lines on every edge). indent < 0:
/// one line.
inline std::string dump_readable(const Json& doc, int indent,
                                 std::initializer_list<std::string_view> per_line) {
  if (indent < 0) {
    return doc.dump();
  }
  const std::string pad(static_cast<std::size_t>(indent), ' ');
  std::string out = "{";
  bool first = true;
  for (const auto& [key, value] : doc.items()) {
    out += first ? "\n" : ",\n";
    first = false;
    out += pad + Json(key).dump() + ": ";
    if (!value.empty() && value.is_array() &&
        std::find(per_line.begin(), per_line.end(), key) != per_line.end()) {
      out += "[\n";
      for (std::size_t k = 0; k < value.size(); ++k) {
        out += pad + pad + value[k].dump() + (k + 1 < value.size() ? ",\n" : "\n");
      }
      out += pad + "]";
    } else {
      out += value.dump();
    }
  }
  out += "\n}";
  return out;
}

}  // namespace pathlift::detail
