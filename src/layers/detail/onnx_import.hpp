#pragma once
// The ONNX importer behind read_onnx and parse_onnx (onnx.hpp; docs/layers.md, "ONNX").
// One pass indexes and validates the model (onnx_support.cpp: opsets, initializers, the data
// input, every node's arity, who writes and who reads each tensor); one pass walks the nodes in
// order and gives every tensor a state (onnx.cpp): a layer output of the LayerGraphBuilder, an
// initializer, a constant evaluated at import (onnx_fold.cpp: shape subgraphs), a pending Pad,
// a pending reshape / transpose of a layer's entries (onnx_views.cpp, which also makes the
// gathers of Slice, Split, Gather and copy paddings; onnx_resize.cpp those of Resize and
// Upsample), or failed; theta is laid out last (onnx_theta.cpp). Constants of several
// dimensions are folded in onnx_fold_tensors.cpp; Clip, Mul / Div and the reductions are in
// onnx_scale.cpp. The model comes from onnx_source.cpp,
// which leaves the initializers' raw data in its source; tensors and attributes are read with
// checked sizes in onnx_tensors.cpp, raw data in blocks. Every node is visited once and every
// lookup is a hash: the import is linear in the model's size. Needs ONNX_ML=1 and
// ONNX_NAMESPACE=onnx (set on the library target).

#include <onnx/onnx_pb.h>

#include <array>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "pathlift/layer_graph_builder.hpp"
#include "pathlift/layers.hpp"
#include "src/core/checked.hpp"
#include "src/layers/detail/layer_rules.hpp"
#include "src/layers/detail/onnx_source.hpp"

namespace pathlift::detail {

using onnx::NodeProto;
using onnx::TensorProto;

/// The newest opset of the default domain (ai.onnx) the importer reads: the operators it
/// supports are unchanged up to it (Pad's axes input, new in 18, is read).
inline constexpr std::int64_t k_max_opset = 18;

/// The most entries a constant evaluated at import (a shape computation) may have.
inline constexpr Index k_max_constant_entries = Index{1} << 16;

// ---------------------------------------------------------------------------------------------
// Attributes and tensors (onnx_tensors.cpp). Every error is a FormatError naming the tensor. A
// tensor's data is read from `model`, where its raw bytes are (onnx_source.hpp).

/// The attribute `name` of node n, or null; typed readers with the operator's default.
const onnx::AttributeProto* attribute(const NodeProto& n, std::string_view name);
std::int64_t int_attr(const NodeProto& n, std::string_view name, std::int64_t fallback);
double float_attr(const NodeProto& n, std::string_view name, double fallback);
std::optional<std::vector<Index>> ints_attr(const NodeProto& n, std::string_view name);
std::string string_attr(const NodeProto& n, std::string_view name, const char* fallback);

/// "FLOAT", "INT64", ... for a TensorProto data type.
std::string type_name(int data_type);
bool is_floating(int data_type);

/// t's dims, each checked non-negative, and their product checked against overflow.
std::vector<Index> tensor_dims(const TensorProto& t);
Index tensor_entries(const TensorProto& t);
/// Checks that t's data (raw bytes or typed list) holds exactly its entries, before anything is
/// read or reserved; refuses external data and types without numbers.
void check_tensor_data(const OnnxModel& model, const TensorProto& t);

/// The values of a FLOAT or DOUBLE tensor (checked first) as doubles, in blocks of at most
/// 16,384: visit(first, values) with `values` the entries first, first + 1, ... in order.
void read_floats(const OnnxModel& model, const TensorProto& t,
                 const std::function<void(std::size_t, std::span<const double>)>& visit);
/// The values of a FLOAT or DOUBLE tensor, appended to `out` (checked first, then reserved).
void append_floats(const OnnxModel& model, const TensorProto& t, std::vector<double>& out);
std::vector<double> float_values(const OnnxModel& model, const TensorProto& t);

/// `v` as an integer, or a FormatError naming `what` when it is not finite, not integral or
/// outside int64.
std::int64_t checked_integer(double v, std::string_view what);

/// One entry of a constant evaluated at import: an integer, a floating value, or the batch
/// size (symbolic: the entry 0 of a Shape of a tensor computed from the data).
struct Scalar {
  std::int64_t i = 0;
  double f = 0;
  bool batch = false;
};

/// A constant tensor evaluated at import (a Constant node, an initializer read as a constant,
/// the result of a shape computation).
struct Constant {
  std::vector<Index> dims;
  bool real = false;  ///< floating values (f), else integers (i; booleans as 0 and 1)
  std::vector<Scalar> values;
};

/// The constant held by tensor t (at most k_max_constant_entries, checked by the caller).
Constant constant_of(const OnnxModel& model, const TensorProto& t);

/// "[batch, 2, -1]": a constant's values, for messages.
std::string constant_text(const Constant& c);

/// The entries a Slice keeps along an axis of `size` entries (ONNX's rule: negative starts and
/// ends count from the end, then both are clamped; the step is not 0), in order.
std::vector<Index> slice_indices(std::int64_t start, std::int64_t end, std::int64_t step,
                                 Index size);

// ---------------------------------------------------------------------------------------------
// The importer.

/// "Add, AveragePool, ...": the names of the operators read (onnx_operators.cpp).
std::string operator_names();

/// Why an operator outside the table is refused whatever its inputs, when pathlift knows
/// (an activation that is not positively homogeneous: Sigmoid, Tanh, Gelu, Softmax, ...), else
/// "" (onnx_operators.cpp).
std::string_view known_refusal(std::string_view op_type);

/// A layer of `kind` named `name` reading `inputs` (its other fields at their defaults).
inline Layer make_layer(LayerKind kind, std::string name, std::vector<Index> inputs) {
  Layer l;
  l.kind = kind;
  l.name = std::move(name);
  l.inputs = std::move(inputs);
  return l;
}

/// The entries of a builder layer reshaped and transposed (Reshape, Transpose, Flatten of a
/// tensor computed from the data), known symbolically (onnx_views.cpp). The source's entries, in
/// row-major order, are numbered by a mixed radix whose digits are the "atoms" (size, stride in
/// the source's entry number): at first one per source dimension. Each per-sample dimension of
/// the view is a list of atoms, most significant first. A reshape merges the atoms that are
/// contiguous in the view's order, then regroups them, splitting one where a new dimension ends
/// inside it (when the dimension's remaining size divides it); a transpose permutes the
/// dimensions: O(rank) each, nothing per entry. The view becomes layers again (gathers, a
/// flatten) when each of its dimensions is made of the atoms of the source's dimension of the
/// same position (the source's shape, its entries permuted within each dimension: a channel
/// shuffle), or when it is a vector.
struct EntryView {
  struct Atom {
    Index size = 1;
    Index stride = 1;
  };
  Index layer = -1;                    ///< the source layer
  int node = -1;                       ///< the node that made the view (named when refused)
  std::vector<Atom> atoms;             ///< the atoms (at most 31: each of size 2 or more)
  std::vector<std::vector<int>> dims;  ///< per view dimension, its atoms (indices above)

