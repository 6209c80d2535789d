// Output files written in full or not at all (io.hpp): the output-path check every writer calls,
// the temporary next to the target and its rename.

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "pathlift/error.hpp"
#include "pathlift/io.hpp"

namespace pathlift {

namespace {

/// The permissions of a new file, 0666 & ~umask. umask() can only be read by setting it, so it
/// is read from /proc/self/status (Linux 4.7+, no race with other threads) where it can be.
mode_t new_file_mode() {
  if (FILE* f = std::fopen("/proc/self/status", "re")) {
    char line[256];
    unsigned mask = 0;
    bool found = false;
    while (!found && std::fgets(line, sizeof line, f) != nullptr) {
      found = std::sscanf(line, "Umask: %o", &mask) == 1;
    }
    std::fclose(f);
    if (found) {
      return static_cast<mode_t>(0666 & ~mask);
    }
  }
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return 0666 & ~mask;
}

}  // namespace

std::string temporary_template(const std::string& path) {
  const auto slash = path.find_last_of('/');
  const std::size_t name_at = slash == std::string::npos ? 0 : slash + 1;
  return fmt::format("{}.{}.XXXXXX{}", path.substr(0, name_at), path.substr(name_at, 200),
                     temporary_suffix);
}

int write_all(int fd, const void* data, std::size_t bytes) {
  const auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd, p, bytes);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return n < 0 ? errno : ENOSPC;
    }
    p += n;
    bytes -= static_cast<std::size_t>(n);
  }
  return 0;
}

int install_temporary(int fd, const std::string& tmp, const std::string& path) {
  int error = 0;
  if (::fchmod(fd, new_file_mode()) != 0) {  // mkostemps made it 0600
    error = errno;
  }
  if (::close(fd) != 0 && error == 0 && errno != EINTR) {  // Linux closes it even on EINTR
    error = errno;
  }
  if (error == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) {
    error = errno;
  }
  return error;
}

namespace {

/// What a file that is not a directory or a regular file is, with its article.
const char* file_kind(mode_t mode) {
  if (S_ISFIFO(mode)) {
    return "a FIFO (named pipe)";
  }
  if (S_ISCHR(mode)) {
    return "a character device";
  }
  if (S_ISBLK(mode)) {
    return "a block device";
  }
  if (S_ISSOCK(mode)) {
    return "a socket";
  }
  return "a special file";
}

}  // namespace

std::string output_folder(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) {
    return ".";
  }
  return slash == 0 ? "/" : path.substr(0, slash);
}

void check_output_path(const std::string& path, std::string_view what) {
  // "cannot write 'PATH'", or "cannot write WHAT 'PATH'"
  const std::string target =
      what.empty() ? fmt::format("'{}'", path) : fmt::format("{} '{}'", what, path);
  if (path.empty()) {
    throw FormatError(what.empty() ? std::string("an empty output file name")
                                   : fmt::format("an empty name for the {}", what));
  }
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;  // follows a symlink to its file
  if (path.back() == '/' || (exists && S_ISDIR(st.st_mode))) {
    throw FormatError(fmt::format("cannot write {}: it is a directory", target));
  }
  // An existing target (or the file a symlink names) is replaced by the rename: only a regular
  // file may be. A FIFO, a device or a socket would be destroyed, not written to.
  if (exists && !S_ISREG(st.st_mode)) {
    throw FormatError(fmt::format(
        "cannot write {}: it is {}, not a regular file (pathlift writes a new file and renames "
        "it onto the target, which would replace it; name a regular file)",
        target, file_kind(st.st_mode)));
  }
  const std::string folder = output_folder(path);
  if (::stat(folder.c_str(), &st) != 0) {
    throw FormatError(fmt::format("cannot write {}: the folder '{}' {}", target, folder,
                                  errno == ENOENT ? "does not exist" : std::strerror(errno)));
  }
  if (!S_ISDIR(st.st_mode)) {
    throw FormatError(fmt::format("cannot write {}: '{}' is not a folder", target, folder));
  }
  if (::access(folder.c_str(), W_OK | X_OK) != 0) {
    throw FormatError(fmt::format("cannot write {}: the folder '{}' is not writable ({})", target,
                                  folder, std::strerror(errno)));
  }
}

void write_file_atomically(const std::string& path, std::string_view bytes, std::string_view what) {
  const auto fail = [&](int error) {
    throw FormatError(fmt::format("cannot write {} '{}': {}", what, path, std::strerror(error)));
  };
  check_output_path(path, what);
  // Next to the target (the same file system, so the rename is atomic); mkostemps creates it
  // with O_EXCL: no symlink is followed, no existing file is reused.
  std::string tmp = temporary_template(path);
  const int fd = ::mkostemps(tmp.data(), static_cast<int>(temporary_suffix.size()), O_CLOEXEC);
  if (fd < 0) {
    fail(errno);
  }
  int error = write_all(fd, bytes.data(), bytes.size());
  if (error != 0) {
    ::close(fd);
  } else {
    error = install_temporary(fd, tmp, path);
  }
  if (error != 0) {
    ::unlink(tmp.c_str());
    fail(error);
  }
}

}  // namespace pathlift
