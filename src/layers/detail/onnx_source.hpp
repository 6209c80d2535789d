#pragma once
// An ONNX model as read (docs/layers.md, "ONNX"): the ModelProto without the raw data of its
// initializers, which stays where it is, in the caller's bytes or in the file, and is read in
// blocks when a tensor is read (onnx_tensors.cpp). So reading a model holds at most the file's
// bytes (none for a file) plus what the importer keeps of the tensors: theta, as doubles, and
// not protobuf's copy of every raw_data besides. Needs ONNX_ML=1 and ONNX_NAMESPACE=onnx (set
// on the library target).

#include <onnx/onnx_pb.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "src/network/input_file.hpp"

namespace pathlift::detail {

/// The model, parsed as protobuf would parse it (the same messages, in the same order) except
/// that each initializer's raw_data is recorded as a range of the source and skipped.
class OnnxModel {
 public:
  /// The model serialized in `bytes`, which must outlive it (they are not copied).
  explicit OnnxModel(std::string_view bytes);
  /// The model in the regular file `file`, read sequentially once, then by ranges.
  explicit OnnxModel(InputFile file);
  OnnxModel(const OnnxModel&) = delete;
  OnnxModel& operator=(const OnnxModel&) = delete;

  [[nodiscard]] const onnx::ModelProto& proto() const { return m_proto; }

  /// Whether t's data is raw bytes (rather than a typed list), and how many.
  [[nodiscard]] bool has_raw_data(const onnx::TensorProto& t) const;
  [[nodiscard]] std::size_t raw_size(const onnx::TensorProto& t) const;
  /// Bytes [from, from + n) of t's raw data into `out` (within raw_size(t)).
  void read_raw(const onnx::TensorProto& t, std::size_t from, std::size_t n, char* out) const;

 private:
  struct Range {
    std::uint64_t offset;
    std::uint64_t size;
  };
  template <class Stream>
  void parse(Stream& stream, std::uint64_t size);

  onnx::ModelProto m_proto;
  std::unordered_map<const onnx::TensorProto*, Range> m_raw;  // the initializers' raw_data
  std::string_view m_bytes;                                   // the source: the bytes,
  std::optional<InputFile> m_file;                            //   or the file
};

}  // namespace pathlift::detail
