#pragma once
// The ONNX importer behind read_onnx (src/onnx.cpp): one pass listing the operations pathlift
// cannot represent (onnx_support.cpp, with the input and the parameter layout), one building
// the layers (onnx.cpp). Needs ONNX_ML=1 and ONNX_NAMESPACE=onnx (set on the library target).

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "pathlift/layers.hpp"

namespace pathlift::detail {

using onnx::NodeProto;
using onnx::TensorProto;

/// The attribute `name` of node n, or null; typed readers with the operator's default.
const onnx::AttributeProto* attribute(const NodeProto& n, const char* name);
std::int64_t int_attr(const NodeProto& n, const char* name, std::int64_t fallback);
double float_attr(const NodeProto& n, const char* name, double fallback);
std::vector<Index> ints_attr(const NodeProto& n, const char* name);
std::string string_attr(const NodeProto& n, const char* name, const char* fallback);

/// The number of entries of t's shape.
Index tensor_size(const TensorProto& t);
/// Appends the values of a float, double, int32 or int64 tensor to `out`, as doubles; throws
/// FormatError for other types, external data or a size that does not match the shape.
void append_values(const TensorProto& t, std::vector<double>& out);
std::vector<double> tensor_values(const TensorProto& t);

/// "{3, 32, 32}".
std::string shape_text(const std::vector<Index>& shape);
/// Symmetric padding per spatial dimension from ONNX's [begin..., end...], or nullopt.
std::optional<std::vector<Index>> symmetric(const std::vector<Index>& pads);

/// An ONNX graph as a LayerGraph.
class Importer {
 public:
  Importer(const onnx::GraphProto& g, const std::vector<Index>& input_shape);

  LayerGraph run();

 private:
  void read_input(const std::vector<Index>& input_shape);

  [[nodiscard]] bool is_const(const std::string& t) const;

  [[nodiscard]] const TensorProto* constant(const std::string& t) const;

  [[nodiscard]] bool used(const NodeProto& n, int output) const;

  [[nodiscard]] const NodeProto* producer(const std::string& t) const;

  static std::string window_problem(const NodeProto& n);

  /// Throws FormatError for a node with fewer inputs than its operator needs, or no output.
  void check_arity(const NodeProto& n, int index) const;

  /// Why node n cannot be imported ("-" for an unknown operation), or "".
  std::string check(const NodeProto& n) const;

  /// The spatial padding of a Pad node, or nullopt when it is not a constant zero padding of
  /// the spatial dimensions with begin = end.
  [[nodiscard]] std::optional<std::vector<Index>> pad_amounts(const NodeProto& n) const;

  [[nodiscard]] std::string pad_problem(const NodeProto& n) const;

  static std::string node_name(const NodeProto& n, int index);

  Index layer_of(const std::string& tensor, const std::string& where) const;

  /// Appends `layer` (named after node n) for output tensor `out`; returns its index.
  Index add(Layer layer, const NodeProto& n, int index);

  /// Records that block `bias` (or weight) of layer l holds `values` from initializer `init`.
  void use(Index l, bool bias, const std::string& init, std::vector<double> values);

  /// The same, for a block that is tensor `init` as stored (read when theta is laid out).
  void use(Index l, bool bias, const std::string& init);

  [[noreturn]] void mismatch(const NodeProto& n, int index, const std::string& what) const;

  void build(const NodeProto& n, int index);

  void bias(const NodeProto& n, int index, Index layer, const std::string& name, Index out);

  void flatten(const NodeProto& n, int index, const std::vector<Index>& shape);

  void batch_norm(const NodeProto& n, int index, Index input, const std::vector<Index>& shape);

  /// Conv, MaxPool, AveragePool, GlobalAveragePool.
  void window(const NodeProto& n, int index);

  /// The parameter tensors in theta's order: the initializers in graph order, each alias (see
  /// the constructor) placed before the first initializer that the graph uses after it (the
  /// exporter's parameter order when modules run in the order they are registered).
  [[nodiscard]] std::vector<std::string> parameter_order() const;

  /// theta: the parameter tensors in parameter_order(); each layer's offsets point into it.
  void assign_parameters();

  struct Use {
    Index layer;
    bool bias;
    std::string init;
    std::vector<double> values;  // computed values (batch norms, transposed weights), or
    const TensorProto* tensor;   // the tensor's own
  };
  struct Padding {
    std::string source;
    std::vector<Index> pads;
  };
  const onnx::GraphProto& m_g;
  std::unordered_map<std::string, const TensorProto*> m_init;
  std::unordered_map<std::string, const TensorProto*> m_const;
  std::unordered_map<std::string, int> m_consumers;
  std::unordered_map<std::string, int> m_first_use;  // tensor -> the first node reading it
  std::vector<std::string> m_aliases;                // Identity outputs of initializers
  std::unordered_map<std::string, Index> m_layer_of;
  std::unordered_map<std::string, Padding> m_pads;
  std::unordered_map<std::string, int> m_names;
  std::vector<std::vector<Index>> m_shapes;
  std::vector<Use> m_uses;
  LayerGraph m_graph;
};

}  // namespace pathlift::detail
