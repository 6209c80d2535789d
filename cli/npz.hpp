#pragma once
// NumPy's file formats as bytes: the header of a .npy array, and an .npz archive (a ZIP of .npy
// members, "stored" uncompressed) holding a CSR matrix in the layout that
// scipy.sparse.save_npz(compressed=False) writes and scipy.sparse.load_npz reads. Encoding
// only: the bytes go to a sink, the files are matrix_io's. The arrays are streamed from memory
// in large pieces (no per-number formatting), so writing runs at the speed of the disk.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "pathlift/sparse.hpp"

namespace pathlift::cli {

static_assert(std::endian::native == std::endian::little,
              ".npy/.npz arrays are written from memory as little-endian bytes");

/// Receives consecutive pieces of a file.
using ByteSink = std::function<void(const void* data, std::size_t bytes)>;
/// Told the fraction of the bytes written so far (0 to 1).
using WriteProgress = std::function<void(double fraction)>;

/// NumPy's dtype string for T: "<f8", "<f4", "<i8", "<i4".
template <class T>
constexpr const char* npy_descr() {
  if constexpr (std::is_same_v<T, double>) {
    return "<f8";
  } else if constexpr (std::is_same_v<T, float>) {
    return "<f4";
  } else if constexpr (std::is_same_v<T, std::int64_t>) {
    return "<i8";
  } else {
    static_assert(std::is_same_v<T, std::int32_t>, "no .npy dtype for this type");
    return "<i4";
  }
}

/// The header of a version 1.0 .npy file for a C-order array of dtype `descr` and `shape` ({}
/// for a 0-d array): magic, length, the dictionary, padded with spaces and a newline to a
/// multiple of 64 bytes, as numpy.save writes it.
std::string npy_header(std::string_view descr, std::span<const Index> shape);

/// The items of one array: `count` items of `item_size` bytes of dtype `descr`, either in
/// memory (`memory`, little-endian) or made on demand by `make(first, n, out)`, which writes
/// items first .. first + n - 1 to `out` (a conversion, a constant).
struct ArrayBytes {
  std::string descr;
  std::size_t item_size = 0;
  std::size_t count = 0;
  const void* memory = nullptr;
  std::function<void(std::size_t first, std::size_t n, void* out)> make;
};

/// The items of `items`, written from memory as they are.
template <class T>
ArrayBytes array_bytes(std::span<const T> items) {
  return {npy_descr<T>(), sizeof(T), items.size(), items.data(), {}};
}

/// The items of `items` converted to To one piece at a time (int64 offsets as int32, int32
/// column indices as int64); the caller guarantees that every value fits.
template <class To, class From>
ArrayBytes converted_bytes(std::span<const From> items) {
  return {npy_descr<To>(), sizeof(To), items.size(), nullptr,
          [items](std::size_t first, std::size_t n, void* out) {
            auto* to = static_cast<To*>(out);
            for (std::size_t i = 0; i < n; ++i) {
              to[i] = static_cast<To>(items[first + i]);
            }
          }};
}

/// `count` copies of `value` (the ones of a pattern), made one piece at a time.
template <class T>
ArrayBytes constant_bytes(std::size_t count, T value) {
  return {npy_descr<T>(), sizeof(T), count, nullptr,
          [value](std::size_t, std::size_t n, void* out) {
            std::fill_n(static_cast<T*>(out), n, value);
          }};
}

/// One member of an .npz archive: `name`.npy holding `items` with `shape` (the product of the
/// shape is items.count).
struct NpzMember {
  std::string name;
  std::vector<Index> shape;
  ArrayBytes items;
};

/// A size or offset of the ZIP format takes its ZIP64 form when it is at least this (the
/// 32-bit fields hold 0xFFFFFFFF as "see the ZIP64 record"; 16-bit entry counts switch at
/// min(limit, 0xFFFF)). A smaller value forces the ZIP64 records, to test them on small files.
constexpr std::uint64_t zip64_limit = 0xFFFFFFFF;

/// Writes an .npz archive of `members`, in order, to `out`: a ZIP file whose members are
/// stored uncompressed with their CRC-32 (computed first, in parallel), dated 1980-01-01 as
/// numpy.savez dates them, with ZIP64 records where a size or an offset reaches `limit`.
/// `progress` (may be empty) is told the fraction of bytes written.
/// Complexity: two passes over the items (CRC, then write).
void write_npz(const ByteSink& out, std::span<const NpzMember> members,
               const WriteProgress& progress, std::uint64_t limit = zip64_limit);

/// A rows x cols CSR matrix of pattern `p` and values `data` (nnz items; the ones of a pattern
/// for B) as the members of scipy.sparse.save_npz, in its order: indices, indptr (both int32
/// when fits_int32_indices, else int64), format (b"csr", dtype |S3, 0-d), shape (int64, 2), data.
/// scipy.sparse.load_npz reads them as a csr_matrix of data's dtype.
std::vector<NpzMember> csr_npz_members(const CsrPattern& p, ArrayBytes data);

}  // namespace pathlift::cli
