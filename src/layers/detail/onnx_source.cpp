// OnnxModel (onnx_source.hpp): a wire-level walk of ModelProto -> graph (field 7) -> initializer
// (GraphProto field 5) that hands every field to protobuf's own parser except the raw_data
// (TensorProto field 9) of the initializers, which it records as a range of the source and
// skips. The fields are parsed by merging, in their order, so the messages are those of
// ModelProto::ParseFromArray.

#include "src/layers/detail/onnx_source.hpp"

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/wire_format_lite.h>

#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "pathlift/error.hpp"

namespace pathlift::detail {

namespace {

using google::protobuf::io::CodedInputStream;
using google::protobuf::io::CodedOutputStream;
using google::protobuf::io::StringOutputStream;
using Wire = google::protobuf::internal::WireFormatLite;

// Field numbers of onnx.proto.
constexpr int k_model_graph = 7;        // ModelProto.graph
constexpr int k_graph_initializer = 5;  // GraphProto.initializer
constexpr int k_tensor_name = 8;        // TensorProto.name
constexpr int k_tensor_raw_data = 9;    // TensorProto.raw_data

/// The bytes read at a time from a file by the walk (the raw data is skipped, not read).
constexpr int k_file_block = 1 << 16;

FormatError not_onnx(std::string_view why = "the bytes do not parse as an ONNX ModelProto") {
  return FormatError(fmt::format("not an ONNX model ({})", why));
}

bool is_field(std::uint32_t tag, int field) {
  return Wire::GetTagFieldNumber(tag) == field &&
         Wire::GetTagWireType(tag) == Wire::WIRETYPE_LENGTH_DELIMITED;
}

/// The walk over one source of `size` bytes.
class Walk {
 public:
  Walk(CodedInputStream& in, std::uint64_t size) : m_in(in), m_size(size) {}

  /// Walks the fields of the message under the input's current limit: take(tag, out) reads a
  /// field itself (true) or leaves it (false), to be copied as it is into `rest`, whose parse
  /// gives the message without the fields taken.
  template <class Take>
  void fields(std::string& rest, Take&& take) {
    StringOutputStream buffer(&rest);
    CodedOutputStream out(&buffer);
    for (;;) {
      const std::uint32_t tag = m_in.ReadTag();
      if (tag == 0) {
        // The end of the input or of the limit; a tag 0 is no field.
        if (!m_in.ConsumedEntireMessage()) {
          throw not_onnx();
        }
        return;
      }
      if (!take(tag, out) && !Wire::SkipField(&m_in, tag, &out)) {
        throw not_onnx();
      }
    }
  }

  /// A length-delimited field's length, which must lie within its message unless it runs
  /// past the end of the source (a truncated model: message() and the raw data say where).
  std::uint32_t length() {
    std::uint32_t n = 0;
    if (!m_in.ReadVarint32(&n)) {
      throw not_onnx();
    }
    const int until = m_in.BytesUntilLimit();
    if (until >= 0 && n > static_cast<std::uint32_t>(until) && fits(n)) {
      throw not_onnx("a field runs past the end of its message");
    }
    return n;
  }

  /// Whether `n` bytes are left in the source after the current position.
  [[nodiscard]] bool fits(std::uint64_t n) const { return n <= left(); }
  /// The bytes of the source after the current position (0 past its end: a file that grew).
  [[nodiscard]] std::uint64_t left() const { return position() < m_size ? m_size - position() : 0; }
  [[nodiscard]] std::uint64_t position() const {
    return static_cast<std::uint64_t>(m_in.CurrentPosition());
  }

  /// f() on the message of `n` bytes that starts here (its own limit), which must end there.
  /// A message cut by the end of the source is walked up to it, so that the error names the
  /// deepest part cut (an initializer's raw data), then refused as truncated.
  template <class F>
  void message(std::uint32_t n, const char* what, F&& f) {
    const std::uint64_t start = position();
    const bool truncated = !fits(n);
    const auto limit = m_in.PushLimit(static_cast<int>(truncated ? left() : n));
    f();
    if (truncated) {
      throw not_onnx(
          fmt::format("{} of {} bytes at byte {} runs past the end of the model ({} "
                      "bytes): the model is truncated",
                      what, n, start, m_size));
    }
    if (m_in.BytesUntilLimit() != 0) {
      throw not_onnx();
    }
    m_in.PopLimit(limit);
  }

  CodedInputStream& in() { return m_in; }

