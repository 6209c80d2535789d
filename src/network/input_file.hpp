#pragma once
// An input file opened under a bound: the first step of read_input_file (io.hpp), shared with the
// readers that read a regular file in place, by ranges, instead of holding its bytes (the ONNX
// reader: a model's weights are read straight into theta).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "pathlift/io.hpp"

namespace pathlift::detail {

/// An open input file, its descriptor closed with it (move-only).
class InputFile {
 public:
  InputFile(int fd, bool regular, std::uint64_t size, std::string path, std::string what,
            std::size_t max_bytes)
      : m_fd(fd),
        m_regular(regular),
        m_size(size),
        m_path(std::move(path)),
        m_what(std::move(what)),
        m_max_bytes(max_bytes) {}
  InputFile(InputFile&& other) noexcept;
  InputFile& operator=(InputFile&& other) noexcept;
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile();

  [[nodiscard]] int fd() const { return m_fd; }
  /// A regular file: its size is known (and within the bound) and it can be read at any offset.
  [[nodiscard]] bool regular() const { return m_regular; }
  [[nodiscard]] std::uint64_t size() const { return m_size; }
  /// The path and the kind of file ("ONNX file"), for messages.
  [[nodiscard]] const std::string& path() const { return m_path; }
  [[nodiscard]] const std::string& what() const { return m_what; }

  /// The rest of the file's bytes (all of them for a file just opened), at most the bound:
  /// TooLarge naming the file past it (a pipe or a device is read up to the bound + 1 byte,
  /// refused before when its bytes cannot start a file of `format`: FormatError naming the
  /// byte). The buffer grows to at most the bound + 1 byte.
  [[nodiscard]] std::string read_all(StreamFormat format = StreamFormat::any) const;
  /// Bytes [offset, offset + n) of a regular file into `out`: FormatError naming the file when
  /// it cannot be read or ends before (it shrank since it was opened).
  void read_at(std::uint64_t offset, std::size_t n, char* out) const;

 private:
  friend InputFile open_input_file(const std::string& path, std::size_t max_bytes,
                                   std::string_view what);

  int m_fd = -1;
  bool m_regular = false;
  std::uint64_t m_size = 0;
  std::string m_path;
  std::string m_what;
  std::size_t m_max_bytes = 0;
};

/// Opens the file at `path` for reading: FormatError naming it (as `what`) when it is missing,
/// unreadable or a directory; TooLarge when a regular file holds more than `max_bytes`.
InputFile open_input_file(const std::string& path, std::size_t max_bytes, std::string_view what);

}  // namespace pathlift::detail
