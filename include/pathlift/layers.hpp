#pragma once
/// \file layers.hpp
/// The layer graph: a compact, layer-level description of a network (CNNs, ResNets, MLPs),
/// O(layers + parameters) in memory, and the unroller that turns it into the DAG of
/// network.hpp (one node per tensor entry that needs one, edges carrying parameter indices or
/// fixed weights). PyTorch (Python, torch.fx) and ONNX (C++, onnx.hpp) import produce a LayerGraph;
/// the JSON file format can hold one ("format": "pathlift-layers"). docs/layers.md has the rules,
/// the node names, the node and edge orders, the JSON form and the ONNX mapping.
///
/// Shapes are per sample, without the batch dimension: {F} for a vector, {C, L} for Conv1d
/// data, {C, H, W} for Conv2d data. Tensors are row-major: entry (c, h, w) of a {C, H, W}
/// tensor is number (c H + h) W + w, the order torch.flatten uses.
///
/// Parameters: theta is the concatenation the model's own parameter list gives
/// (model.parameters() in PyTorch, initializers in ONNX), and each layer says where its
/// parameters start in it (weight_offset, bias_offset). A layer applied twice (weight sharing)
/// has two Layer entries with the same offsets. The layout of each parameter block, row-major,
/// is in its kind's description (describe(kind); the list pathlift/layer_kinds.def).
///
/// Example (a LeNet-like block):
/// \code
///   pathlift::LayerGraph g;
///   g.input_shape = {1, 28, 28};
///   pathlift::Layer conv{.kind = pathlift::LayerKind::conv, .name = "conv1", .inputs = {0}};
///   conv.out_channels = 6; conv.kernel = {5, 5}; conv.weight_offset = 0; conv.bias_offset = 150;
///   g.layers.push_back(conv);                                   // layer 1
///   g.layers.push_back({.kind = pathlift::LayerKind::activation, .name = "relu1",
///                       .inputs = {1}, .activation = pathlift::Activation::relu()});
///   g.outputs = {2};
///   g.num_params = 156;
///   const pathlift::Network net = pathlift::unroll(g);         // validates g first
/// \endcode

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pathlift/network.hpp"
#include "pathlift/options.hpp"
#include "pathlift/types.hpp"

namespace pathlift {

/// The layer kinds, one per entry of the list pathlift/layer_kinds.def, in its order: the
/// list gives each its JSON name and what a layer of it is (describe(kind)).
enum class LayerKind : std::uint8_t {
#define PATHLIFT_LAYER_KIND(name, description) name,
#include "pathlift/layer_kinds.def"
};

/// "linear", "conv", "max_pool", ... (the JSON names); parse_layer_kind throws FormatError
/// listing the names.
std::string to_string(LayerKind kind);
LayerKind parse_layer_kind(std::string_view name);
/// Every layer kind, in declaration order (the one list: the Python face's layer_kinds()).
std::vector<LayerKind> layer_kinds();

/// What a layer of `kind` is, in one line (for a kind with parameters, the layout of its
/// blocks in theta).
std::string describe(LayerKind kind);

/// A field of Layer beyond kind, name and inputs: its key (the JSON key, Python's keyword),
/// what it means, and the kinds that have it (in declaration order).
struct LayerField {
  std::string key;
  std::string doc;
  std::vector<LayerKind> kinds;
};
/// Every field (the one list: the JSON reader and writer, the docstrings of Python's Layer), in
/// the order the JSON reader reads them.
std::vector<LayerField> layer_fields();

/// One layer. Only the fields of its kind are read (layer_fields() says which kinds have each);
/// the others keep their defaults.
struct Layer {
  LayerKind kind = LayerKind::input;
  std::string name;           ///< unique, non-empty: names the layer in messages and nodes
  std::vector<Index> inputs;  ///< earlier layers (indices < this layer's index)

  // linear
  Index out_features = 0;
  // conv
  Index out_channels = 0;
  Index groups = 1;
  // convolutions (conv and its transpose) and pools: one entry per spatial dimension (1 or 2);
  // stride defaults to kernel for pools and to 1 for conv when left empty; padding and dilation
  // default to 0 and 1.
  std::vector<Index> kernel, stride, padding, dilation;
  // the transposed convolution: PyTorch's output_padding (added at the end of each spatial
  // dimension)
  std::vector<Index> output_padding;
  // k_max_pool: which order statistic (1: the largest)
  Index k = 1;
  // group_sort: the group size g along axis 0 and the order
  Index group_size = 0;
  bool descending = false;
  // interpolate: PyTorch's align_corners, and its scale_factor per spatial dimension when the
  // caller gave one (the source coordinate then uses 1 / scale, not in / out; empty: in / out)
  bool align_corners = false;
  std::vector<double> scales;
  // max_pool, k_max_pool, avg_pool: PyTorch's ceil_mode (a last window that starts inside the input
  // or the left padding is kept though it runs past the end)
  bool ceil_mode = false;
  // avg_pool: PyTorch's count_include_pad (divide by the window clipped to the padded input,
  // padding included)
  bool count_include_pad = true;
  // adaptive_avg_pool, interpolate: the output spatial size
  std::vector<Index> output_size;
  // concat, and the layer that picks entries by index: the dimension (0: channels)
  Index axis = 0;
  // the layer that picks entries: the input index along `axis` of each output index
  std::vector<Index> indices;
  // scale: the fixed weight
  double factor = 1.0;
  // activation
  Activation activation = Activation::identity();

