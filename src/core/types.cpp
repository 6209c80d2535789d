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

/// Blocks freed recently, kept for the next allocation of about their size, in two tiers.
///
/// Large blocks (2 MiB or more): a fresh one costs the kernel a page zeroing at first touch
/// (and glibc maps every block above its mmap threshold afresh, however often the same size
/// comes back): for Phi of ff:5,64,64,64,2 (25 MB) that is half the time of the call, and it
/// does not scale with threads. Medium blocks (64 KiB to 2 MiB): glibc returns the top of its
/// heap to the system when a few hundred KiB are freed there, so a small network's Jacobian
/// (100-300 KiB of results) faulted its pages in afresh at every call, 4x the time of the
/// computation itself. Results computed again and again (a training loop, a benchmark) reuse
/// the pages of the previous result instead. Each tier holds a few blocks and a bounded number
/// of bytes; release_cached_buffers() returns them to the system.
constexpr std::size_t k_medium_min = std::size_t{64} << 10;
constexpr std::size_t k_page = 4096;
constexpr std::size_t k_max_slots = 16;

struct Block {
  void* p = nullptr;
  std::size_t bytes = 0;
  std::uint64_t stamp = 0;  // when it was freed: the oldest goes first
};

struct BlockCache {
  std::size_t slots;      // blocks held at most (<= k_max_slots)
  std::size_t max_bytes;  // bytes held at most; a block over half of it is not kept
  std::mutex mutex;
  std::array<Block, k_max_slots> blocks{};
  std::size_t bytes = 0;
  std::uint64_t clock = 0;
  BlockCache(std::size_t slots_, std::size_t max_bytes_) : slots(slots_), max_bytes(max_bytes_) {}
};

BlockCache& large_cache() {
  // Never destroyed: buffers of static objects may be freed after it would have been.
  static auto* c = new BlockCache(8, std::size_t{1} << 30);
  return *c;
}

BlockCache& medium_cache() {
  static auto* c = new BlockCache(16, std::size_t{16} << 20);
  return *c;
}

/// A cached block of at least `rounded` bytes and at most twice that, or null.
void* take_cached(BlockCache& c, std::size_t rounded) {
  const std::lock_guard<std::mutex> lock(c.mutex);
  Block* best = nullptr;
  for (std::size_t i = 0; i < c.slots; ++i) {
    Block& b = c.blocks[i];
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
bool put_cached(BlockCache& c, void* p, std::size_t rounded) {
  if (rounded > c.max_bytes / 2) {
    return false;
  }
  std::array<void*, k_max_slots + 1> evicted{};
  {
    const std::lock_guard<std::mutex> lock(c.mutex);
    for (std::size_t round = 0; round <= c.slots; ++round) {
      std::size_t slot = c.slots;    // a free slot
      std::size_t oldest = c.slots;  // the block freed first
      for (std::size_t i = 0; i < c.slots; ++i) {
        if (c.blocks[i].p == nullptr) {
          slot = i;
        } else if (oldest == c.slots || c.blocks[i].stamp < c.blocks[oldest].stamp) {
          oldest = i;
        }
      }
      if (slot < c.slots && c.bytes + rounded <= c.max_bytes) {
        c.blocks[slot] = Block{p, rounded, ++c.clock};
        c.bytes += rounded;
        break;
      }
      // No room: the oldest block goes (there is one, since rounded <= max_bytes / 2 and the
      // slots are not all free).
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

std::size_t release(BlockCache& c) {
  std::array<void*, k_max_slots> blocks{};
  std::size_t released = 0;
  {
    const std::lock_guard<std::mutex> lock(c.mutex);
    for (std::size_t i = 0; i < c.slots; ++i) {
      blocks[i] = c.blocks[i].p;
      released += c.blocks[i].bytes;
      c.blocks[i] = Block{};
    }
    c.bytes = 0;
  }
  for (void* p : blocks) {
    std::free(p);
  }
  return released;
}

/// The tier of a block of `bytes` (null: not cached) and its rounded size.
BlockCache* tier_of(std::size_t bytes, std::size_t& rounded) {
  if (bytes >= k_huge_page) {
    rounded = (bytes + k_huge_page - 1) / k_huge_page * k_huge_page;
    return k_cache_enabled ? &large_cache() : nullptr;
  }
  if (bytes >= k_medium_min) {
    rounded = (bytes + k_page - 1) / k_page * k_page;
    return k_cache_enabled ? &medium_cache() : nullptr;
  }
  rounded = (bytes + k_alignment - 1) / k_alignment * k_alignment;
  return nullptr;
}

}  // namespace

void* buffer_allocate(std::size_t bytes) {
  if (bytes == 0) {
    bytes = 1;
  }
  std::size_t rounded = 0;
  BlockCache* tier = tier_of(bytes, rounded);
  if (tier != nullptr) {
    if (void* p = take_cached(*tier, rounded)) {
      return p;
    }
  }
  const std::size_t align = bytes >= k_huge_page ? k_huge_page : k_alignment;
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
  if (p == nullptr) {
    return;
  }
  std::size_t rounded = 0;
  BlockCache* tier = tier_of(bytes == 0 ? 1 : bytes, rounded);
  if (tier != nullptr) {
    try {
      if (put_cached(*tier, p, rounded)) {
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
  return detail::release(detail::large_cache()) + detail::release(detail::medium_cache());
}

}  // namespace pathlift