  /// The per-sample shape of the view.
  [[nodiscard]] std::vector<Index> shape() const;
};

/// The view of layer `layer`'s entries as they are (shape: its per-sample shape), made by node.
std::shared_ptr<EntryView> identity_view(Index layer, const std::vector<Index>& shape, int node);

/// v reshaped to `shape` (the same number of entries, row-major). False when a new dimension
/// would end inside an atom that its remaining size does not divide: the reshape mixes digits.
bool reshape_view(EntryView& v, const std::vector<Index>& shape);

/// An ONNX model as a LayerGraph.
class Importer {
 public:
  /// Validates and indexes the model (onnx_support.cpp): throws FormatError for an invalid
  /// model, UnsupportedModel for an opset too new or several data inputs. theta must fit in
  /// `max_memory` (0: the default limit).
  Importer(const OnnxModel& model, const std::vector<Index>& input_shape, std::size_t max_memory);

  LayerGraph run();

  /// When a node is a constant evaluated at import rather than a layer (Importer::fold).
  enum class FoldWhen : unsigned char {
    never,         ///< always a layer (or refused)
    always,        ///< always a constant (Constant, Shape, Cast, ...)
    of_constant,   ///< when its input 0 is a constant or an initializer
    all_constant,  ///< when every input is a constant or an initializer
  };
  /// An operator pathlift reads: one entry of the table (onnx_operators.cpp), which is the only
  /// list of them. The arity is the range over the opsets read (from first_opset to
  /// k_max_opset); `attributes` and `becomes` are what docs/onnx-operators.md shows.
  struct Operator {
    std::string_view name;
    int first_opset;
    int min_in, max_in, min_out, max_out;  // k_many: no bound
    std::string_view attributes;
    std::string_view becomes;
    /// Why a node is refused whatever its inputs (its attributes, an output that is used), or
    /// ""; null: never.
    std::string (Importer::*problem)(int) const;
    FoldWhen fold_when;
    void (Importer::*fold)(int);   ///< when fold_when holds
    void (Importer::*build)(int);  ///< otherwise: its layers
    /// The layer kind its node builds, for an operator that becomes one layer of one kind
    /// (node_layer()); none for the others.
    std::optional<LayerKind> kind = std::nullopt;
  };
  static constexpr int k_many = std::numeric_limits<int>::max();
  /// The table, sorted by name.
  static std::span<const Operator> operators();
  /// The entry of n's operator (ai.onnx operators only), or null.
  static const Operator* operator_of(const NodeProto& n);
  /// The layer node i builds: of its operator's kind (the table's), named after the node,
  /// reading `inputs`. logic_error for an operator without a kind.
  [[nodiscard]] Layer node_layer(int i, std::vector<Index> inputs) const;

