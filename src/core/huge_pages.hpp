#pragma once
// Transparent huge pages for large std::vector / std::string storage the library fills itself
// (the unrolled network's edge arrays, an ONNX file and its parameters). Where huge pages are
// on "madvise" only, first touch of hundreds of MiB in 4 KiB pages costs more than the work
// that fills them; Buffer (types.hpp) does the same for the engine's results.

#include <cstddef>
#include <cstdint>

#ifdef __linux__
#include <sys/mman.h>
#endif

namespace pathlift::detail {

/// Advises the kernel to back the whole 2 MiB pages inside [p, p + bytes) with huge pages.
/// Advice only: it fails harmlessly where huge pages are off.
inline void advise_huge_pages(const void* p, std::size_t bytes) {
#ifdef __linux__
  constexpr std::uintptr_t huge = std::uintptr_t{2} << 20;
  const auto begin = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t first = (begin + huge - 1) & ~(huge - 1);
  const std::uintptr_t end = begin + bytes;
  if (end >= first + huge) {
    (void)madvise(reinterpret_cast<void*>(first), (end - first) & ~(huge - 1), MADV_HUGEPAGE);
  }
#else
  (void)p;
  (void)bytes;
#endif
}

/// v.reserve(n), its fresh (untouched) storage advised to use huge pages.
template <class Container>
void reserve_huge(Container& v, std::size_t n) {
  v.reserve(n);
  advise_huge_pages(v.data(), n * sizeof(typename Container::value_type));
}

/// v.resize(n) (value-initialised), its storage advised to use huge pages before first touch.
template <class Container>
void resize_huge(Container& v, std::size_t n) {
  reserve_huge(v, n);
  v.resize(n);
}

}  // namespace pathlift::detail
