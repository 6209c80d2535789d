// summarise(): a model's size, symmetries and path counts (summary.hpp).

#include "pathlift/summary.hpp"

#include "pathlift/error.hpp"
#include "pathlift/path_free.hpp"
#include "pathlift/symmetry.hpp"
#include "src/core/checked.hpp"
#include "src/core/json.hpp"
#include "src/layers/layer_kinds.hpp"

namespace pathlift {

namespace {

/// The nodes of a layer graph's unrolled DAG by role, without unrolling.
void count_nodes(const Model& model, const LayerGraph& graph, const EngineOptions& options,
                 ModelSummary& s) {
  s.layers = static_cast<Index>(graph.layers.size());
  const UnrolledSize size = model.size(options);
  s.nodes = size.nodes;
  s.edges = size.edges;
  for (const Layer& layer : graph.layers) {
    s.bias += detail::has_parameters(layer) && layer.bias_offset >= 0 ? 1 : 0;
  }
  s.inputs = detail::entries_of(graph.input_shape) + s.bias;
  const std::vector<std::vector<Index>> shapes = layer_shapes(graph);
  for (const Index o : graph.outputs) {
    s.outputs += detail::entries_of(shapes[static_cast<std::size_t>(o)]);
  }
  s.hidden = s.nodes - s.inputs - s.outputs;
  if (s.edges == s.d) {
    try {
      s.per_edge = model.unrolled(options)->one_parameter_per_edge();
    } catch (const TooLarge&) {
      s.per_edge = false;  // unknown: reported as with shared parameters
    }
  }
  s.warnings = graph.warnings;
}

}  // namespace

ModelSummary summarise(const Model& model, const EngineOptions& options) {
  ModelSummary s;
  s.d = model.num_params();
  if (const Network* net = model.dag()) {
    s.nodes = net->num_nodes();
    s.edges = net->num_edges();
    s.inputs = static_cast<Index>(net->inputs().size());
    s.bias = static_cast<Index>(net->bias_nodes().size());
    s.hidden = net->num_hidden();
    s.outputs = static_cast<Index>(net->outputs().size());
    s.per_edge = net->one_parameter_per_edge();
  } else {
    count_nodes(model, *model.layer_graph(), options, s);
  }
  try {
    s.h_sym = rescaling_symmetry_dimension(model, options).h_sym;
  } catch (const TooLarge& e) {
    s.h_sym_refused = e.what();
  }
  s.counts = count_paths(model, options);
  return s;
}

std::string to_json(const ModelSummary& s, int indent) {
  using detail::Json;
  Json j;
  if (s.layers) {
    j["layers"] = *s.layers;
  }
  PATHLIFT_JSON_MEMBERS(j, s, nodes, inputs, bias, hidden, outputs, d, edges);
  j["h"] = s.hidden;
  // d - h is Theorem 1's rank with one parameter per edge; otherwise d - h_sym bounds it.
  j["d_minus_h"] = s.per_edge ? Json(s.d - s.hidden) : Json(nullptr);
  j["h_sym"] = detail::json_value(s.h_sym);
  j["d_minus_h_sym"] = s.h_sym ? Json(s.d - *s.h_sym) : Json(nullptr);
  j.update(Json::parse(to_json(s.counts, -1)));
  j["warnings"] = s.warnings;
  return j.dump(indent);
}

}  // namespace pathlift
