#pragma once
/// \file types.hpp
/// Vocabulary types shared by every part of pathlift: node, edge and path indices, and the
/// uninitialised buffers that hold paths, Phi and sparse matrices.

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace pathlift {

/// A node of the network, 0-based in node order.
using NodeId = std::int32_t;
/// An edge of the network, 0-based; edge k carries parameter theta_k.
using EdgeId = std::int32_t;
/// Sizes, path indices and offsets into CSR arrays (paths and nnz may exceed 2^31).
using Index = std::int64_t;

/// Returns to the system the result buffers pathlift keeps for reuse, and their total bytes.
///
/// Results of 2 MiB or more (Phi, B, dPhi, paths of large networks) are allocated on huge-page
/// boundaries, and when freed, up to 8 of them (1 GiB at most, each at most 512 MiB) are kept
/// for the next result of about their size: a fresh block costs a kernel page zeroing at first
/// touch, about half the time of Phi on a large network, which a loop computing the same
/// objects again then saves. Results of 64 KiB to 2 MiB are kept likewise (16 blocks, 16 MiB
/// at most): glibc hands the top of its heap back to the system when that much is freed
/// there, and faulting it in again took 4x the time of a small network's Jacobian. Call this
/// to hand the memory back sooner (a failed allocation does it by itself). Not kept under
/// AddressSanitizer.
std::size_t release_cached_buffers();

namespace detail {
/// Raw storage for Buffer: 64-byte aligned; blocks of 2 MiB or more are advised to use
/// transparent huge pages; blocks of 64 KiB or more are recycled (see release_cached_buffers).
/// Throws std::bad_alloc.
void* buffer_allocate(std::size_t bytes);
void buffer_deallocate(void* p, std::size_t bytes) noexcept;

/// Allocator whose value-less construct() default-initialises: resizing a buffer of numbers
/// does not zero it first (the engine writes every element once). Large blocks are advised to
/// use transparent huge pages, so first touch costs fewer page faults.
template <class T>
struct DefaultInitAllocator {
  using value_type = T;
  DefaultInitAllocator() noexcept = default;
  template <class U>
  DefaultInitAllocator(const DefaultInitAllocator<U>& /*other*/) noexcept {}  // NOLINT

  [[nodiscard]] T* allocate(std::size_t n) {
    return static_cast<T*>(buffer_allocate(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept { buffer_deallocate(p, n * sizeof(T)); }

  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(static_cast<Args&&>(args)...);
  }
  template <class U>
  bool operator==(const DefaultInitAllocator<U>& /*other*/) const noexcept {
    return true;
  }
};
}  // namespace detail

/// A contiguous array whose resize() leaves new elements uninitialised (for numbers).
template <class T>
using Buffer = std::vector<T, detail::DefaultInitAllocator<T>>;

}  // namespace pathlift
