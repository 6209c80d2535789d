#pragma once
// Helpers the GoogleTest programs share: checks on error messages, the comparison of two
// networks, the sweep over many random networks that stops at the first failing one, and
// temporary files and folders.
// References to compare the library against live in reference.hpp.

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "pathlift/builtins.hpp"
#include "pathlift/network.hpp"
#include "pathlift/options.hpp"

namespace pathlift::testing {

/// The path of tests/data/NAME (PATHLIFT_TEST_DATA: every test program's data folder).
inline std::string data_file(const std::string& name) {
  return std::string(PATHLIFT_TEST_DATA) + "/" + name;
}

/// Whether `text` contains `part` (with both in the failure message).
inline ::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "\"" << text << "\" does not contain \"" << part << "\"";
}

/// The message of the exception of type E that f throws (a test failure when none is thrown;
/// an exception of another type escapes and fails the test too).
template <class E, class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "no exception thrown";
  return {};
}

/// The names of the nodes `ids`, in that order.
inline std::vector<std::string> names_of(const Network& net, std::span<const NodeId> ids) {
  std::vector<std::string> out;
  for (const NodeId v : ids) {
    out.push_back(net.node_name(v));
  }
  return out;
}

/// The bits of each weight, so that weights compare bit-identical (-0.0 and all).
inline std::vector<std::uint64_t> bits(std::span<const double> w) {
  std::vector<std::uint64_t> out;
  for (const double x : w) {
    out.push_back(std::bit_cast<std::uint64_t>(x));
  }
  return out;
}

/// a and b have the same nodes, edges, outputs, biases, activations and bit-identical weights.
inline void expect_same_network(const Network& a, const Network& b) {
  const NetworkSpec sa = a.spec();
  const NetworkSpec sb = b.spec();
  EXPECT_EQ(sa.node_names, sb.node_names);
  EXPECT_EQ(sa.edges, sb.edges);
  EXPECT_EQ(sa.outputs, sb.outputs);
  EXPECT_EQ(sa.bias, sb.bias);
  EXPECT_EQ(sa.activations, sb.activations);
  EXPECT_EQ(a.has_weights(), b.has_weights());
  EXPECT_EQ(bits(a.weights()), bits(b.weights()));
}

/// Engine options asking for `threads` threads, the rest default (for the "1 thread == N
/// threads" tests).
inline EngineOptions with_threads(int threads) {
  EngineOptions options;
  options.threads = threads;
  return options;
}

/// Runs check(seed) for seed = 0, 1, ... count - 1 and stops after the first seed that adds a
/// failure (one failing network is enough to read); returns how many seeds ran.
template <class F>
std::uint64_t until_first_failure(std::uint64_t count, F&& check) {
  std::uint64_t ran = 0;
  while (ran < count) {
    check(ran);
    ++ran;
    if (::testing::Test::HasFailure()) {
      break;
    }
  }
  return ran;
}

/// A network and the builtin_network() name that rebuilds it.
struct NamedNetwork {
  Network net;
  std::string name;
};

/// The small random DAG number `seed` of the sweeps against enumeration: 2 to 9 nodes, edge
/// probability 0.3 to 0.8 (every feature of the model: parallel edges, designated outputs
/// feeding other nodes, bias nodes).
inline NamedNetwork small_random_dag(std::uint64_t seed) {
  const Index m = 2 + static_cast<Index>(seed % 8);
  const double p = 0.3 + 0.1 * static_cast<double>(seed % 6);
  return {random_dag(m, p, seed),
          "random-dag:" + std::to_string(m) + "," + std::to_string(p) + "," + std::to_string(seed)};
}

/// A fresh path in the temporary directory (nothing there), removed with anything left there
/// at scope exit.
class TempPath {
 public:
  explicit TempPath(const std::string& name) : m_path(fresh(name)) {}
  ~TempPath() {
    std::error_code ec;
    std::filesystem::remove_all(m_path, ec);
  }
  TempPath(const TempPath&) = delete;
  TempPath& operator=(const TempPath&) = delete;
  [[nodiscard]] std::string str() const { return m_path.string(); }
  [[nodiscard]] const std::filesystem::path& path() const { return m_path; }

  /// "<tmp>/pathlift_test_<pid>_<name>", removed if it was there.
  static std::filesystem::path fresh(const std::string& name) {
    std::filesystem::path p = std::filesystem::temp_directory_path() /
                              ("pathlift_test_" + std::to_string(::getpid()) + "_" + name);
    std::filesystem::remove_all(p);
    return p;
  }

 private:
  std::filesystem::path m_path;
};

/// A fresh, empty folder in the temporary directory, removed with its contents at scope exit.
class TempDir {
 public:
  explicit TempDir(const std::string& name) : m_path(name) {
    std::filesystem::create_directory(m_path.path());
  }
  [[nodiscard]] std::string operator/(const std::string& name) const {
    return (m_path.path() / name).string();
  }
  /// The names in the folder, sorted.
  [[nodiscard]] std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& entry : std::filesystem::directory_iterator(m_path.path())) {
      out.push_back(entry.path().filename().string());
    }
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  TempPath m_path;
};

}  // namespace pathlift::testing
