#pragma once
/// \file model.hpp
/// Model: a network as pathlift holds it, either a DAG (network.hpp) or a layer graph
/// (layers.hpp), and load_model(), which reads every file format into one. A Model is the
/// one place that decides between the two: the path-free functions of path_free.hpp run on a
/// layer graph layer by layer (never unrolled) and on a DAG by its own DP; the functions that
/// need edges (paths, Phi, B, dPhi, the linearization, the ranks) take the DAG that
/// unrolled(options) gives, which for a layer graph is unrolled once, within
/// options.max_memory (TooLarge with the node and edge counts otherwise), and kept.
///
/// Copies of a Model share the network, the layer graph and the unrolled DAG. Thread-safe.
///
/// Example:
/// \code
///   const pathlift::Model m = pathlift::load_model("resnet18.onnx", {.input_shape = {3, 224,
///   224}}); const std::vector<double> theta(m.weights().begin(), m.weights().end()); const
///   pathlift::PathNorm l2 = pathlift::path_norm(m, theta, 2.0);   // path_free.hpp const
///   pathlift::Network& dag = *m.unrolled({.max_memory = 8UL << 30});  // or TooLarge
/// \endcode

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pathlift/layers.hpp"
#include "pathlift/network.hpp"
#include "pathlift/options.hpp"
#include "pathlift/types.hpp"

namespace pathlift {

class Model;

/// check_theta (network.hpp) for a model: d finite numbers. A DAG's message names the edge of a
/// bad entry, a layer graph's the parameter index. Throws std::invalid_argument.
/// Complexity: O(d).
void check_theta(const Model& model, std::span<const double> theta);
void check_theta(const Model& model, std::span<const float> theta);

/// The formats load_model() reads.
enum class ModelFormat : unsigned char {
  network,  ///< "pathlift-network" JSON, version 1 or 2 (a DAG)
  layers,   ///< "pathlift-layers" JSON (a layer graph)
  onnx,     ///< an ONNX ModelProto (a layer graph)
};

/// "network", "layers", "onnx".
std::string to_string(ModelFormat format);

/// How load_model() reads.
struct ModelOptions {
  /// ONNX only: one sample's input shape, without the batch dimension; overrides the model's
  /// own, which must be given when it is symbolic. Empty: the model's.
  std::vector<Index> input_shape;
  /// max_memory bounds the bytes read (io.hpp's max_input_bytes): a file whose parsed form
  /// would not fit is refused with its size before it is read.
  EngineOptions engine = {};
};

class Model {
 public:
  /// A DAG.
  explicit Model(Network net);
  explicit Model(std::shared_ptr<const Network> net);
  /// A layer graph, validated (layer_shapes: NetworkError naming the layer).
  explicit Model(LayerGraph graph);

  /// True for a layer graph (even once unrolled).
  [[nodiscard]] bool is_layer_graph() const { return m_graph != nullptr; }
  /// The layer graph, or null for a DAG.
  [[nodiscard]] const LayerGraph* layer_graph() const { return m_graph.get(); }
  /// The DAG of a DAG model, or null for a layer graph (use unrolled()).
  [[nodiscard]] const Network* dag() const;

  /// d, the length of theta.
  [[nodiscard]] Index num_params() const;
  /// Whether the model holds weights (a file's or an ONNX model's), and them.
  [[nodiscard]] bool has_weights() const;
  /// The stored weights; std::logic_error when there are none.
  [[nodiscard]] std::span<const double> weights() const;
  /// What the import noticed that is not an error (LayerGraph::warnings); empty for a DAG.
  [[nodiscard]] const std::vector<std::string>& warnings() const;

  /// Node and edge counts of the DAG (of the unrolled DAG for a layer graph, computed without
  /// unrolling, once: unrolled_size(), TooLarge when its plan would exceed options.max_memory).
  [[nodiscard]] UnrolledSize size(const EngineOptions& options = {}) const;
  /// True for a DAG, and for a layer graph once unrolled() has made its DAG.
  [[nodiscard]] bool is_unrolled() const;
  /// The DAG: the model's own, or the layer graph unrolled (unroll(), within
  /// options.max_memory; TooLarge with the node and edge counts when it would not fit), made on
  /// the first call and kept for the model's lifetime.
  /// Complexity: O(nodes + edges) on the first call of a layer graph, O(1) after.
  [[nodiscard]] std::shared_ptr<const Network> unrolled(const EngineOptions& options = {}) const;

 private:
  struct Cache;
  std::shared_ptr<const Network> m_dag;
  std::shared_ptr<const LayerGraph> m_graph;
  std::shared_ptr<Cache> m_cache;
};

/// The format of a model file's bytes: JSON (by its "format" key, read without parsing the
/// document) or ONNX (anything else that is not JSON). Throws FormatError for JSON whose format
/// is neither pathlift-network nor pathlift-layers.
ModelFormat model_format(std::string_view bytes);

/// A model from its bytes, in any format (model_format()). Throws what the format's reader
/// throws: FormatError, NetworkError, UnsupportedModel (every unsupported operation listed).
Model parse_model(std::string_view bytes, const ModelOptions& options = {});

/// A model from a file, in any format, read under options.engine.max_memory. Errors name the
/// file.
Model load_model(const std::string& path, const ModelOptions& options = {});

}  // namespace pathlift
