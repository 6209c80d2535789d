#include "matrix_io.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>
#include <string_view>

#include "common.hpp"
#include "pathlift/error.hpp"
#include "pathlift/io.hpp"

namespace pathlift::cli {

// Reading vectors and matrices (declared in matrix_io.hpp); the writers are in matrix_io.cpp.

namespace {

struct NpyArray {
  std::vector<Index> shape;
  std::vector<double> values;  // C order
};

/// The header of a .npy file, a Python dict literal such as
/// {'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }, parsed strictly: every index
/// checked, each shape entry a non-negative integer that fits in an Index.
class NpyHeader {
 public:
  NpyHeader(std::string_view text, const std::string& path) : m_text(text), m_path(path) {}

  std::string descr;
  bool fortran = false;
  std::vector<Index> shape;

  void parse() {
    bool has_descr = false;
    bool has_fortran = false;
    bool has_shape = false;
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') {
        break;
      }
      const std::string key = quoted_string();
      skip_space();
      expect(':');
      skip_space();
      if (key == "descr") {
        descr = quoted_string();
        has_descr = true;
      } else if (key == "fortran_order") {
        fortran = boolean();
        has_fortran = true;
      } else if (key == "shape") {
        shape = tuple();
        has_shape = true;
      } else {
        fail(fmt::format("unknown key '{}'", printable(key)));
      }
      skip_space();
      if (peek() == ',') {
        ++m_pos;
      } else if (peek() != '}') {
        fail("expected ',' or '}'");
      }
    }
    for (const auto& [has, key] :
         {std::pair{has_descr, "descr"}, std::pair{has_fortran, "fortran_order"},
          std::pair{has_shape, "shape"}}) {
      if (!has) {
        throw FormatError(fmt::format("'{}': .npy header has no '{}'", m_path, key));
      }
    }
  }

