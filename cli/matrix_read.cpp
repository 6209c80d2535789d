#include "matrix_io.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string_view>

#include "common.hpp"
#include "pathlift/error.hpp"

namespace pathlift::cli {

// Reading vectors and matrices (declared in matrix_io.hpp); the writers are in matrix_io.cpp.

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw FormatError(fmt::format("cannot open '{}'", path));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

struct NpyArray {
  std::vector<Index> shape;
  std::vector<double> values;  // C order
};

std::string header_field(const std::string& header, const std::string& key,
                         const std::string& path) {
  const auto k = header.find("'" + key + "'");
  if (k == std::string::npos) {
    throw FormatError(fmt::format("'{}': .npy header has no '{}'", path, key));
  }
  const auto colon = header.find(':', k);
  auto start = header.find_first_not_of(' ', colon + 1);
  std::size_t end = 0;
  if (header[start] == '(') {
    end = header.find(')', start) + 1;
  } else if (header[start] == '\'' || header[start] == '"') {
    end = header.find(header[start], start + 1) + 1;
  } else {
    end = header.find_first_of(",}", start);
  }
  return header.substr(start, end - start);
}

NpyArray read_npy(const std::string& path) {
  const std::string bytes = read_file(path);
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
  if (pos + header_len > bytes.size()) {
    throw FormatError(fmt::format("'{}': truncated .npy header", path));
  }
  const std::string header = bytes.substr(pos, header_len);
  pos += header_len;
  std::string descr = header_field(header, "descr", path);
  descr = descr.substr(1, descr.size() - 2);
  const bool fortran = header_field(header, "fortran_order", path) == "True";
  const std::string shape_text = header_field(header, "shape", path);
  NpyArray a;
  {
    std::string inner = shape_text.substr(1, shape_text.size() - 2);
    std::stringstream ss(inner);
    std::string item;
    while (std::getline(ss, item, ',')) {
      if (item.find_first_not_of(' ') == std::string::npos) {
        continue;
      }
      a.shape.push_back(std::stoll(item));
    }
  }
  Index n = 1;
  for (Index s : a.shape) {
    n *= s;
  }
  std::size_t item_size = 0;
  const char kind = descr.size() >= 2 ? descr[1] : '?';
  const char order = descr.empty() ? '?' : descr[0];
  if (descr.size() >= 3) {
    item_size = static_cast<std::size_t>(std::stoi(descr.substr(2)));
  }
  if (order == '>' || (kind != 'f' && kind != 'i' && kind != 'u' && kind != 'b') ||
      !(item_size == 1 || item_size == 2 || item_size == 4 || item_size == 8) ||
      (kind == 'f' && item_size < 4)) {
    throw FormatError(fmt::format(
        "'{}': .npy dtype '{}' is not supported (use little-endian float64, float32 or integers)",
        path, descr));
  }
  if (bytes.size() - pos < static_cast<std::size_t>(n) * item_size) {
    throw FormatError(fmt::format("'{}': .npy data is truncated ({} values expected)", path, n));
  }
  a.values.resize(static_cast<std::size_t>(n));
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
  if (fortran && a.shape.size() == 2) {
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

/// Parses a number token; throws FormatError naming the location.
double parse_number(const std::string& token, const std::string& where, bool finite) {
  std::size_t used = 0;
  double x = 0;
  try {
    x = std::stod(token, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != token.size()) {
    throw FormatError(fmt::format("{}: '{}' is not a number", where, token));
  }
  if (finite && !std::isfinite(x)) {
    throw FormatError(fmt::format("{}: value {} is not finite", where, token));
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

std::vector<double> read_vector(const std::string& path, bool finite) {
  if (file_extension(path) == "npy") {
    NpyArray a = read_npy(path);
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
  for_each_text_row(read_file(path), [&](Index line_no, const std::vector<std::string>& tokens) {
    for (const auto& token : tokens) {
      out.push_back(parse_number(
          token, fmt::format("'{}', line {} (entry {})", path, line_no, out.size()), finite));
    }
  });
  return out;
}

Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> read_matrix(
    const std::string& path, bool finite) {
  using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  if (file_extension(path) == "npy") {
    NpyArray a = read_npy(path);
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
  for_each_text_row(read_file(path), [&](Index line_no, const std::vector<std::string>& tokens) {
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
