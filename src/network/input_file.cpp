// Input files read under a bound (io.hpp's read_input_file, input_file.hpp): regular files by
// their size, streams chunk by chunk with their bytes checked as they arrive.

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string_view>
#include <utility>

#include "pathlift/error.hpp"
#include "pathlift/io.hpp"
#include "pathlift/limits.hpp"
#include "src/network/input_file.hpp"

namespace pathlift {

std::size_t max_input_bytes(InputKind kind, std::size_t max_memory) {
  return effective_max_memory(max_memory) / static_cast<std::size_t>(kind);
}

namespace detail {

InputFile::InputFile(InputFile&& other) noexcept
    : m_fd(std::exchange(other.m_fd, -1)),
      m_regular(other.m_regular),
      m_size(other.m_size),
      m_path(std::move(other.m_path)),
      m_what(std::move(other.m_what)),
      m_max_bytes(other.m_max_bytes) {}

InputFile& InputFile::operator=(InputFile&& other) noexcept {
  if (this != &other) {
    if (m_fd >= 0) {
      ::close(m_fd);
    }
    m_fd = std::exchange(other.m_fd, -1);
    m_regular = other.m_regular;
    m_size = other.m_size;
    m_path = std::move(other.m_path);
    m_what = std::move(other.m_what);
    m_max_bytes = other.m_max_bytes;
  }
  return *this;
}

InputFile::~InputFile() {
  if (m_fd >= 0) {
    ::close(m_fd);
  }
}

namespace {

TooLarge too_large(std::string_view what, const std::string& path, std::size_t max_bytes) {
  return TooLarge(fmt::format(
      "{} '{}' is too large to read: more than {} ({} bytes), the most a "
      "file of its kind may hold under the memory limit",
      what, printable(path, 200), format_bytes(static_cast<double>(max_bytes)), max_bytes));
}

FormatError cannot_read(std::string_view what, const std::string& path) {
  return FormatError(
      fmt::format("cannot read {} '{}': {}", what, printable(path, 200), std::strerror(errno)));
}

}  // namespace

InputFile open_input_file(const std::string& path, std::size_t max_bytes, std::string_view what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw FormatError(
        fmt::format("cannot open {} '{}': {}", what, printable(path, 200), std::strerror(errno)));
  }
  InputFile file(fd, false, 0, path, std::string(what), max_bytes);  // closes fd on every way out
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    throw cannot_read(what, path);
  }
  if (S_ISDIR(st.st_mode)) {
    throw FormatError(
        fmt::format("cannot read {}: '{}' is a directory", what, printable(path, 200)));
  }
  if (S_ISREG(st.st_mode)) {
    if (static_cast<std::uint64_t>(st.st_size) > max_bytes) {
      throw too_large(what, path, max_bytes);
    }
    file.m_regular = true;
    file.m_size = static_cast<std::uint64_t>(st.st_size);
  }
  return file;
}

namespace {

/// Watches the bytes of a stream as they arrive (StreamFormat): problem() says why the bytes so
/// far cannot start a file of the format, or "" (not yet known, or plausible). Incremental:
/// each call reads only what arrived since the last one.
class StreamCheck {
 public:
  StreamCheck(StreamFormat format, std::size_t max_bytes)
      : m_format(format), m_max_bytes(max_bytes) {}

  std::string problem(std::string_view bytes) {
    if (m_format == StreamFormat::json_or_onnx) {
      const auto first = bytes.find_first_not_of(" \t\n\r\f\v");
      if (first == std::string_view::npos) {
        return {};
      }
      m_format = bytes[first] == '{' ? StreamFormat::json : StreamFormat::onnx;
    }
    switch (m_format) {
      case StreamFormat::any:
      case StreamFormat::json_or_onnx:
        return {};
      case StreamFormat::json: {
        const auto first = bytes.find_first_not_of(" \t\n\r\f\v");
        if (first == std::string_view::npos || bytes[first] == '{') {
          if (first != std::string_view::npos) {
            m_format = StreamFormat::any;  // decided
          }
          return {};
        }
        return fmt::format("byte {} is {}, where a JSON object starts with '{{'", first,
                           byte_name(bytes[first]));
      }
      case StreamFormat::npy: {
        constexpr std::string_view magic = "\x93NUMPY";
        const std::size_t n = std::min(bytes.size(), magic.size());
        for (std::size_t i = 0; i < n; ++i) {
          if (bytes[i] != magic[i]) {
            return fmt::format("byte {} is {}: not the .npy magic \\x93NUMPY", i,
                               byte_name(bytes[i]));
          }
        }
        if (n == magic.size()) {
          m_format = StreamFormat::any;
        }
        return {};
      }
      case StreamFormat::text: {
        const auto nul = bytes.find('\0', m_next);
        m_next = bytes.size();
        return nul == std::string_view::npos
                   ? std::string()
                   : fmt::format("byte {} is a NUL byte: not a text file", nul);
      }
      case StreamFormat::onnx:
        return protobuf_problem(bytes);
    }
    return {};
  }

 private:
  static std::string byte_name(char c) {
    const auto u = static_cast<unsigned char>(c);
    return u >= 0x20 && u < 0x7f ? fmt::format("'{}'", c) : fmt::format("0x{:02x}", u);
  }