  // Parameters (linear, conv and its transpose, batch_norm): where the blocks start in theta;
  // -1 = no bias.
  Index weight_offset = -1;
  Index bias_offset = -1;

  bool operator==(const Layer&) const = default;
};

/// A network as layers. Layer 0 is the input; layers are in a topological order.
struct LayerGraph {
  std::vector<Index> input_shape;  ///< per sample, e.g. {3, 32, 32}
  std::vector<Layer> layers;       ///< layers[0].kind == LayerKind::input
  std::vector<Index> outputs;      ///< layers whose entries are the outputs, concatenated
  Index num_params = 0;            ///< d, the length of theta
  std::optional<std::vector<double>> weights;  ///< theta (d entries), if known
  /// What the importer noticed that is not an error (an ONNX export that folded batch norms
  /// into convolutions, so that theta is not the model's parameters): for the user, not part of
  /// the network (not written to JSON).
  std::vector<std::string> warnings;

  bool operator==(const LayerGraph&) const = default;
};

/// The output shape of every layer (result[i] for layers[i]), validating the graph. Throws
/// NetworkError naming the layer for: a bad input reference, a shape mismatch (with both
/// shapes), a kernel larger than its padded input, a parameter block outside [0, num_params),
/// groups not dividing the channels, a wrong number of weights, a non-finite weight.
/// Complexity: O(layers).
std::vector<std::vector<Index>> layer_shapes(const LayerGraph& graph);

/// The unrolled DAG. Nodes: one input node per input entry, named "x[i]" for a {F} input and
/// "x[c,h,w]" otherwise (row-major order, the data columns), one bias node "<layer>.bias" per
/// layer with a bias, one node per entry of each layer output that needs one, named
/// "<layer>[c,h,w]"; the output nodes are last, named "y<j>" (j over the concatenated output
/// entries, so f(X)'s columns are the model's flattened outputs). Sums stay pending until a
/// layer needs node values (linear, conv, pools, batch_norm, activation, sub's second operand,
/// an output): relu(conv(x) + skip) is one ReLU node per entry whose incoming edges are the
/// convolution's (carrying parameters), its bias edge and a fixed edge 1 from the skip.
/// Max-pool nodes are nodes of activation max whose incoming edges are fixed at 1.
/// Edges carry the parameter indices of the blocks above; the result's d is num_params and its
/// weights are graph.weights. Node order: the inputs, then layer by layer its bias node and the
/// nodes it makes, the outputs last. Edge order: by the layer that makes the nodes, then by
/// term block (a linear or conv sum: weights, then bias; an add: its operands in order), then
/// by node, then by increasing parameter index within a block; so an MLP (Linear, ReLU, ...,
/// Linear on a {F} input) is feed_forward(F, widths, q, bias) exactly, edge k carrying
/// parameter k. Entries no output depends on are not made (an input entry no output depends on
/// is an error). Parallel over output entries, deterministic, the same for any thread count.
/// Throws what layer_shapes throws; TooLarge (with the node and edge counts) when the unrolled
/// network would exceed options.max_memory bytes (0: half of physical RAM) before allocating
/// it, and before any per-entry work when the unroller's own plan (about 12 bytes per tensor
/// entry) would exceed it (the message gives the entries and upper bounds on the nodes and
/// edges). A Model (model.hpp) unrolls once and keeps the DAG.
Network unroll(const LayerGraph& graph, const EngineOptions& options = {});

/// Node and edge counts of unroll(graph), computed without unrolling: O(layers + entries)
/// time, about 12 bytes per tensor entry; TooLarge, before any per-entry work, when that
/// exceeds options.max_memory (0: half of physical RAM).
struct UnrolledSize {
  Index nodes = 0;
  Index edges = 0;
};
UnrolledSize unrolled_size(const LayerGraph& graph, const EngineOptions& options = {});

/// The layer graph as JSON ("format": "pathlift-layers", "version": 1), and back. Throws
/// FormatError naming the key, NetworkError from layer_shapes.
std::string layer_graph_to_json(const LayerGraph& graph, int indent = -1);
LayerGraph parse_layer_graph(std::string_view json_text);

}  // namespace pathlift