 private:
  CodedInputStream& m_in;
  std::uint64_t m_size;
};

void merge(google::protobuf::MessageLite& message, const std::string& bytes) {
  if (!message.MergeFromString(bytes)) {
    throw not_onnx();
  }
}

}  // namespace

template <class Stream>
void OnnxModel::parse(Stream& stream, std::uint64_t size) {
  if (size > static_cast<std::uint64_t>(std::numeric_limits<int>::max())) {
    throw not_onnx(
        fmt::format("{} bytes: a serialized ModelProto holds at most 2 GiB; larger "
                    "models keep their weights in external data files, which pathlift "
                    "does not read",
                    size));
  }
  CodedInputStream in(&stream);
  Walk walk(in, size);
  std::string model_rest;
  walk.fields(model_rest, [&](std::uint32_t tag, CodedOutputStream& /*out*/) {
    if (!is_field(tag, k_model_graph)) {
      return false;
    }
    onnx::GraphProto& graph = *m_proto.mutable_graph();
    std::string graph_rest;
    walk.message(walk.length(), "the graph", [&] {
      walk.fields(graph_rest, [&](std::uint32_t graph_tag, CodedOutputStream& /*out*/) {
        if (!is_field(graph_tag, k_graph_initializer)) {
          return false;
        }
        const int index = graph.initializer_size();
        std::string tensor_rest;
        std::string name;  // when it comes before the raw data, for messages
        std::optional<Range> raw;
        walk.message(walk.length(), "an initializer", [&] {
          walk.fields(tensor_rest, [&](std::uint32_t t, CodedOutputStream& out) {
            if (is_field(t, k_tensor_name)) {
              const std::uint32_t n = walk.length();
              if (!walk.in().ReadString(&name, static_cast<int>(n))) {
                throw not_onnx();
              }
              out.WriteTag(t);
              out.WriteVarint32(n);
              out.WriteString(name);
              return true;
            }
            if (!is_field(t, k_tensor_raw_data)) {
              return false;
            }
            const std::uint32_t n = walk.length();
            if (!walk.fits(n)) {
              throw not_onnx(fmt::format(
                  "initializer {}{}: its raw data of {} bytes at byte {} runs past the end of "
                  "the model ({} bytes): the model is truncated",
                  index, name.empty() ? "" : fmt::format(" '{}'", printable(name)), n,
                  walk.position(), size));
            }
            if (!walk.in().Skip(static_cast<int>(n))) {
              throw not_onnx();
            }
            raw = Range{walk.position() - n, n};  // the last raw_data counts, as in protobuf
            return true;
          });
        });
        onnx::TensorProto& tensor = *graph.add_initializer();
        merge(tensor, tensor_rest);
        if (raw) {
          m_raw.insert_or_assign(&tensor, *raw);
        }
        return true;
      });
    });
    merge(graph, graph_rest);
    return true;
  });
  merge(m_proto, model_rest);
}

OnnxModel::OnnxModel(std::string_view bytes) : m_bytes(bytes) {
  if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    throw not_onnx(
        fmt::format("{} bytes: a serialized ModelProto holds at most 2 GiB", bytes.size()));
  }
  google::protobuf::io::ArrayInputStream stream(bytes.data(), static_cast<int>(bytes.size()));
  parse(stream, bytes.size());
}

OnnxModel::OnnxModel(InputFile file) : m_file(std::move(file)) {
  if (!m_file->regular()) {
    throw std::logic_error("OnnxModel: a file that cannot be read by ranges");
  }
  google::protobuf::io::FileInputStream stream(m_file->fd(), k_file_block);
  try {
    parse(stream, m_file->size());
  } catch (const FormatError&) {
    if (stream.GetErrno() == 0) {
      throw;
    }
    // A read error looks like the end of the bytes to the walk: the error is the read's.
    throw FormatError(fmt::format("cannot read {} '{}': {}", m_file->what(),
                                  printable(m_file->path(), 200),
                                  std::strerror(stream.GetErrno())));
  }
}

bool OnnxModel::has_raw_data(const onnx::TensorProto& t) const {
  return t.has_raw_data() || m_raw.count(&t) != 0;
}

std::size_t OnnxModel::raw_size(const onnx::TensorProto& t) const {
  const auto it = m_raw.find(&t);
  return it != m_raw.end() ? static_cast<std::size_t>(it->second.size) : t.raw_data().size();
}

void OnnxModel::read_raw(const onnx::TensorProto& t, std::size_t from, std::size_t n,
                         char* out) const {
  if (from > raw_size(t) || n > raw_size(t) - from) {
    throw std::logic_error("OnnxModel::read_raw: past the tensor's raw data");
  }
  const auto it = m_raw.find(&t);
  if (it == m_raw.end()) {
    std::memcpy(out, t.raw_data().data() + from, n);
  } else if (m_file) {
    m_file->read_at(it->second.offset + from, n, out);
  } else {
    std::memcpy(out, m_bytes.data() + it->second.offset + from, n);
  }
}

}  // namespace pathlift::detail
