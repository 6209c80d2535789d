#pragma once
// What the fuzz harnesses share: the contract an input is held to (which exceptions bad input
// may give), and a scratch file for the readers that take a path. Built with libFuzzer
// (PATHLIFT_FUZZ) or with replay_main.cpp (the corpora as a test); docs/fuzzing.md.

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <typeinfo>

#include "pathlift/error.hpp"
#include "pathlift/model.hpp"
#include "src/layers/layers_unroll.hpp"

namespace pathlift::fuzz {

/// A finding: prints what was wrong and aborts, so that libFuzzer (or ctest) reports it.
[[noreturn]] inline void fail(std::string_view what, std::string_view detail) {
  std::fprintf(stderr, "fuzz finding: %.*s: %.*s\n", static_cast<int>(what.size()), what.data(),
               static_cast<int>(detail.size()), detail.data());
  std::abort();
}

/// Runs f(). Bad input may make it throw a pathlift error (FormatError, NetworkError,
/// UnsupportedModel, TooLarge, CountOverflow) whose message is not empty and, when
/// `must_name` is given, names it (the file, for a reader that takes a path). Anything else, a
/// bare std::invalid_argument ("stoll") or std::bad_alloc included, is a finding.
template <class F>
void expect_clean(F&& f, std::string_view must_name = {}) {
  const auto check = [&](const std::exception& e) {
    const std::string_view message = e.what();
    if (message.empty() ||
        (!must_name.empty() && message.find(must_name) == std::string_view::npos)) {
      fail("the message does not name the input", message);
    }
  };
  try {
    f();
  } catch (const FormatError& e) {
    check(e);
  } catch (const NetworkError& e) {
    check(e);
  } catch (const UnsupportedModel& e) {
    check(e);
  } catch (const TooLarge& e) {
    check(e);
  } catch (const CountOverflow& e) {
    check(e);
  } catch (const std::exception& e) {
    fail(typeid(e).name(), e.what());
  }
}

/// A layer-graph model is whole: its size() is not negative and, under 100,000 nodes and edges,
/// equals the network it unrolls to within 64 MB (unrolling is work, not reading: only small
/// graphs).
inline void check_unrolls(const Model& model) {
  constexpr Index max_unrolled = 100'000;
  constexpr std::size_t max_memory = std::size_t{64} << 20;
  const UnrolledSize size = model.size({.max_memory = max_memory});
  if (size.nodes < 0 || size.edges < 0) {
    fail("negative unrolled size", std::to_string(size.nodes));
  }
  if (const LayerGraph* graph = model.layer_graph()) {
    const detail::UnrollBounds bounds = detail::unroll_bounds(*graph, layer_shapes(*graph));
    if (static_cast<double>(size.nodes) > bounds.max_nodes ||
        static_cast<double>(size.edges) > bounds.max_edges) {
      fail("the unrolled size exceeds unroll_bounds", std::to_string(size.edges) + " edges");
    }
  }
  if (size.nodes + size.edges <= max_unrolled) {
    const auto net = model.unrolled({.max_memory = max_memory});
    if (net->num_nodes() != size.nodes || net->num_edges() != size.edges) {
      fail("unrolled_size differs from the unrolled network",
           std::to_string(net->num_nodes()) + " nodes");
    }
  }
}

/// A file of this process in $TMPDIR (default /tmp) whose name ends with `suffix`, rewritten
/// with each input and removed at exit.
class ScratchFile {
 public:
  explicit ScratchFile(const std::string& suffix) {
    const char* dir = std::getenv("TMPDIR");
    m_path = std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/pathlift-fuzz-XXXXXX" +
             suffix;
    const int fd = mkstemps(m_path.data(), static_cast<int>(suffix.size()));
    if (fd < 0) {
      fail("cannot create a scratch file", m_path);
    }
    close(fd);
  }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  ~ScratchFile() { unlink(m_path.c_str()); }

  /// Replaces the file's content by `data`.
  const std::string& write(const std::uint8_t* data, std::size_t size) {
    std::FILE* f = std::fopen(m_path.c_str(), "wb");
    if (f == nullptr || (size > 0 && std::fwrite(data, 1, size, f) != size) ||
        std::fclose(f) != 0) {
      fail("cannot write the scratch file", m_path);
    }
    return m_path;
  }

  [[nodiscard]] const std::string& path() const { return m_path; }

 private:
  std::string m_path;
};

}  // namespace pathlift::fuzz
