#pragma once
/// \file layer_graph_builder.hpp
/// LayerGraphBuilder: the one way a layer graph (layers.hpp) is made. The ONNX reader, the
/// JSON reader ("pathlift-layers") and the PyTorch importer (through the Python binding) add
/// their layers to a builder, which owns the rules they share: the shape of every layer's output
/// (checked arithmetic, O(1) per layer: nothing is validated twice), the shapes of the parameter
/// tensors a layer reads, the names of the layers (one rule for duplicates), the folding of an
/// eval-mode batch norm into its affine map, and the collection of every problem, so that an
/// importer reports all of them at once. layer_shapes() validates a whole graph with the same
/// rules.
///
/// A layer that breaks a rule is still appended (the indices of the layers after it do not
/// move), marked failed, and its problem recorded; a layer that reads a failed layer is marked
/// failed without a problem of its own (one cause, one message). finish() throws when any
/// problem was recorded.
///
/// Example (Linear -> ReLU on a vector of 4):
/// \code
///   pathlift::LayerGraphBuilder b({4});
///   pathlift::Layer fc{.kind = pathlift::LayerKind::linear, .name = "fc", .inputs = {0}};
///   fc.out_features = 3;
///   fc.weight_offset = 0;
///   fc.bias_offset = 12;
///   const pathlift::LayerOutput h = b.add(fc);                      // shape {3}
///   const pathlift::LayerOutput y = b.add({.kind = pathlift::LayerKind::activation,
///                                          .name = "relu", .inputs = {h.layer},
///                                          .activation = pathlift::Activation::relu()});
///   b.output(y.layer);
///   const pathlift::LayerGraph g = b.finish(15);                     // d = 15
/// \endcode

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "pathlift/layers.hpp"
#include "pathlift/types.hpp"

namespace pathlift {

/// A layer's output as the builder made it: its index in the graph and its per-sample shape.
/// `ok` is false for a layer that broke a rule or reads one that did (its shape is then empty).
struct LayerOutput {
  Index layer = -1;
  std::vector<Index> shape;
  bool ok = false;
};

/// What an importer knows of the tensor a parameter block comes from: its name (for messages,
/// "conv1.weight") and its shape, checked against the block the layer reads: linear
/// (out_features, in_features); conv (out_channels, in_channels / groups, kernel...); the
/// bias, batch_norm's a and b: one entry per output channel (a shape of any rank with that
/// many entries).
struct ParameterTensor {
  std::string name;
  std::vector<Index> shape;
};

/// The parameter tensors of one layer, when the importer knows them (the JSON format does not).
struct LayerParameters {
  std::optional<ParameterTensor> weight;
  std::optional<ParameterTensor> bias;
};

/// How the builder names layers. `unique`: a name already taken (or "x", the input entries'
/// name, or empty) becomes name_2, name_3, ... (the first free one): what importers use.
/// `strict`: such a name is a problem: what a file or a hand-made graph must satisfy.
enum class LayerNames : unsigned char { unique, strict };

/// An eval-mode batch norm y = gamma (x - mean) / sqrt(var + eps) + beta as the affine map
/// y = a x + b per channel: a = gamma / std, b = beta - a mean, with std = sqrt(var + eps)
/// (docs/layers.md#graph), rounded in that order. std and mean depend on the running statistics
/// only, so a and b are linear in gamma and beta (what a differentiable theta and its inverse,
/// gamma = a std and beta = b + a mean, need).
struct BatchNormCoefficients {
  std::vector<double> std;   ///< sqrt(var + eps), per channel
  std::vector<double> mean;  ///< the running mean, per channel
};

/// The coefficients of a batch norm with running statistics `mean` and `var` (one entry per
/// channel) and `eps`. Throws NetworkError naming `where` and the channel when var + eps is not
/// positive or an entry is not finite, std::invalid_argument for lengths that differ.
/// Complexity: O(channels).
BatchNormCoefficients batch_norm_coefficients(std::span<const double> mean,
                                              std::span<const double> var, double eps,
                                              std::string_view where);

/// a and b of a batch norm (the affine map above), from its parameters and statistics.
struct BatchNormAffine {
  std::vector<double> a;
  std::vector<double> b;
};
BatchNormAffine fold_batch_norm(std::span<const double> gamma, std::span<const double> beta,
                                std::span<const double> mean, std::span<const double> var,
                                double eps, std::string_view where);

/// Builds a LayerGraph layer by layer (see the file comment).
class LayerGraphBuilder {
 public:
  /// A graph whose layer 0 is the input, of shape `input_shape` (per sample, 1 to 3
  /// dimensions), named `input_name`. Throws NetworkError for a bad shape: nothing can be built
  /// on it.
  explicit LayerGraphBuilder(std::vector<Index> input_shape, std::string input_name = "input",
                             LayerNames names = LayerNames::unique);