 private:
  [[noreturn]] void fail(std::string_view what) const {
    throw FormatError(fmt::format("'{}': bad .npy header at byte {}: {} (header: {})", m_path,
                                  m_pos, what, printable(m_text, 120)));
  }
  [[nodiscard]] char peek() const { return m_pos < m_text.size() ? m_text[m_pos] : '\0'; }
  void skip_space() {
    while (peek() == ' ') {
      ++m_pos;
    }
  }
  void expect(char c) {
    if (peek() != c) {
      fail(fmt::format("expected '{}'", c));
    }
    ++m_pos;
  }
  std::string quoted_string() {
    const char quote = peek();
    if (quote != '\'' && quote != '"') {
      fail("expected a quoted string");
    }
    const auto close = m_text.find(quote, m_pos + 1);
    if (close == std::string_view::npos) {
      fail("unterminated string");
    }
    std::string out(m_text.substr(m_pos + 1, close - m_pos - 1));
    m_pos = close + 1;
    return out;
  }
  bool boolean() {
    for (const auto& [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      if (m_text.substr(m_pos, std::strlen(word)) == word) {
        m_pos += std::strlen(word);
        return value;
      }
    }
    fail("'fortran_order' must be True or False");
  }
  /// (3, 4), (5,) or (): non-negative integers.
  std::vector<Index> tuple() {
    constexpr std::size_t max_dims = 32;  // NumPy's own limit is 64; pathlift reads 1-D and 2-D
    std::vector<Index> out;
    expect('(');
    while (true) {
      skip_space();
      if (peek() == ')') {
        ++m_pos;
        return out;
      }
      if (std::isdigit(static_cast<unsigned char>(peek())) == 0) {
        fail("a shape entry must be a non-negative integer");
      }
      Index value = 0;
      while (std::isdigit(static_cast<unsigned char>(peek())) != 0) {
        if (__builtin_mul_overflow(value, Index{10}, &value) ||
            __builtin_add_overflow(value, Index{peek() - '0'}, &value)) {
          fail("a shape entry is too large");
        }
        ++m_pos;
      }
      if (out.size() == max_dims) {
        fail(fmt::format("more than {} dimensions", max_dims));
      }
      out.push_back(value);
      skip_space();
      if (peek() == ',') {
        ++m_pos;
      } else if (peek() != ')') {
        fail("expected ',' or ')' in the shape");
      }
    }
  }

  std::string_view m_text;
  const std::string& m_path;
  std::size_t m_pos = 0;
};

NpyArray read_npy(const std::string& path, std::size_t max_memory) {
  const std::string bytes = read_input_file(path, max_input_bytes(InputKind::binary, max_memory),
                                            ".npy file", StreamFormat::npy);
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) {
    throw FormatError(fmt::format("'{}' is not a .npy file (bad magic)", path));
  }
  const auto major = static_cast<unsigned char>(bytes[6]);
  std::size_t header_len = 0;
  std::size_t pos = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) |
                 (static_cast<std::size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    pos = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) {
      throw FormatError(fmt::format("'{}': truncated .npy header", path));
    }
    for (int i = 0; i < 4; ++i) {
      header_len |= static_cast<std::size_t>(
                        static_cast<unsigned char>(bytes[8 + static_cast<std::size_t>(i)]))
                    << (8 * i);
    }
    pos = 12;
  } else {
    throw FormatError(fmt::format("'{}': unsupported .npy version {}", path, major));
  }
  if (header_len > bytes.size() - pos) {
    throw FormatError(fmt::format("'{}': truncated .npy header ({} bytes announced, {} present)",
                                  path, header_len, bytes.size() - pos));
  }
  NpyHeader header(std::string_view(bytes).substr(pos, header_len), path);
  header.parse();
  pos += header_len;
  const std::string descr = header.descr;
  const bool fortran = header.fortran;
  NpyArray a;
  a.shape = header.shape;
  Index n = 1;
  for (Index s : a.shape) {
    if (__builtin_mul_overflow(n, s, &n)) {
      throw FormatError(fmt::format("'{}': .npy shape ({}) has more entries than an index holds",
                                    path, fmt::join(a.shape, ", ")));
    }
  }
  // "<f8": byte order, kind, item size in one digit.
  const char order = descr.size() == 3 ? descr[0] : '?';
  const char kind = descr.size() == 3 ? descr[1] : '?';
  const std::size_t item_size = descr.size() == 3 && descr[2] >= '1' && descr[2] <= '8'
                                    ? static_cast<std::size_t>(descr[2] - '0')
                                    : 0;
  if ((order != '<' && order != '|' && order != '=') ||
      (kind != 'f' && kind != 'i' && kind != 'u' && kind != 'b') ||
      !(item_size == 1 || item_size == 2 || item_size == 4 || item_size == 8) ||
      (kind == 'f' && item_size < 4)) {
    throw FormatError(fmt::format(
        "'{}': .npy dtype '{}' is not supported (use little-endian float64, float32 or integers)",
        path, printable(descr)));
  }
  // The data is in the file: a shape cannot make the reader allocate more than the file holds.
  if (static_cast<std::size_t>(n) > (bytes.size() - pos) / item_size) {
    throw FormatError(
        fmt::format("'{}': .npy data is truncated: shape ({}) needs {} values of {} "
                    "bytes, the file holds {} bytes of data",
                    path, fmt::join(a.shape, ", "), n, item_size, bytes.size() - pos));
  }
  a.values.assign(static_cast<std::size_t>(n), 0.0);
  const char* p = bytes.data() + pos;
  for (Index i = 0; i < n; ++i) {
    const char* q = p + static_cast<std::size_t>(i) * item_size;
    double x = 0;
    if (kind == 'f' && item_size == 8) {
      std::memcpy(&x, q, 8);
    } else if (kind == 'f') {
      float f = 0;
      std::memcpy(&f, q, 4);
      x = f;
    } else if (kind == 'i') {
      std::int64_t v = 0;
      switch (item_size) {
        case 1:
          v = *reinterpret_cast<const std::int8_t*>(q);
          break;  // NOLINT
        case 2: {
          std::int16_t t = 0;
          std::memcpy(&t, q, 2);
          v = t;
          break;
        }
        case 4: {
          std::int32_t t = 0;
          std::memcpy(&t, q, 4);
          v = t;
          break;
        }
        default:
          std::memcpy(&v, q, 8);
      }
      x = static_cast<double>(v);
    } else {
      std::uint64_t v = 0;
      std::memcpy(&v, q, item_size);
      x = static_cast<double>(v);
    }
    a.values[static_cast<std::size_t>(i)] = x;
  }
  if (fortran && a.shape.size() == 2 && n > 0) {
    std::vector<double> c(a.values.size());
    const Index rows = a.shape[0];
    const Index cols = a.shape[1];
    for (Index r = 0; r < rows; ++r) {
      for (Index k = 0; k < cols; ++k) {
        c[static_cast<std::size_t>(r * cols + k)] =
            a.values[static_cast<std::size_t>(k * rows + r)];
      }
    }
    a.values = std::move(c);
  }
  return a;
}

/// Parses a number token; throws FormatError naming the location. Subnormals (1e-310) are
/// numbers; a token beyond a double (1e400, or 1e-400 that would read as 0) is refused.
double parse_number(const std::string& token, const std::string& where, bool finite) {
  char* end = nullptr;
  errno = 0;
  const double x = std::strtod(token.c_str(), &end);
  const bool range = errno == ERANGE;
  if (token.empty() || end != token.c_str() + token.size() ||
      std::isspace(static_cast<unsigned char>(token[0])) != 0) {
    throw FormatError(fmt::format("{}: '{}' is not a number", where, printable(token)));
  }
  if (range && (std::isinf(x) || x == 0)) {
    throw FormatError(fmt::format(
        "{}: {} is out of the range of a double ({})", where, printable(token),
        x == 0 ? "it underflows to 0; the smallest is 4.9e-324" : "the largest is 1.8e308"));
  }
  if (finite && !std::isfinite(x)) {
    throw FormatError(fmt::format("{}: value {} is not finite", where, printable(token)));
  }
  return x;
}

