#pragma once
/// \file summary.hpp
/// A model's summary: its size as a DAG (nodes by role, edges, parameters), the dimension of its
/// rescaling symmetries and its path counts, all without unrolling a layer graph.

#include <optional>
#include <string>
#include <vector>

#include "pathlift/counting.hpp"
#include "pathlift/model.hpp"
#include "pathlift/options.hpp"
#include "pathlift/types.hpp"

namespace pathlift {

/// The summary of a model, counted on its DAG (for a layer graph, its unrolled DAG's, computed
/// without unrolling: docs/layers.md, one input node per input entry, one bias node per layer
/// with a bias, one output node per output entry, the rest hidden).
struct ModelSummary {
  std::optional<Index> layers;  ///< a layer graph's layer count; empty for a DAG
  Index nodes = 0;
  Index edges = 0;
  Index inputs = 0;  ///< input nodes, bias nodes included
  Index bias = 0;    ///< bias nodes
  Index hidden = 0;  ///< h
  Index outputs = 0;
  Index d = 0;  ///< parameters
  /// Whether edge k carries parameter k (Theorem 1's setting: rank = d - h). A layer graph can
  /// only when it has as many edges as parameters (an MLP); it is then unrolled to tell, within
  /// the options' memory, and reported false when that is refused.
  bool per_edge = false;
  /// h_sym, the dimension of the rescaling symmetries (rescaling_symmetry_dimension), or empty
  /// with `h_sym_refused` saying why (TooLarge).
  std::optional<Index> h_sym;
  std::string h_sym_refused;
  PathCounts counts;  ///< count_paths
  /// What the importer noticed about the model (LayerGraph::warnings); empty for a DAG.
  std::vector<std::string> warnings;
};

/// The summary of `model`. A refusal of the symmetries for memory is recorded in the summary
/// (h_sym_refused) and one of the path-length histogram in counts.length_histogram_refused; the
/// rest is always computed. Throws TooLarge when the unrolled size itself exceeds
/// options.max_memory's plan (Model::size).
/// Complexity: that of count_paths plus rescaling_symmetry_dimension.
ModelSummary summarise(const Model& model, const EngineOptions& options = {});

/// The summary as JSON: "layers" (layer graphs only), "nodes", "inputs", "bias", "hidden",
/// "outputs", "d", "edges", "h", "d_minus_h" (null without one parameter per edge), "h_sym",
/// "d_minus_h_sym" (null when refused), to_json(PathCounts)'s keys, and "warnings".
std::string to_json(const ModelSummary& summary, int indent = 2);

}  // namespace pathlift
