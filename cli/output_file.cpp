#include "output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "pathlift/error.hpp"
#include "pathlift/io.hpp"

namespace pathlift::cli {

namespace {

// --- The temporaries removed on a signal --------------------------------------------------------
// A fixed table of names, so that the handler neither allocates nor locks: a slot is free,
// being filled, or live (its file exists and the handler unlinks it).

constexpr int slot_free = 0;
constexpr int slot_filling = 1;
constexpr int slot_live = 2;

struct Slot {
  std::atomic<int> state{slot_free};
  std::array<char, PATH_MAX> name{};
};
static_assert(std::atomic<int>::is_always_lock_free);

std::array<Slot, 16> g_slots;  // the CLI writes one file at a time

// The process's state: idle, creating a temporary (mkstemp, then registering it), or dying by
// a signal (its number). A signal that arrives while a temporary is being created is left to
// the creating thread, which acts on it once registered, so that no temporary escapes; the
// state stays "dying" so that no temporary is created after the handler's clean-up.
constexpr int idle = 0;
constexpr int creating = -1;
std::atomic<int> g_state{idle};

constexpr std::array<int, 3> cleanup_signals = {SIGINT, SIGTERM, SIGHUP};

/// Unlinks the live temporaries and raises `sig` with its default action (async-signal-safe):
/// in a handler, where `sig` is blocked, the process dies when the handler returns; elsewhere at
/// once. The exit status is still "killed by `sig`".
void remove_temporaries_and_raise(int sig) {
  for (Slot& s : g_slots) {
    if (s.state.load() == slot_live) {
      ::unlink(s.name.data());
    }
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

extern "C" void on_signal(int sig) {
  for (;;) {
    int state = g_state.load();
    if (state == creating) {
      if (g_state.compare_exchange_strong(state, sig)) {
        return;  // the creating thread removes the temporaries and dies
      }
    } else if (state != idle || g_state.compare_exchange_strong(state, sig)) {
      remove_temporaries_and_raise(sig);
      return;
    }
  }
}

/// Outside a handler: the process is dying by `sig`, which another thread is handling.
[[noreturn]] void die_by(int sig) {
  remove_temporaries_and_raise(sig);
  std::_Exit(128 + sig);  // not reached: the signal killed the process
}

/// Installs on_signal for SIGINT, SIGTERM and SIGHUP, once (a signal the process ignores stays
/// ignored).
void install_signal_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigfillset(&action.sa_mask);
    for (const int sig : cleanup_signals) {
      struct sigaction old {};
      if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler != SIG_IGN) {
        ::sigaction(sig, &action, nullptr);
      }
    }
  });
}

/// Creates the temporary for `tmpl` (mkstemps: O_CREAT | O_EXCL, mode 0600) and registers it,
/// as one critical section. Returns the descriptor (-1 with errno set) and the slot (-1 when
/// none was free, or the name is too long for one).
std::pair<int, int> create_registered(std::string& tmpl, int suffix) {
  int state = idle;
  if (!g_state.compare_exchange_strong(state, creating)) {
    die_by(state);
  }
  const int fd = ::mkostemps(tmpl.data(), suffix, O_CLOEXEC);
  const int error = errno;
  int slot = -1;
  if (fd >= 0 && tmpl.size() < PATH_MAX) {
    for (std::size_t i = 0; i < g_slots.size() && slot < 0; ++i) {
      int expected = slot_free;
      if (g_slots[i].state.compare_exchange_strong(expected, slot_filling)) {
        std::copy(tmpl.begin(), tmpl.end(), g_slots[i].name.begin());
        g_slots[i].name[tmpl.size()] = '\0';
        g_slots[i].state.store(slot_live);
        slot = static_cast<int>(i);
      }
    }
  }
  state = creating;
  if (!g_state.compare_exchange_strong(state, idle)) {  // a signal arrived meanwhile
    if (fd >= 0 && slot < 0) {
      ::unlink(tmpl.c_str());
    }
    die_by(state);
  }
  errno = error;
  return {fd, slot};
}

void release(int slot) {
  if (slot >= 0) {
    g_slots[static_cast<std::size_t>(slot)].state.store(slot_free);
  }
}

}  // namespace

void check_output_path(const std::string& path) {
  if (path != "-") {
    pathlift::check_output_path(path);
  }
}

OutputFile::OutputFile(std::string path)
    : m_path(std::move(path)), m_bar(fmt::format("writing {}", m_path)) {
  if (m_path == "-") {
    return;
  }
  check_output_path(m_path);
  install_signal_handlers();
  // Hidden, next to the target (the same file system, so the rename is atomic).
  m_tmp = temporary_template(m_path);
  const auto [fd, slot] = create_registered(m_tmp, static_cast<int>(temporary_suffix.size()));
  if (fd < 0) {
    const int error = errno;
    m_tmp.clear();
    throw FormatError(fmt::format("cannot write '{}': cannot create a file in '{}': {}", m_path,
                                  output_folder(m_path), std::strerror(error)));
  }
  m_fd = fd;
  m_slot = slot;
}

OutputFile::~OutputFile() {
  if (m_fd >= 0) {
    ::close(m_fd);
  }
  if (!m_tmp.empty()) {
    ::unlink(m_tmp.c_str());
  }
  release(m_slot);
}

void OutputFile::fail(int error) {
  if (m_fd >= 0) {
    ::close(m_fd);
    m_fd = -1;
  }
  if (!m_tmp.empty()) {
    ::unlink(m_tmp.c_str());
    m_tmp.clear();
  }
  release(m_slot);
  m_slot = -1;
  if (m_path == "-") {
    throw FormatError(fmt::format("cannot write to stdout: {}", std::strerror(error)));
  }
  throw FormatError(fmt::format("cannot write '{}': {}", m_path, std::strerror(error)));
}

void OutputFile::write(const void* data, std::size_t bytes) {
  if (m_path == "-") {
    if (bytes > 0 && std::fwrite(data, 1, bytes, stdout) != bytes) {
      fail(errno);
    }
    return;
  }
  if (const int error = write_all(m_fd, data, bytes); error != 0) {
    fail(error);
  }
}

void OutputFile::write_large(const void* data, std::size_t bytes) {
  constexpr std::size_t piece = std::size_t{16} << 20;
  const auto* p = static_cast<const char*>(data);
  for (std::size_t at = 0; at < bytes; at += piece) {
    const std::size_t n = std::min(piece, bytes - at);
    write(p + at, n);
    progress(static_cast<double>(at + n) / static_cast<double>(bytes));
  }
}

void OutputFile::flush_if_large(fmt::memory_buffer& buf, double fraction) {
  if (buf.size() > (std::size_t{1} << 20)) {
    write(buf);
    buf.clear();
    progress(fraction);
  }
}

void OutputFile::commit() {
  m_bar(1.0);
  if (m_path == "-") {
    if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0) {
      fail(errno != 0 ? errno : EIO);
    }
    return;
  }
  const int error = install_temporary(m_fd, m_tmp, m_path);
  m_fd = -1;  // closed
  if (error != 0) {
    fail(error);
  }
  m_tmp.clear();
  release(m_slot);
  m_slot = -1;
}

}  // namespace pathlift::cli
