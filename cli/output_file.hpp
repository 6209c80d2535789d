#pragma once
// Output files of the CLI, written in full or not at all: every file a command writes (-o, --csv)
// goes through OutputFile. The bytes go to a new hidden temporary file in the target's folder,
// `.NAME.XXXXXX.tmp`, created with O_CREAT | O_EXCL (mkstemp: no symlink is followed, no
// existing file is reused), renamed onto the target when complete. Every write, the close and
// the rename are checked; on any failure, and on SIGINT, SIGTERM or SIGHUP, the temporary is
// removed (docs/cli.md#output-files).

#include <fmt/format.h>

#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

#include "common.hpp"

namespace pathlift::cli {

/// pathlift::check_output_path (io.hpp), "-" (stdout) passing.
void check_output_path(const std::string& path);

/// A file written to a temporary name and renamed to `path` by commit(), or stdout for "-";
/// the destructor removes the temporary when commit() was not reached (an exception). The
/// file gets the permissions of a new file (0666 & ~umask). A write, flush, close or rename that
/// fails throws FormatError("cannot write 'PATH': strerror"). A progress bar ("writing PATH")
/// shows on a terminal when a write takes over a second.
class OutputFile {
 public:
  explicit OutputFile(std::string path);
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile();

  void write(const void* data, std::size_t bytes);
  void write(std::string_view text) { write(text.data(), text.size()); }
  void write(const fmt::memory_buffer& buf) { write(buf.data(), buf.size()); }
  /// Writes `bytes` in large pieces, moving the progress bar after each.
  void write_large(const void* data, std::size_t bytes);
  /// Writes `buf` out when it has grown large (and clears it), moving the bar to `fraction`.
  void flush_if_large(fmt::memory_buffer& buf, double fraction);
  void progress(double fraction) { m_bar(fraction < 0.999 ? fraction : 0.999); }
  /// Completes the file: flushes stdout, or gives the temporary its permissions, closes it and
  /// renames it onto the target.
  void commit();

  [[nodiscard]] const std::string& path() const { return m_path; }

 private:
  [[noreturn]] void fail(int error);

  std::string m_path;
  std::string m_tmp;  // empty for stdout, and once renamed or removed
  int m_fd = -1;
  int m_slot = -1;  // in the registry of temporaries removed on a signal
  ProgressBar m_bar;
};

}  // namespace pathlift::cli