 private:
  /// What a tensor is, as the nodes are walked in order.
  enum class Kind : unsigned char {
    failed,       ///< its node was refused (or reads one that was): readers are skipped
    data,         ///< the output of builder layer `layer`
    initializer,  ///< initializer `tensor`, as parameter `param` (an Identity alias's own name)
    transposed,   ///< Transpose (perm [1, 0]) of initializer `tensor`, parameter `param`
    constant,     ///< `value`, evaluated at import
    pad,          ///< a zero Pad of layer `layer` by `pads` (per spatial dimension), pending
    view,         ///< layer `layer`'s entries reshaped and transposed (`view`), pending
  };
  struct Tensor {
    Kind kind = Kind::failed;
    Index layer = -1;
    const TensorProto* tensor = nullptr;
    std::string param;
    std::shared_ptr<const Constant> value;
    std::vector<Index> pads;
    std::shared_ptr<const EntryView> view;
  };
  /// A parameter block of a layer: where theta takes it from.
  struct Use {
    Index layer;
    bool bias;
    std::string param;          // the initializer's (or alias's) name
    const TensorProto* tensor;  // its values as stored (transposed when `transpose`),
    bool transpose;             //   or
    std::shared_ptr<std::vector<double>> values;  // values computed at import (batch norms)
  };
  struct Producer {
    int node;
    int slot;
  };

  // onnx_support.cpp: the first pass.
  void check_opsets(const onnx::ModelProto& model);
  /// Every name the graph gives is UTF-8 text (FormatError naming the first that is not).
  void check_names() const;
  void index_initializers();
  void read_input(const std::vector<Index>& input_shape);
  void index_nodes();
  void check_arity(int i) const;
  void index_outputs();

  // onnx.cpp: the second pass.
  void build(int i);
  [[nodiscard]] std::string node_name(int i) const;
  [[nodiscard]] std::string label(int i) const;  // "'name' (Op)"
  void unsupported(int i, const std::string& why);
  void invalid(int i, const std::string& what);
  void set(const std::string& name, Tensor t);
  /// Records `name` as the constant c (folded at import).
  void set_constant(const std::string& name, Constant c);
  void set_data(int i, const LayerOutput& out);
  [[nodiscard]] const Tensor& state(const std::string& name) const;
  /// Whether output `slot` of node i is read by a node or is a graph output.
  [[nodiscard]] bool used(int i, int slot) const;
  /// The node's input `k` as data (a layer output); false after recording why not.
  bool data_input(int i, int k, Index& layer);
  void add_linear(int i, Index x, const Tensor& w, const Tensor* b, bool as_stored,
                  std::array<Index, 2> out_in);
  /// A Conv's or ConvTranspose's layer `l` (node i), with its weight w (shape wd) and bias b
  /// as stored: the builder's layer, the tensors marked used, node i's output.
  void add_convolution(int i, Layer l, const Tensor& w, const std::vector<Index>& wd,
                       const Tensor* b);
  void gemm(int i);
  [[nodiscard]] std::string gemm_problem(int i) const;
  [[nodiscard]] std::string max_pool_problem(int i) const;
  [[nodiscard]] std::string batch_norm_problem(int i) const;
  [[nodiscard]] std::string dropout_problem(int i) const;
  [[nodiscard]] std::string pad_problem(int i) const;
  [[nodiscard]] std::string resize_problem(int i) const;
  /// Relu and LeakyRelu: an activation layer.
  void activation(int i);
  /// Identity and Dropout: the same tensor (an initializer's alias is a parameter of its own).
  void identity(int i);
  /// An operator read only on constants (Floor, Cast, ...), here reading the data: refused.
  void data_operand(int i);
  void matmul(int i);
  /// The Add that adds a bias to MatMul node i's output: its index, or -1.
  int bias_add(int i, Index out_features, std::string& bias) const;
  void conv_or_pool(int i);
  /// A window's integer attribute (kernel_shape, strides, dilations: entries from 1;
  /// output_padding: from 0).
  struct WindowInts {
    const char* name;
    const std::vector<Index>* values;
    Index lowest = 1;
  };
  /// Whether each list has one entry per spatial dimension of the input of per-sample shape
  /// `shape`, each in lowest..k_max_dim; false after recording which is not.
  bool window_ints_fit(int i, std::initializer_list<WindowInts> lists,
                       const std::vector<Index>& shape);
  /// The padding of node i per spatial dimension (pads or auto_pad), or nullopt after recording
  /// why; `in` is the spatial input size.
  std::optional<std::vector<Index>> window_padding(int i, const std::vector<Index>& in,
                                                   const std::vector<Index>& kernel,
                                                   const std::vector<Index>& stride,
                                                   const std::vector<Index>& dilation);
  /// ConvTranspose: a transposed convolution layer.
  void transposed_conv(int i);
  void batch_norm(int i);
  void add_sub_concat(int i);
  void flatten(int i);
  void reshape(int i);
  void pad(int i);