std::vector<std::string> split_tokens(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool saw_comma = false;
  for (char c : line) {
    if (c == ',' || std::isspace(static_cast<unsigned char>(c)) != 0) {
      if (!cur.empty() || (c == ',' && saw_comma)) {
        out.push_back(cur);
      }
      saw_comma = c == ',';
      cur.clear();
    } else {
      cur += c;
      saw_comma = false;
    }
  }
  if (!cur.empty()) {
    out.push_back(cur);
  }
  return out;
}

/// Calls row(line number, tokens) for each line of `text` that is neither blank nor a '#'
/// comment.
template <class Row>
void for_each_text_row(const std::string& text, Row&& row) {
  std::istringstream lines(text);
  std::string line;
  Index line_no = 0;
  while (std::getline(lines, line)) {
    ++line_no;
    const auto first = line.find_first_not_of(" \t\r");
    if (first != std::string::npos && line[first] != '#') {
      row(line_no, split_tokens(line));
    }
  }
}

void check_finite_values(const std::vector<double>& v, Index cols, const std::string& path) {
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!std::isfinite(v[i])) {
      throw FormatError(fmt::format("'{}': row {}, column {}: value {} is not finite", path,
                                    static_cast<Index>(i) / cols, static_cast<Index>(i) % cols,
                                    v[i]));
    }
  }
}

}  // namespace

std::vector<double> read_vector(const std::string& path, bool finite, std::size_t max_memory) {
  if (file_extension(path) == "npy") {
    NpyArray a = read_npy(path, max_memory);
    if (a.shape.size() > 2 || (a.shape.size() == 2 && a.shape[0] != 1 && a.shape[1] != 1)) {
      throw FormatError(fmt::format("'{}': expected a vector, got an array of shape ({})", path,
                                    fmt::join(a.shape, ", ")));
    }
    if (finite) {
      for (std::size_t i = 0; i < a.values.size(); ++i) {
        if (!std::isfinite(a.values[i])) {
          throw FormatError(fmt::format("'{}': entry {} is not finite: {}", path, i, a.values[i]));
        }
      }
    }
    return a.values;
  }
  std::vector<double> out;
  const std::string text = read_input_file(path, max_input_bytes(InputKind::text, max_memory),
                                           "text file", StreamFormat::text);
  for_each_text_row(text, [&](Index line_no, const std::vector<std::string>& tokens) {
    for (const auto& token : tokens) {
      out.push_back(parse_number(
          token, fmt::format("'{}', line {} (entry {})", path, line_no, out.size()), finite));
    }
  });
  return out;
}

Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> read_matrix(
    const std::string& path, bool finite, std::size_t max_memory) {
  using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  if (file_extension(path) == "npy") {
    NpyArray a = read_npy(path, max_memory);
    if (a.shape.empty() || a.shape.size() > 2) {
      throw FormatError(fmt::format("'{}': expected a 2-D array (n x r), got {} dimensions", path,
                                    a.shape.size()));
    }
    const Index rows = a.shape[0];
    const Index cols = a.shape.size() == 2 ? a.shape[1] : 1;
    if (rows == 0 || cols == 0) {
      throw FormatError(fmt::format("'{}' is empty (shape {} x {})", path, rows, cols));
    }
    if (finite) {
      check_finite_values(a.values, cols, path);
    }
    Matrix m(rows, cols);
    std::copy(a.values.begin(), a.values.end(), m.data());
    return m;
  }
  std::vector<double> values;
  Index cols = -1;
  Index rows = 0;
  const std::string text = read_input_file(path, max_input_bytes(InputKind::text, max_memory),
                                           "text file", StreamFormat::text);
  for_each_text_row(text, [&](Index line_no, const std::vector<std::string>& tokens) {
    if (cols < 0) {
      cols = static_cast<Index>(tokens.size());
    } else if (static_cast<Index>(tokens.size()) != cols) {
      throw FormatError(fmt::format("'{}', line {}: row {} has {} values but the first row has {}",
                                    path, line_no, rows, tokens.size(), cols));
    }
    for (std::size_t c = 0; c < tokens.size(); ++c) {
      values.push_back(parse_number(
          tokens[c], fmt::format("'{}', line {} (row {}, column {})", path, line_no, rows, c),
          finite));
    }
    ++rows;
  });
  if (rows == 0 || cols <= 0) {
    throw FormatError(fmt::format("'{}' is empty: no data rows", path));
  }
  Matrix m(rows, cols);
  std::copy(values.begin(), values.end(), m.data());
  return m;
}

}  // namespace pathlift::cli