  /// A varint at bytes[at...]: its value and end, or nullopt while incomplete; `bad` when it
  /// runs over 10 bytes.
  static std::optional<std::pair<std::uint64_t, std::size_t>> varint(std::string_view bytes,
                                                                     std::size_t at, bool& bad) {
    std::uint64_t value = 0;
    for (std::size_t i = 0; i < 10; ++i) {
      if (at + i >= bytes.size()) {
        return std::nullopt;
      }
      const auto b = static_cast<unsigned char>(bytes[at + i]);
      value |= static_cast<std::uint64_t>(b & 0x7f) << (7 * i);
      if ((b & 0x80) == 0) {
        return std::pair{value, at + i + 1};
      }
    }
    bad = true;
    return std::nullopt;
  }

  /// The top-level fields of a protobuf message (ONNX's ModelProto), as far as they arrived.
  std::string protobuf_problem(std::string_view bytes) {
    while (m_next < bytes.size()) {
      bool bad = false;
      const auto tag = varint(bytes, m_next, bad);
      if (bad) {
        return fmt::format("the field tag at byte {} runs over 10 bytes: not protobuf", m_next);
      }
      if (!tag) {
        return {};
      }
      const std::uint64_t field = tag->first >> 3;
      const auto wire = static_cast<unsigned>(tag->first & 7);
      // ModelProto's fields are numbered up to 25 (onnx.proto): 1000 leaves room for new ones.
      if (field == 0 || field > 1000 || (wire != 0 && wire != 1 && wire != 2 && wire != 5)) {
        return fmt::format(
            "byte {} ({}) is no protobuf field (field {}, wire type {}): not an ONNX model", m_next,
            byte_name(bytes[m_next]), field, wire);
      }
      std::size_t end = tag->second;
      if (wire == 0) {
        const auto value = varint(bytes, end, bad);
        if (bad) {
          return fmt::format("the varint at byte {} runs over 10 bytes: not protobuf", end);
        }
        if (!value) {
          return {};
        }
        end = value->second;
      } else if (wire == 1 || wire == 5) {
        end += wire == 1 ? 8 : 4;
      } else {
        const auto length = varint(bytes, end, bad);
        if (bad) {
          return fmt::format("the length at byte {} runs over 10 bytes: not protobuf", end);
        }
        if (!length) {
          return {};
        }
        if (length->first > m_max_bytes - std::min(m_max_bytes, length->second)) {
          return fmt::format(
              "the field at byte {} declares {} bytes, more than the {} bytes a file of its kind "
              "may hold under the memory limit",
              m_next, length->first, m_max_bytes);
        }
        end = length->second + static_cast<std::size_t>(length->first);
      }
      m_next = end;
    }
    return {};
  }

  StreamFormat m_format;
  std::size_t m_max_bytes;
  std::size_t m_next = 0;  // onnx: where the next top-level field starts; text: bytes seen
};

}  // namespace

std::string InputFile::read_all(StreamFormat format) const {
  // Chunks, growing: a pipe or a device has no size, and a regular file may grow meanwhile.
  constexpr std::size_t chunk = std::size_t{1} << 16;
  std::string bytes;
  if (m_regular) {
    // With room for the last read, which finds the end: no reallocation, no second copy.
    bytes.reserve(static_cast<std::size_t>(m_size) + chunk + 1);
  }
  StreamCheck check(m_regular ? StreamFormat::any : format, m_max_bytes);
  std::size_t size = 0;
  for (;;) {
    if (size > m_max_bytes) {
      throw too_large(m_what, m_path, m_max_bytes);
    }
    const std::size_t room = m_max_bytes - size;
    const std::size_t want = room < chunk ? room + 1 : chunk;  // one past the bound: too large
    if (bytes.capacity() < size + want) {
      // Doubling, but never past the bound + 1 byte.
      bytes.reserve(std::min(std::max(2 * bytes.capacity(), size + want), m_max_bytes + 1));
    }
    bytes.resize(size + want);
    const ssize_t got = ::read(m_fd, bytes.data() + size, want);
    if (got < 0) {
      if (errno == EINTR) {
        continue;
      }
      throw cannot_read(m_what, m_path);
    }
    if (got == 0) {
      break;
    }
    size += static_cast<std::size_t>(got);
    if (const std::string problem = check.problem(std::string_view(bytes.data(), size));
        !problem.empty()) {
      throw FormatError(fmt::format("{} '{}' (a stream, refused as it is read): {}", m_what,
                                    printable(m_path, 200), problem));
    }
  }
  bytes.resize(size);
  return bytes;
}

void InputFile::read_at(std::uint64_t offset, std::size_t n, char* out) const {
  while (n > 0) {
    const ssize_t got = ::pread(m_fd, out, n, static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR) {
        continue;
      }
      throw cannot_read(m_what, m_path);
    }
    if (got == 0) {
      throw FormatError(
          fmt::format("cannot read {} '{}': it ends at byte {}, before the {} "
                      "bytes it held when opened (it changed meanwhile)",
                      m_what, printable(m_path, 200), offset, m_size));
    }
    offset += static_cast<std::uint64_t>(got);
    out += got;
    n -= static_cast<std::size_t>(got);
  }
}

}  // namespace detail

std::string read_input_file(const std::string& path, std::size_t max_bytes, std::string_view what,
                            StreamFormat format) {
  return detail::open_input_file(path, max_bytes, what).read_all(format);
}

}  // namespace pathlift