  // onnx_scale.cpp: fixed-weight maps and order statistics.
  void clip(int i);
  /// Max and Min of computed tensors of one shape: a group_sort of the interleaved inputs.
  void max_min(int i);
  [[nodiscard]] std::string top_k_problem(int i) const;
  void mul_div(int i);
  void reduce(int i);

  // onnx_views.cpp: entries picked, repeated, reshaped and permuted.
  /// Appends a layer picking entries of layer `x` along pathlift's `axis` (pick_layer, named
  /// after node i) unless `indices` picks every entry in order; x becomes the result. False
  /// when the builder refused it (it recorded why).
  bool gather_along(int i, Index& x, Index axis, std::vector<Index> indices);
  /// Counts `count` more picked indices (node i is about to make them): TooLarge, before they
  /// are allocated, when all of them exceed the memory limit.
  void count_indices(int i, Index count);
  /// Sets output `slot` of node i to layer x.
  void set_output(int i, int slot, Index x);
  /// The node's input 0 as data (a layer output, or a view when `view` is given), else false
  /// after recording why not.
  bool data_or_view(int i, Index& layer, std::shared_ptr<const EntryView>* view);
  /// Records (once per view) that a view is read by what cannot read it, naming the node that
  /// made it.
  void refuse_view(const EntryView& v, const std::string& reader);
  /// Output 0 of node i is `v`: made into layers when it can be (see EntryView), else left
  /// pending.
  void set_view(int i, std::shared_ptr<EntryView> v);
  /// v's entries as layers, or -1 when v is neither the source's dimensions, each made of its
  /// own atoms, nor a vector (-2: the builder refused a layer, and recorded why).
  Index materialise(int i, const EntryView& v);
  /// ONNX's axis `axis` of a rank-`rank` tensor (the batch included) as a non-negative axis, or
  /// -1 after recording why not (`what` names the attribute).
  Index onnx_axis(int i, std::int64_t axis, Index rank, const char* what);
  /// Node i's "axis" attribute on an input of per-sample shape `shape`, as an axis past the
  /// batch (>= 1), or -1 after recording why not (out of range, or the batch itself).
  Index sample_axis(int i, const std::vector<Index>& shape);
  /// Whether an output of per-sample shape `out_shape` has at most k_max_dim entries (else
  /// recorded as invalid).
  bool output_fits(int i, const std::vector<Index>& out_shape);
  /// Node i's "perm" (by default the dimensions reversed) for a tensor of `rank` dimensions,
  /// or empty after recording that it is not a permutation (`of` ends the message: "of shape
  /// [2, 3]").
  std::vector<Index> transpose_perm(int i, Index rank, std::string_view of);
  void transpose(int i);
  void slice(int i);
  void split(int i);
  /// Gather of constant indices: a layer picking entries (gather_along).
  void gather_constant(int i);
  /// A reflect or edge Pad (`mode`) of layer x by `pads` (begins, then ends) on `axes`: gathers.
  void copy_pad(int i, Index x, const std::string& mode, const std::vector<std::int64_t>& pads,
                const std::vector<Index>& axes);
  // onnx_resize.cpp
  void resize(int i);
  /// A parameter tensor of node i (input k): a floating initializer, with `param` its name in
  /// theta; null after recording why not.
  const Tensor* parameter(int i, int k, const char* what);
  void use(Index layer, bool bias, const Tensor& t, bool transpose);

