// Buffer storage: large blocks are recycled (types.hpp: release_cached_buffers), and results
// computed into recycled memory are the same as into fresh memory.

#include <gtest/gtest.h>

#include <cstdint>
#include <span>

#include "pathlift/builtins.hpp"
#include "pathlift/lifting.hpp"
#include "pathlift/paths.hpp"
#include "pathlift/types.hpp"

namespace pathlift {
namespace {

constexpr std::size_t k_large = std::size_t{3} << 20;  // 3 MiB of doubles: a "large" block

TEST(Buffer, LargeBlocksAreReusedAndReleased) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "the cache is off under AddressSanitizer";
#endif
  (void)release_cached_buffers();
  const double* first = nullptr;
  {
    Buffer<double> a(k_large / sizeof(double));
    a[0] = 1.0;
    first = a.data();
  }
  Buffer<double> b(k_large / sizeof(double));
  EXPECT_EQ(b.data(), first) << "a block of the same size comes back from the cache";
  {
    Buffer<double> c(k_large / sizeof(double));  // b holds the cached block: a fresh one
    EXPECT_NE(c.data(), b.data());
  }
  // c's block is cached now, b's is in use.
  EXPECT_GE(release_cached_buffers(), k_large);
  EXPECT_EQ(release_cached_buffers(), 0U);
}

TEST(Buffer, MediumBlocksAreReusedAndReleased) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "the cache is off under AddressSanitizer";
#endif
  constexpr std::size_t k_medium = std::size_t{200} << 10;  // a small network's Jacobian
  (void)release_cached_buffers();
  const float* first = nullptr;
  {
    Buffer<float> a(k_medium / sizeof(float));
    a[0] = 1.0F;
    first = a.data();
  }
  // A slightly smaller request takes the same block (within 2x of its size)...
  Buffer<float> b(k_medium / sizeof(float) - 1000);
  EXPECT_EQ(b.data(), first);
  // ...a request of less than half its size does not.
  b = Buffer<float>();  // b's block goes back to the cache
  Buffer<float> c(k_medium / sizeof(float) / 3);
  EXPECT_NE(c.data(), first);
  EXPECT_GE(release_cached_buffers(), k_medium - 4000);
  EXPECT_EQ(release_cached_buffers(), 0U);
  // Small blocks are never cached.
  { Buffer<double> small(100); }
  EXPECT_EQ(release_cached_buffers(), 0U);
}

TEST(Buffer, ResultsInRecycledMemoryAreExact) {
  // Phi and dPhi of a network whose outputs exceed 2 MiB (and of a small one, whose results
  // are medium blocks), twice with different theta: the second call writes into the first
  // one's recycled blocks and must not see its values.
  // ff:5,32,32,32,2: P = 395,330 paths, Phi 3.2 MB, dPhi 1.6 M entries (19 MB with its
  // pattern); ff:5,8,8,8,2: dPhi 25 k entries (200 KB of values, 100 KB of columns).
  for (const char* name : {"ff:5,32,32,32,2", "ff:5,8,8,8,2"}) {
    SCOPED_TRACE(name);
    const Network net = builtin_network(name);
    const auto t1 = normal_weights(net.num_edges(), 1);
    const auto t2 = normal_weights(net.num_edges(), 2);
    (void)release_cached_buffers();  // the references are computed into fresh memory
    const auto reference = path_lifting<double>(net, std::span<const double>(t2));
    const auto j_reference = jacobian<double>(net, std::span<const double>(t2));
    for (int round = 0; round < 3; ++round) {
      (void)jacobian<double>(net, std::span<const double>(t1));
      const auto phi = path_lifting<double>(net, std::span<const double>(t2));
      ASSERT_EQ(phi.size(), reference.size());
      for (std::size_t p = 0; p < phi.size(); ++p) {
        ASSERT_EQ(phi[p], reference[p]) << "path " << p;
      }
      const auto j = jacobian<double>(net, std::span<const double>(t2));
      ASSERT_EQ(j.values.size(), j_reference.values.size());
      for (std::size_t k = 0; k < j.values.size(); ++k) {
        ASSERT_EQ(j.values[k], j_reference.values[k]) << "entry " << k;
      }
    }
  }
}

}  // namespace
}  // namespace pathlift
