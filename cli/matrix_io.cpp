#include "matrix_io.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <limits>
#include <string_view>
#include <utility>

#include "common.hpp"
#include "npz.hpp"
#include "output_file.hpp"
#include "pathlift/error.hpp"

namespace pathlift::cli {

std::string file_extension(const std::string& path) {
  const auto dot = path.find_last_of('.');
  const auto slash = path.find_last_of('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) {
    return "";
  }
  std::string ext = path.substr(dot + 1);
  for (char& c : ext) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return ext;
}

namespace {

template <class T>
void append_number(fmt::memory_buffer& buf, T x) {
  if constexpr (std::is_integral_v<T>) {
    fmt::format_to(std::back_inserter(buf), "{}", x);
  } else if constexpr (sizeof(T) == 4) {
    fmt::format_to(std::back_inserter(buf), "{:.9g}", x);
  } else {
    fmt::format_to(std::back_inserter(buf), "{:.17g}", x);
  }
}

template <class T>
void write_npy(OutputFile& out, const T* data, const std::vector<Index>& shape) {
  const std::string header = npy_header(npy_descr<T>(), shape);
  out.write(header.data(), header.size());
  std::size_t n = 1;
  for (Index s : shape) {
    n *= static_cast<std::size_t>(s);
  }
  out.write_large(data, n * sizeof(T));
}

}  // namespace

FileFormat format_of(const std::string& path) {
  if (path == "-") {
    return FileFormat::txt;
  }
  constexpr std::pair<std::string_view, FileFormat> formats[] = {{"mtx", FileFormat::mtx},
                                                                 {"npy", FileFormat::npy},
                                                                 {"npz", FileFormat::npz},
                                                                 {"txt", FileFormat::txt},
                                                                 {"csv", FileFormat::csv}};
  const std::string ext = file_extension(path);
  for (const auto& [name, format] : formats) {
    if (ext == name) {
      return format;
    }
  }
  throw FormatError(fmt::format(
      "'{}': unknown output format '.{}' (use .mtx, .npy, .npz, .txt or .csv, or - for stdout)",
      path, ext));
}

FileFormat output_format(const std::string& path, Content content, std::string_view hint) {
  check_output_path(path);
  // Content with one format each; `to_stdout`: "-" takes it too.
  struct Single {
    Content content;
    std::string_view ext;
    FileFormat format;
    bool to_stdout;
    std::string_view what;
  };
  constexpr Single singles[] = {
      {Content::text, "txt", FileFormat::txt, true, "this command writes text"},
      {Content::table, "csv", FileFormat::csv, false, "this command writes a CSV table"},
      {Content::network, "json", FileFormat::json, true,
       "a network is written as pathlift-network JSON"}};
  for (const Single& s : singles) {
    if (s.content == content) {
      if (path == "-" ? !s.to_stdout : file_extension(path) != s.ext) {
        throw FormatError(fmt::format("'{}': {}: name it .{}{}{}", path, s.what, s.ext,
                                      s.to_stdout ? ", or - for stdout" : "", hint));
      }
      return s.format;
    }
  }
  const FileFormat f = format_of(path);
  if (f == FileFormat::npy && content == Content::sparse) {
    throw FormatError(fmt::format(
        "'{}': .npy holds a dense array; write a sparse matrix as .npz (scipy.sparse.load_npz), "
        ".mtx, .txt or .csv{}",
        path, hint));
  }
  if (f == FileFormat::npz && content != Content::sparse) {
    throw FormatError(fmt::format(
        "'{}': .npz holds a sparse matrix (scipy.sparse.load_npz); write a {} as .npy, .mtx, "
        ".txt or .csv{}",
        path, content == Content::vector ? "vector" : "dense matrix", hint));
  }
  return f;
}

template <class T>
void write_vector(const std::string& path, std::span<const T> values) {
  const FileFormat f = output_format(path, Content::vector);
  OutputFile out(path);
  if (f == FileFormat::npy) {
    write_npy(out, values.data(), {static_cast<Index>(values.size())});
  } else {
    fmt::memory_buffer buf;
    if (f == FileFormat::mtx) {
      fmt::format_to(std::back_inserter(buf), "%%MatrixMarket matrix array real general\n{} 1\n",
                     values.size());
    }
    for (std::size_t i = 0; i < values.size(); ++i) {
      append_number(buf, values[i]);
      buf.push_back('\n');
      out.flush_if_large(buf, static_cast<double>(i) / static_cast<double>(values.size()));
    }
    out.write(buf);
  }
  out.commit();
}

namespace {

/// Writes CSR entries; `value(k)` gives entry k's value (unused for a pattern); `values` are
/// the entries as .npz data.
template <class T, class Value>
void write_sparse(const std::string& path, const CsrPattern& p, bool pattern, Value value,
                  ArrayBytes values) {
  const FileFormat f = output_format(path, Content::sparse);
  OutputFile out(path);
  if (f == FileFormat::npz) {
    const std::vector<NpzMember> members = csr_npz_members(p, std::move(values));
    write_npz([&](const void* data, std::size_t bytes) { out.write(data, bytes); }, members,
              [&](double fraction) { out.progress(fraction); });
    out.commit();
    return;
  }
  fmt::memory_buffer buf;
  const char sep = f == FileFormat::csv ? ',' : ' ';
  const Index base = f == FileFormat::mtx ? 1 : 0;
  if (f == FileFormat::mtx) {
    fmt::format_to(std::back_inserter(buf),
                   "%%MatrixMarket matrix coordinate {} general\n{} {} {}\n",
                   pattern ? "pattern" : "real", p.rows, p.cols, p.nnz());
  }
  const auto off = p.offsets();
  const auto idx = p.indices();
  for (Index r = 0; r < p.rows; ++r) {
    for (Index k = off[static_cast<std::size_t>(r)]; k < off[static_cast<std::size_t>(r) + 1];
         ++k) {
      fmt::format_to(std::back_inserter(buf), "{}{}{}", r + base, sep,
                     idx[static_cast<std::size_t>(k)] + base);
      if (!pattern) {
        buf.push_back(sep);
        append_number<T>(buf, value(k));
      } else if (f != FileFormat::mtx) {
        buf.push_back(sep);
        buf.push_back('1');
      }
      buf.push_back('\n');
    }
    out.flush_if_large(buf, static_cast<double>(r) / static_cast<double>(p.rows));
  }
  out.write(buf);
  out.commit();
}

}  // namespace

template <class T>
void write_csr(const std::string& path, const CsrMatrix<T>& m) {
  write_sparse<T>(
      path, m.pattern, false, [&](Index k) { return m.values[static_cast<std::size_t>(k)]; },
      array_bytes(std::span<const T>(m.values.data(), m.values.size())));
}

void write_pattern(const std::string& path, const CsrPattern& b) {
  // As pathlift.skeleton gives B in Python: float64 ones.
  write_sparse<double>(
      path, b, true, [](Index) { return 1.0; },
      constant_bytes(static_cast<std::size_t>(b.nnz()), 1.0));
}

template <class T>
void write_dense(const std::string& path, const T* data, Index rows, Index cols) {
  const FileFormat f = output_format(path, Content::dense);
  OutputFile out(path);
  if (f == FileFormat::npy) {
    write_npy(out, data, {rows, cols});
  } else {
    fmt::memory_buffer buf;
    const char sep = f == FileFormat::csv ? ',' : ' ';
    if (f == FileFormat::mtx) {
      // Matrix Market arrays are column-major.
      fmt::format_to(std::back_inserter(buf), "%%MatrixMarket matrix array real general\n{} {}\n",
                     rows, cols);
      for (Index c = 0; c < cols; ++c) {
        for (Index r = 0; r < rows; ++r) {
          append_number(buf, data[r * cols + c]);
          buf.push_back('\n');
        }
        out.flush_if_large(buf, static_cast<double>(c) / static_cast<double>(cols));
      }
    } else {
      for (Index r = 0; r < rows; ++r) {
        for (Index c = 0; c < cols; ++c) {
          if (c > 0) {
            buf.push_back(sep);
          }
          append_number(buf, data[r * cols + c]);
        }
        buf.push_back('\n');
        out.flush_if_large(buf, static_cast<double>(r) / static_cast<double>(rows));
      }
    }
    out.write(buf);
  }
  out.commit();
}

template void write_vector(const std::string&, std::span<const double>);
template void write_vector(const std::string&, std::span<const float>);
template void write_vector(const std::string&, std::span<const std::int64_t>);
template void write_csr(const std::string&, const CsrMatrix<double>&);
template void write_csr(const std::string&, const CsrMatrix<float>&);
template void write_dense(const std::string&, const double*, Index, Index);
template void write_dense(const std::string&, const float*, Index, Index);

}  // namespace pathlift::cli
