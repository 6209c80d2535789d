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

/// The JSON names, from the kinds' records.
constexpr auto k_kind_names = [] {
  std::array<detail::EnumName<LayerKind>, detail::k_kinds.size()> names{};
  for (std::size_t i = 0; i < names.size(); ++i) {
    names[i] = {detail::k_kinds[i].kind, detail::k_kinds[i].name};
  }
  return names;
}();

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

std::string describe(LayerKind kind) {
  return std::string(detail::record(kind).doc);
}

std::vector<LayerField> layer_fields() {
  std::vector<LayerField> out;
  for (const detail::FieldRecord& f : detail::k_fields) {
    LayerField field{std::string(f.key), std::string(f.doc), {}};
    for (const detail::KindRecord& r : detail::k_kinds) {
      if (r.has(f.field)) {
        field.kinds.push_back(r.kind);
      }
    }
    out.push_back(std::move(field));
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
