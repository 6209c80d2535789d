#include "npz.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <zlib.h>

#include <algorithm>
#include <limits>

namespace pathlift::cli {

std::string npy_header(std::string_view descr, std::span<const Index> shape) {
  // numpy writes a 1-tuple as "(n,)" and a 0-d shape as "()".
  const std::string shape_text = shape.size() == 1 ? fmt::format("({},)", shape[0])
                                                   : fmt::format("({})", fmt::join(shape, ", "));
  std::string dict =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr, shape_text);
  // magic (6) + version (2) + length (2) + dictionary + '\n', padded to a multiple of 64.
  const std::size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  std::string header("\x93NUMPY\x01\x00", 8);
  header += static_cast<char>(dict.size() & 0xff);
  header += static_cast<char>(dict.size() >> 8);
  return header + dict;
}

namespace {

// Pieces of this many bytes are checksummed in parallel and written one at a time, so that the
// progress bar moves and items made on demand take one piece of memory, in cache.
constexpr std::size_t piece_bytes = std::size_t{4} << 20;

/// Little-endian fields of the ZIP headers.
class Fields {
 public:
  Fields& u16(std::uint64_t v) { return put(v, 2); }
  Fields& u32(std::uint64_t v) { return put(v, 4); }
  Fields& u64(std::uint64_t v) { return put(v, 8); }
  Fields& text(std::string_view s) {
    m_bytes.append(s);
    return *this;
  }
  [[nodiscard]] const std::string& bytes() const { return m_bytes; }

 private:
  Fields& put(std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) {
      m_bytes += static_cast<char>((v >> (8 * i)) & 0xff);
    }
    return *this;
  }
  std::string m_bytes;
};

/// One member as laid out in the archive.
struct Entry {
  std::string file_name;     // "indices.npy"
  std::string header;        // its .npy header
  std::uint64_t size = 0;    // header + items, stored = uncompressed
  std::uint64_t offset = 0;  // of its local header
  std::uint32_t crc = 0;
};

std::size_t items_per_piece(const ArrayBytes& a) {
  return std::max<std::size_t>(1, piece_bytes / a.item_size);
}

/// Room for one piece of items made on demand (none for items in memory), not zeroed.
Buffer<unsigned char> piece_buffer(const ArrayBytes& a) {
  Buffer<unsigned char> buffer;
  if (a.memory == nullptr) {
    buffer.resize(std::min(items_per_piece(a), a.count) * a.item_size);
  }
  return buffer;
}

/// The bytes of the `n` items from `first` on: in memory, or made into `buffer`.
const unsigned char* piece(const ArrayBytes& a, std::size_t first, std::size_t n,
                           Buffer<unsigned char>& buffer) {
  if (a.memory != nullptr) {
    return static_cast<const unsigned char*>(a.memory) + first * a.item_size;
  }
  a.make(first, n, buffer.data());
  return buffer.data();
}

/// CRC-32 of the items, pieces checksummed in parallel and combined in order.
std::uint32_t items_crc(const ArrayBytes& a) {
  const std::size_t per_piece = items_per_piece(a);
  const std::size_t pieces = (a.count + per_piece - 1) / per_piece;
  std::vector<uLong> crcs(pieces);
#pragma omp parallel if (pieces > 1)
  {
    Buffer<unsigned char> buffer;
#pragma omp for schedule(static)
    for (std::size_t k = 0; k < pieces; ++k) {
      if (a.memory == nullptr && buffer.empty()) {  // only threads that get a piece
        buffer = piece_buffer(a);
      }
      const std::size_t first = k * per_piece;
      const std::size_t n = std::min(per_piece, a.count - first);
      crcs[k] = crc32_z(0, piece(a, first, n, buffer), n * a.item_size);
    }
  }
  uLong crc = crc32_z(0, nullptr, 0);
  for (std::size_t k = 0; k < pieces; ++k) {
    const std::size_t n = std::min(per_piece, a.count - k * per_piece);
    crc = crc32_combine(crc, crcs[k], static_cast<z_off_t>(n * a.item_size));
  }
  return static_cast<std::uint32_t>(crc);
}