  // onnx_fold.cpp: constants.
  /// Evaluates node i when its op is a constant computation; false when it is not one.
  bool fold(int i);
  /// The value of input `k` of node i as a constant, or null after recording why not (or when
  /// the input failed).
  std::shared_ptr<const Constant> constant_input(int i, int k);
  /// The integers of input `k` or, when absent, of attribute `attr` (null: none) into `out`
  /// (nullopt when neither is given); false after recording why not.
  bool ints_input(int i, int k, const char* attr, std::optional<std::vector<std::int64_t>>& out);
  /// Slice's starts, ends, axes and steps (inputs 1..4 from opset 10, attributes before);
  /// false, with the problem recorded, when one cannot be read or starts or ends is missing.
  /// A Slice's inputs, one entry per sliced axis: axes and steps filled with their defaults
  /// (0, 1, ... and 1), axes as written (possibly negative).
  struct SliceArgs {
    std::vector<std::int64_t> starts, ends, axes, steps;
  };
  bool slice_args(int i, SliceArgs& out);
  void fold_constant_node(int i);
  void fold_shape(int i);
  void fold_gather(int i);
  void fold_cast(int i);
  void fold_constant_of_shape(int i);
  void fold_concat(int i);
  void fold_unsqueeze(int i);  // and Squeeze
  void fold_arithmetic(int i);
  /// An Identity of constants: the same constant, or of an initializer an alias (a parameter).
  void fold_identity(int i);
  // onnx_fold_tensors.cpp
  void fold_slice(int i);
  void fold_reshape(int i);
  void fold_transpose(int i);
  void fold_floor(int i);

  // onnx_theta.cpp: theta.
  /// The parameters in theta's order: the initializers in graph order, each alias placed before
  /// the first initializer that the graph uses after it (model.parameters() order for
  /// torch.onnx.export).
  [[nodiscard]] std::vector<std::string> parameter_order() const;
  /// theta and every layer's offsets; throws NetworkError for a value that is not finite,
  /// TooLarge (before anything is reserved) when theta's doubles exceed the memory limit.
  std::vector<double> lay_out_theta();
  /// The values use u puts in theta, written to out[0, size).
  void write_block(const Use& u, double* out) const;
  /// LayerGraph::warnings: convolutions whose initializers the exporter made (folded batch
  /// norms).
  [[nodiscard]] std::vector<std::string> exporter_warnings() const;

  const OnnxModel& m_model;
  const onnx::GraphProto& m_g;
  std::size_t m_max_memory;
  std::int64_t m_opset = 0;  // the opset of the default domain
  std::optional<LayerGraphBuilder> m_builder;
  std::unordered_map<std::string, const TensorProto*> m_init;
  std::unordered_map<std::string, Producer> m_producer;
  std::unordered_map<std::string, std::vector<int>> m_readers;  // tensor -> reading nodes
  std::unordered_map<std::string, int> m_first_use;  // parameter -> first node reading it
  std::unordered_map<std::string, int> m_graph_outputs;
  std::string m_input;                 // the data input's name
  std::vector<std::string> m_aliases;  // Identity outputs of initializers, last first
  std::unordered_map<std::string, Tensor> m_tensors;
  std::vector<Use> m_uses;
  std::vector<int> m_layer_node;  // builder layer -> the node that made it (-1: input)
  std::vector<int> m_absorbed;    // node -> 1 when it is a MatMul's bias Add
  std::vector<std::string> m_unsupported;
  bool m_unknown_op = false;  // an operator outside the table was met
  std::vector<std::string> m_invalid;
  std::vector<int> m_view_refused;  // nodes whose view was refused (each once)
  double m_indices = 0;             // picked indices made so far (count_indices)
  // Max / Min: the sorted interleaving of each list of operands, shared by a Max and a Min of
  // the same operands (MaxMin), as from_torch shares it.
  std::map<std::vector<Index>, Index> m_sorted;
};

}  // namespace pathlift::detail
