#include "pathlift/types.hpp"

#include <sys/mman.h>

#include <cstdlib>
#include <new>

namespace pathlift::detail {

namespace {
constexpr std::size_t k_huge_page = std::size_t{2} << 20;
constexpr std::size_t k_alignment = 64;
}  // namespace

void* buffer_allocate(std::size_t bytes) {
  if (bytes == 0) {
    bytes = 1;
  }
  const std::size_t align = bytes >= k_huge_page ? k_huge_page : k_alignment;
  const std::size_t rounded = (bytes + align - 1) / align * align;
  void* p = std::aligned_alloc(align, rounded);
  if (p == nullptr) {
    throw std::bad_alloc();
  }
  if (align == k_huge_page) {
    // Advice only: where transparent huge pages are off, this fails harmlessly.
    (void)madvise(p, rounded, MADV_HUGEPAGE);
  }
  return p;
}

void buffer_deallocate(void* p, std::size_t /*bytes*/) noexcept {
  std::free(p);
}

}  // namespace pathlift::detail