/// Writes the items in pieces, telling `done(bytes)` after each.
template <class Done>
void write_items(const ByteSink& out, const ArrayBytes& a, Done&& done) {
  const std::size_t per_piece = items_per_piece(a);
  Buffer<unsigned char> buffer = piece_buffer(a);
  for (std::size_t first = 0; first < a.count; first += per_piece) {
    const std::size_t n = std::min(per_piece, a.count - first);
    out(piece(a, first, n, buffer), n * a.item_size);
    done(n * a.item_size);
  }
}

constexpr std::uint32_t local_signature = 0x04034b50;
constexpr std::uint32_t central_signature = 0x02014b50;
constexpr std::uint32_t end_signature = 0x06054b50;
constexpr std::uint32_t zip64_end_signature = 0x06064b50;
constexpr std::uint32_t zip64_locator_signature = 0x07064b50;
constexpr std::uint16_t zip64_extra_id = 0x0001;
constexpr std::uint64_t marker32 = 0xFFFFFFFF;  // "the value is in the ZIP64 record"
constexpr std::uint64_t marker16 = 0xFFFF;
// Version 2.0 (stored) or 4.5 (ZIP64) needed to extract; made on Unix (3); 1980-01-01 00:00
// (MS-DOS date: day 1, month 1, year 0); mode 0600 in the high half of the attributes.
constexpr std::uint16_t version_plain = 20;
constexpr std::uint16_t version_zip64 = 45;
constexpr std::uint16_t made_on_unix = 3 << 8;
constexpr std::uint16_t dos_time = 0;
constexpr std::uint16_t dos_date = (1 << 5) | 1;
constexpr std::uint32_t unix_mode_0600 = 0600U << 16;

/// The fields the local and the central header share, from "version needed to extract" to
/// "extra field length" (APPNOTE 4.3.7 and 4.3.12); both sizes marked 0xFFFFFFFF when the
/// ZIP64 record holds them.
Fields& entry_fields(Fields& f, const Entry& e, std::uint16_t version, bool big_size,
                     std::uint64_t extra_length) {
  return f.u16(version)
      .u16(0)  // flags
      .u16(0)  // stored
      .u16(dos_time)
      .u16(dos_date)
      .u32(e.crc)
      .u32(big_size ? marker32 : e.size)
      .u32(big_size ? marker32 : e.size)
      .u16(e.file_name.size())
      .u16(extra_length);
}

std::string local_header(const Entry& e, std::uint64_t limit) {
  const bool zip64 = e.size >= limit;
  Fields f;
  entry_fields(f.u32(local_signature), e, zip64 ? version_zip64 : version_plain, zip64,
               zip64 ? 20 : 0)
      .text(e.file_name);
  if (zip64) {  // a local ZIP64 record holds both sizes
    f.u16(zip64_extra_id).u16(16).u64(e.size).u64(e.size);
  }
  return f.bytes();
}

std::string central_header(const Entry& e, std::uint64_t limit) {
  const bool big_size = e.size >= limit;
  const bool big_offset = e.offset >= limit;
  // The ZIP64 record holds, in this order, the fields marked 0xFFFFFFFF above it.
  Fields extra;
  if (big_size) {
    extra.u64(e.size).u64(e.size);
  }
  if (big_offset) {
    extra.u64(e.offset);
  }
  const bool zip64 = big_size || big_offset;
  const std::uint16_t version = zip64 ? version_zip64 : version_plain;
  Fields f;
  entry_fields(f.u32(central_signature).u16(made_on_unix | version), e, version, big_size,
               zip64 ? 4 + extra.bytes().size() : 0)
      .u16(0)  // comment
      .u16(0)  // disk
      .u16(0)  // internal attributes
      .u32(unix_mode_0600)
      .u32(big_offset ? marker32 : e.offset)
      .text(e.file_name);
  if (zip64) {
    f.u16(zip64_extra_id).u16(extra.bytes().size()).text(extra.bytes());
  }
  return f.bytes();
}