  /// The input layer's output (layer 0).
  [[nodiscard]] LayerOutput input() const;

  /// Appends `layer` (its inputs are indices of earlier layers) and returns its output. Checks,
  /// in O(1) besides the layer's own lists: the input references and their count, the shapes
  /// (with the input shapes in the message), the fields of its kind, every dimension and size
  /// against overflow (each entry count below 2^31), the given parameter tensors' shapes, and
  /// the parameter blocks against d when set_num_params() was called (else in finish()). The
  /// name follows the builder's LayerNames rule. A problem is recorded, not thrown, and the
  /// output is marked failed.
  LayerOutput add(Layer layer, const LayerParameters& parameters = {});

  /// What a problem an importer found is: an operation pathlift cannot represent, or a model
  /// that is not valid (finish() then throws UnsupportedModel, or NetworkError).
  enum class Problem : unsigned char { unsupported, invalid };

  /// Records a problem the importer found, naming the operation or node.
  void problem(std::string what, Problem kind = Problem::unsupported);

  /// Throws when a problem was recorded, listing every one of them (their text alone when there
  /// is one, else "N problems:" and one line each): UnsupportedModel when one is an unsupported
  /// operation, else NetworkError. finish() ends with it; an importer that must stop before
  /// finish() (its theta cannot be laid out) calls it itself.
  void throw_problems() const;

  /// Marks `layer`'s entries as outputs (in the order of the calls).
  void output(Index layer);

  /// Sets d, the length of theta: parameter blocks are checked as layers are added.
  void set_num_params(Index num_params);

  /// Sets where layer `layer`'s parameter blocks start (an importer that lays out theta once
  /// every layer is known, as the ONNX reader does).
  void set_offsets(Index layer, Index weight_offset, Index bias_offset);

  /// The layer named `name`, or -1. O(1).
  [[nodiscard]] Index find(std::string_view name) const;

  /// The layers added so far, and the output shape of each (empty for a failed one).
  [[nodiscard]] const std::vector<Layer>& layers() const { return m_graph.layers; }
  [[nodiscard]] const std::vector<Index>& shape(Index layer) const;
  [[nodiscard]] const std::vector<std::vector<Index>>& shapes() const { return m_shapes; }

  /// Every problem recorded so far, in order.
  [[nodiscard]] const std::vector<std::string>& problems() const { return m_problems; }

  /// The graph, with d = `num_params` (-1: the value of set_num_params()) and theta =
  /// `weights` when given (d finite numbers). Checks what is left: the parameter blocks against
  /// d, at least one output, the weights. Throws, listing every problem recorded: UnsupportedModel
  /// when problem() was called, else NetworkError.
  /// Complexity: O(layers + d).
  LayerGraph finish(Index num_params = -1, std::optional<std::vector<double>> weights = {});

  /// Records a problem when `weights` are not d finite numbers (d: set_num_params()), as
  /// finish() does with its weights: a graph's theta checked without a copy. O(d).
  void check_weights(std::span<const double> weights);

 private:
  void fail(Index index, std::string what);
  void check_blocks(Index index, const LayerParameters* parameters);
  /// " (entry j of the weight of layer i 'name')" for theta[k], or "".
  [[nodiscard]] std::string block_of(Index k) const;

  LayerGraph m_graph;
  std::vector<std::vector<Index>> m_shapes;
  std::vector<bool> m_failed;
  std::unordered_map<std::string, Index> m_names;
  std::vector<std::string> m_problems;
  LayerNames m_name_rule;
  bool m_unsupported = false;
  bool m_num_params_known = false;
};

}  // namespace pathlift
