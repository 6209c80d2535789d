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
#include <type_traits>
#include <vector>

#include "pathlift/count.hpp"
#include "pathlift/error.hpp"
#include "pathlift/scaled_real.hpp"

namespace pathlift::detail {

using Json = nlohmann::ordered_json;

/// x, or null when x is not finite.
inline Json number_or_null(double x) {
  return std::isfinite(x) ? Json(x) : Json(nullptr);
}

/// A note, or null when there is none (an empty text).
inline Json text_or_null(const std::string& text) {
  return text.empty() ? Json(nullptr) : Json(text);
}

/// A ScaledReal's value when it fits a double, else null (its log10 goes beside it).
inline Json scaled_value_json(const ScaledReal& x) {
  return x.fits_double() ? Json(x.value()) : Json(nullptr);
}

/// log10 |x|, or null for 0.
inline Json scaled_log10_json(const ScaledReal& x) {
  return number_or_null(x.log10());
}

/// A count: exact when it is, else its double (null beyond double's range).
inline Json count_json(const Count& c) {
  return c.exact() ? Json(c.value()) : number_or_null(c.approx());
}

/// A report member's JSON value: a number null when not finite, an absent optional null, an
/// enum its to_string name, anything else as nlohmann writes it.
template <class T>
Json json_value(const T& x) {
  if constexpr (std::is_enum_v<T>) {
    return Json(std::string(to_string(x)));
  } else {
    return Json(x);
  }
}
inline Json json_value(double x) {
  return number_or_null(x);
}
template <class T>
Json json_value(const std::optional<T>& x) {
  return x ? json_value(*x) : Json(nullptr);
}

}  // namespace pathlift::detail

/// The members of a report whose JSON key is their own name, in order, each by json_value:
/// PATHLIFT_JSON_MEMBERS(j, report, classes, sweeps) writes j["classes"] and j["sweeps"] (the
/// idiom of nlohmann's NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE, whose expansion macros it uses).
#define PATHLIFT_JSON_MEMBERS(json, report, ...)                                 \
  do {                                                                           \
    auto& pathlift_json_out = (json);                                            \
    const auto& pathlift_json_report = (report);                                 \
    NLOHMANN_JSON_EXPAND(NLOHMANN_JSON_PASTE(PATHLIFT_JSON_MEMBER, __VA_ARGS__)) \
  } while (false)
#define PATHLIFT_JSON_MEMBER(member) \
  pathlift_json_out[#member] = ::pathlift::detail::json_value(pathlift_json_report.member);

namespace pathlift::detail {

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

/// The DOM parser of nlohmann, refusing a number that a double cannot hold: one that overflows
/// (1e400 would be inf) or underflows to 0 (1e-400: non-zero digits, value 0). Subnormals
/// (1e-310) are kept. The message names where the number is ("weights"[3]) and its text.
template <class J>
class RangeCheckedParser : public nlohmann::detail::json_sax_dom_parser<J> {
  using Base = nlohmann::detail::json_sax_dom_parser<J>;

 public:
  using Base::Base;
  using typename Base::number_float_t;
  using typename Base::number_integer_t;
  using typename Base::number_unsigned_t;
  using typename Base::string_t;

  bool null() { return step(), Base::null(); }
  bool boolean(bool v) { return step(), Base::boolean(v); }
  bool number_integer(number_integer_t v) { return step(), Base::number_integer(v); }
  bool number_unsigned(number_unsigned_t v) { return step(), Base::number_unsigned(v); }
  bool number_float(number_float_t v, const string_t& text) {
    step();
    if (!std::isfinite(v)) {
      out_of_range(text, false);
    }
    if (v == 0) {  // a zero written with a non-zero digit before any exponent underflowed
      const auto digit = text.find_first_of("123456789");
      if (digit != string_t::npos && digit < text.find_first_of("eE")) {
        out_of_range(text, true);
      }
    }
    return Base::number_float(v, text);
  }
  /// nlohmann reports a number that overflows (1e400) as a parse error (out_of_range 406).
  template <class Exception>
  bool parse_error(std::size_t position, const std::string& token, const Exception& e) {
    if constexpr (std::is_same_v<Exception, nlohmann::detail::out_of_range>) {
      if (e.id == 406) {
        step();
        out_of_range(token, false);
      }
    }
    return Base::parse_error(position, token, e);
  }
  bool string(string_t& v) { return step(), Base::string(v); }
  bool start_object(std::size_t n) {
    step();
    nest();
    m_path.push_back({false, 0, {}});
    return Base::start_object(n);
  }
  bool key(string_t& k) {
    m_path.back().key = k;
    return Base::key(k);
  }
  bool end_object() {
    m_path.pop_back();
    return Base::end_object();
  }
  bool start_array(std::size_t n) {
    step();
    nest();
    m_path.push_back({true, 0, {}});
    return Base::start_array(n);
  }
  bool end_array() {
    m_path.pop_back();
    return Base::end_array();
  }

 private:
  struct Step {
    bool array;
    std::size_t next;  // the index of the next element of an array
    std::string key;   // the current key of an object
  };
  [[noreturn]] void out_of_range(const std::string& text, bool underflow) const {
    throw FormatError(fmt::format(
        "{}: the number {} is out of the range of a double ({})", where(), printable(text, 40),
        underflow ? "it underflows to 0; the smallest is 4.9e-324" : "the largest is 1.8e308"));
  }
  /// Refuses a value nested deeper than any pathlift file nests (4 levels), before the DOM
  /// holds it: a deep value would cost a recursion per level wherever it is copied or printed.
  void nest() const {
    if (m_path.size() >= k_max_depth) {
      throw FormatError(
          fmt::format("{}: values nested more than {} deep (pathlift's files nest "
                      "at most 4 levels)",
                      where(), k_max_depth));
    }
  }
  /// Before each value: the index of an array element.
  void step() {
    if (!m_path.empty() && m_path.back().array) {
      ++m_path.back().next;
    }
  }
  /// "weights"[3] or "layers"[2]["bias"]: the place of the current value (the outermost 8
  /// steps).
  [[nodiscard]] std::string where() const {
    std::string out;
    for (std::size_t i = 0; i < m_path.size() && i < 8; ++i) {
      const Step& s = m_path[i];
      if (s.array) {
        out += fmt::format("[{}]", s.next - 1);
      } else {
        const std::string key = printable(s.key, 40);
        out += i == 0 ? fmt::format("\"{}\"", key) : fmt::format("[\"{}\"]", key);
      }
    }
    return out.empty() ? "the document" : out + (m_path.size() > 8 ? "..." : "");
  }

  static constexpr std::size_t k_max_depth = 64;
  std::vector<Step> m_path;
};

/// JSON text that must hold an object (a network or layer-graph file), as `J`. Throws
/// FormatError "invalid JSON: ...", "a <kind> file must hold a JSON object, not array", or
/// "\"weights\"[3]: the number 1e-400 is out of the range of a double ..." (RangeCheckedParser).
template <class J>
J parse_json_object(std::string_view text, std::string_view kind) {
  J doc;
  try {
    RangeCheckedParser<J> parser(doc);
    J::sax_parse(text.begin(), text.end(), &parser);
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
