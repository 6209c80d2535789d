#include "pathlift/layers.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "pathlift/error.hpp"
#include "pathlift/layer_graph_builder.hpp"
#include "src/core/enum_names.hpp"
#include "src/layers/layers_geometry.hpp"

namespace pathlift {

namespace {

constexpr std::array k_kind_names{
    detail::EnumName<LayerKind>{LayerKind::input, "input"},
    detail::EnumName<LayerKind>{LayerKind::linear, "linear"},
    detail::EnumName<LayerKind>{LayerKind::conv, "conv"},
    detail::EnumName<LayerKind>{LayerKind::max_pool, "max_pool"},
    detail::EnumName<LayerKind>{LayerKind::avg_pool, "avg_pool"},
    detail::EnumName<LayerKind>{LayerKind::adaptive_avg_pool, "adaptive_avg_pool"},
    detail::EnumName<LayerKind>{LayerKind::batch_norm, "batch_norm"},
    detail::EnumName<LayerKind>{LayerKind::activation, "activation"},
    detail::EnumName<LayerKind>{LayerKind::add, "add"},
    detail::EnumName<LayerKind>{LayerKind::sub, "sub"},
    detail::EnumName<LayerKind>{LayerKind::concat, "concat"},
    detail::EnumName<LayerKind>{LayerKind::flatten, "flatten"},
    detail::EnumName<LayerKind>{LayerKind::gather, "gather"},
    detail::EnumName<LayerKind>{LayerKind::conv_transpose, "conv_transpose"},
    detail::EnumName<LayerKind>{LayerKind::scale, "scale"},
    detail::EnumName<LayerKind>{LayerKind::k_max_pool, "k_max_pool"},
    detail::EnumName<LayerKind>{LayerKind::group_sort, "group_sort"},
    detail::EnumName<LayerKind>{LayerKind::interpolate, "interpolate"}};

}  // namespace

std::string to_string(LayerKind kind) {
  return std::string(detail::enum_name(k_kind_names, kind));
}

std::vector<LayerKind> layer_kinds() {
  std::vector<LayerKind> out;
  for (const auto& e : k_kind_names) {
    out.push_back(e.value);
  }
  return out;
}

LayerKind parse_layer_kind(std::string_view name) {
  try {
    return detail::parse_enum(k_kind_names, name, "layer kind");
  } catch (const std::invalid_argument& e) {
    throw FormatError(e.what());
  }
}

std::vector<std::vector<Index>> layer_shapes(const LayerGraph& graph) {
  if (graph.layers.empty() || graph.layers[0].kind != LayerKind::input) {
    throw NetworkError("layer 0 must be the input layer (kind input)");
  }
  if (!graph.layers[0].inputs.empty()) {
    throw NetworkError(
        fmt::format("layer 0 '{}' (input) has inputs", printable(graph.layers[0].name)));
  }
  LayerGraphBuilder b(graph.input_shape, graph.layers[0].name, LayerNames::strict);
  b.set_num_params(graph.num_params);
  for (std::size_t i = 1; i < graph.layers.size(); ++i) {
    b.add(graph.layers[i]);
  }
  for (const Index o : graph.outputs) {
    b.output(o);
  }
  std::vector<std::vector<Index>> shapes = b.shapes();
  if (graph.weights) {
    // Checked in place: theta may be the largest object of the program, and is not copied.
    b.check_weights(*graph.weights);
  }
  (void)b.finish(graph.num_params);
  return shapes;
}

}  // namespace pathlift