/// The end of the archive: a ZIP64 end record and its locator when a count, the directory's
/// size or its offset needs them, then the end record.
std::string end_records(std::uint64_t entries, std::uint64_t directory_offset,
                        std::uint64_t directory_size, std::uint64_t limit) {
  const bool many = entries >= std::min(limit, marker16);
  const bool big_size = directory_size >= limit;
  const bool big_offset = directory_offset >= limit;
  Fields f;
  if (many || big_size || big_offset) {
    const std::uint64_t zip64_end_offset = directory_offset + directory_size;
    f.u32(zip64_end_signature)
        .u64(44)  // the size of the rest of this record
        .u16(made_on_unix | version_zip64)
        .u16(version_zip64)
        .u32(0)  // this disk
        .u32(0)  // the disk of the directory
        .u64(entries)
        .u64(entries)
        .u64(directory_size)
        .u64(directory_offset);
    f.u32(zip64_locator_signature).u32(0).u64(zip64_end_offset).u32(1);  // 1 disk in all
  }
  f.u32(end_signature)
      .u16(0)
      .u16(0)
      .u16(many ? marker16 : entries)
      .u16(many ? marker16 : entries)
      .u32(big_size ? marker32 : directory_size)
      .u32(big_offset ? marker32 : directory_offset)
      .u16(0);  // comment
  return f.bytes();
}

}  // namespace

void write_npz(const ByteSink& out, std::span<const NpzMember> members,
               const WriteProgress& progress, std::uint64_t limit) {
  std::vector<Entry> entries;
  std::uint64_t offset = 0;
  std::uint64_t item_bytes = 0;
  for (const NpzMember& m : members) {
    Entry e;
    e.file_name = m.name + ".npy";
    e.header = npy_header(m.items.descr, m.shape);
    const std::uint64_t bytes = std::uint64_t{m.items.count} * m.items.item_size;
    e.size = e.header.size() + bytes;
    e.offset = offset;
    e.crc = static_cast<std::uint32_t>(crc32_combine(
        crc32_z(0, reinterpret_cast<const unsigned char*>(e.header.data()), e.header.size()),
        items_crc(m.items), static_cast<z_off_t>(bytes)));
    offset += local_header(e, limit).size() + e.size;
    item_bytes += bytes;
    entries.push_back(std::move(e));
  }
  std::uint64_t written = 0;
  const auto done = [&](std::size_t bytes) {
    written += bytes;
    if (progress && item_bytes > 0) {
      progress(static_cast<double>(written) / static_cast<double>(item_bytes));
    }
  };
  for (std::size_t i = 0; i < members.size(); ++i) {
    const std::string head = local_header(entries[i], limit) + entries[i].header;
    out(head.data(), head.size());
    write_items(out, members[i].items, done);
  }
  std::string directory;
  for (const Entry& e : entries) {
    directory += central_header(e, limit);
  }
  directory += end_records(entries.size(), offset, directory.size(), limit);
  out(directory.data(), directory.size());
}

std::vector<NpzMember> csr_npz_members(const CsrPattern& p, ArrayBytes data) {
  const auto offsets = p.offsets();
  const auto indices = p.indices();
  const bool small = fits_int32_indices(p);
  const Index nnz = p.nnz();
  const auto rows_plus_one = static_cast<Index>(offsets.size());
  std::vector<NpzMember> members;
  members.push_back(
      {"indices", {nnz}, small ? array_bytes(indices) : converted_bytes<std::int64_t>(indices)});
  members.push_back({"indptr",
                     {rows_plus_one},
                     small ? converted_bytes<std::int32_t>(offsets) : array_bytes(offsets)});
  static constexpr char csr[] = "csr";
  members.push_back({"format", {}, {"|S3", 3, 1, csr, {}}});
  const std::int64_t shape[2] = {p.rows, p.cols};
  members.push_back({"shape",
                     {2},
                     {npy_descr<std::int64_t>(), sizeof(std::int64_t), 2, nullptr,
                      [shape](std::size_t first, std::size_t n, void* out) {
                        std::copy_n(shape + first, n, static_cast<std::int64_t*>(out));
                      }}});
  members.push_back({"data", {nnz}, std::move(data)});
  return members;
}

}  // namespace pathlift::cli
