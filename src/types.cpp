#include "pathlift/types.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <mutex>
#include <new>

namespace pathlift::detail {

namespace {
constexpr std::size_t k_huge_page = std::size_t{2} << 20;
constexpr std::size_t k_alignment = 64;

#if defined(__SANITIZE_ADDRESS__)
constexpr bool k_cache_enabled = false;  // keep use-after-free detectable under ASan
#else
constexpr bool k_cache_enabled = true;
#endif

/// Large blocks freed recently, kept for the next allocation of about their size.
///
/// A fresh large block costs the kernel a page zeroing at first touch (and glibc maps every
/// block above its mmap threshold afresh, however often the same size comes back): for Phi of
/// ff:5,64,64,64,2 (25 MB) that is half the time of the call, and it does not scale with
/// threads. Results computed again and again (a training loop, a benchmark) reuse the pages of
/// the previous result instead. At most k_cache_blocks blocks and k_cache_max_bytes bytes are
/// held; release_cached_buffers() returns them to the system.
constexpr std::size_t k_cache_blocks = 8;
constexpr std::size_t k_cache_max_bytes = std::size_t{1} << 30;

struct Block {
  void* p = nullptr;
  std::size_t bytes = 0;
  std::uint64_t stamp = 0;  // when it was freed: the oldest goes first
};

struct BlockCache {
  std::mutex mutex;
  std::array<Block, k_cache_blocks> blocks{};
  std::size_t bytes = 0;
  std::uint64_t clock = 0;
};

BlockCache& cache() {
  // Never destroyed: buffers of static objects may be freed after it would have been.
  static auto* c = new BlockCache;
  return *c;
}

/// A cached block of at least `rounded` bytes and at most twice that, or null.
void* take_cached(std::size_t rounded) {
  BlockCache& c = cache();
  const std::lock_guard<std::mutex> lock(c.mutex);
  Block* best = nullptr;
  for (Block& b : c.blocks) {
    if (b.p != nullptr && b.bytes >= rounded && b.bytes <= 2 * rounded &&
        (best == nullptr || b.bytes < best->bytes)) {
      best = &b;
    }
  }
  if (best == nullptr) {
    return nullptr;
  }
  void* p = best->p;
  c.bytes -= best->bytes;
  *best = Block{};
  return p;
}

/// Keeps the block (evicting the oldest ones to make room); false when it is too large.
bool put_cached(void* p, std::size_t rounded) {
  if (rounded > k_cache_max_bytes / 2) {
    return false;
  }
  std::array<void*, k_cache_blocks + 1> evicted{};
  {
    BlockCache& c = cache();
    const std::lock_guard<std::mutex> lock(c.mutex);
    for (std::size_t round = 0; round <= k_cache_blocks; ++round) {
      std::size_t slot = k_cache_blocks;    // a free slot
      std::size_t oldest = k_cache_blocks;  // the block freed first
      for (std::size_t i = 0; i < k_cache_blocks; ++i) {
        if (c.blocks[i].p == nullptr) {
          slot = i;
        } else if (oldest == k_cache_blocks || c.blocks[i].stamp < c.blocks[oldest].stamp) {
          oldest = i;
        }
      }
      if (slot < k_cache_blocks && c.bytes + rounded <= k_cache_max_bytes) {
        c.blocks[slot] = Block{p, rounded, ++c.clock};
        c.bytes += rounded;
        break;
      }
      // No room: the oldest block goes (there is one, since rounded <= k_cache_max_bytes / 2
      // and the slots are not all free).
      evicted[round] = c.blocks[oldest].p;
      c.bytes -= c.blocks[oldest].bytes;
      c.blocks[oldest] = Block{};
    }
  }
  for (void* e : evicted) {
    std::free(e);
  }
  return true;
}

}  // namespace

void* buffer_allocate(std::size_t bytes) {
  if (bytes == 0) {
    bytes = 1;
  }
  const std::size_t align = bytes >= k_huge_page ? k_huge_page : k_alignment;
  const std::size_t rounded = (bytes + align - 1) / align * align;
  if (k_cache_enabled && align == k_huge_page) {
    if (void* p = take_cached(rounded)) {
      return p;
    }
  }
  void* p = std::aligned_alloc(align, rounded);
  if (p == nullptr) {
    // Memory held by the cache may be what is missing.
    if (release_cached_buffers() > 0) {
      p = std::aligned_alloc(align, rounded);
    }
    if (p == nullptr) {
      throw std::bad_alloc();
    }
  }
  if (align == k_huge_page) {
    // Advice only: where transparent huge pages are off, this fails harmlessly.
    (void)madvise(p, rounded, MADV_HUGEPAGE);
  }
  return p;
}

void buffer_deallocate(void* p, std::size_t bytes) noexcept {
  if (k_cache_enabled && p != nullptr && bytes >= k_huge_page) {
    const std::size_t rounded = (bytes + k_huge_page - 1) / k_huge_page * k_huge_page;
    try {
      if (put_cached(p, rounded)) {
        return;
      }
    } catch (...) {  // a mutex that cannot lock: free it as before
    }
  }
  std::free(p);
}

}  // namespace pathlift::detail

namespace pathlift {

std::size_t release_cached_buffers() {
  detail::BlockCache& c = detail::cache();
  std::array<void*, detail::k_cache_blocks> blocks{};
  std::size_t released = 0;
  {
    const std::lock_guard<std::mutex> lock(c.mutex);
    for (std::size_t i = 0; i < c.blocks.size(); ++i) {
      blocks[i] = c.blocks[i].p;
      released += c.blocks[i].bytes;
      c.blocks[i] = detail::Block{};
    }
    c.bytes = 0;
  }
  for (void* p : blocks) {
    std::free(p);
  }
  return released;
}

}  // namespace pathlift
