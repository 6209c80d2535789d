// layer_graph_to_json() and parse_layer_graph() of layers.hpp: the "pathlift-layers" JSON form
// (docs/layers.md#json).

#include <fmt/format.h>
#include <stdexcept>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "pathlift/error.hpp"
#include "pathlift/layer_graph_builder.hpp"
#include "pathlift/layers.hpp"
#include "src/core/json.hpp"
#include "src/layers/layers_geometry.hpp"

namespace pathlift {

namespace {

using Json = nlohmann::ordered_json;

/// The keys a layer of `kind` may have besides name, kind and inputs: its record's keys.
std::vector<std::string_view> kind_keys(LayerKind kind) {
  std::vector<std::string_view> keys;
  std::string_view rest = detail::record(kind).keys;
  while (!rest.empty()) {
    const std::size_t space = rest.find(' ');
    keys.push_back(rest.substr(0, space));
    rest = space == std::string_view::npos ? std::string_view{} : rest.substr(space + 1);
  }
  return keys;
}

std::string key_list(const std::vector<std::string_view>& keys) {
  std::string out;
  for (const auto k : keys) {
    out += (out.empty() ? "" : ", ") + std::string(k);
  }
  return out;
}

/// Reads the fields of one JSON object, naming `where` ("\"layers\"[3]") in every message.
class Reader {
 public:
  Reader(const Json& obj, std::string where) : m_obj(obj), m_where(std::move(where)) {}

  [[nodiscard]] bool has(const char* key) const {
    return m_obj.contains(key) && !m_obj.at(key).is_null();
  }
  [[nodiscard]] std::string at(const char* key) const {
    return fmt::format("{}[\"{}\"]", m_where, key);
  }
  [[nodiscard]] const Json& required(const char* key) const {
    if (!has(key)) {
      throw FormatError(fmt::format("{}: missing key \"{}\"", m_where, key));
    }
    return m_obj.at(key);
  }

  /// An integer in [lo, 2^62] (no size pathlift handles comes close; the bound keeps all
  /// arithmetic on it exact).
  Index integer(const char* key, Index lo, Index fallback, bool needed = false) const {
    if (!has(key)) {
      if (needed) {
        static_cast<void>(required(key));
      }
      return fallback;
    }
    return integer_value(m_obj.at(key), at(key), lo);
  }
  static Index integer_value(const Json& v, const std::string& where, Index lo) {
    constexpr Index hi = Index{1} << 62;
    if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<std::uint64_t>() > hi) ||
        v.get<Index>() < lo || v.get<Index>() > hi) {
      throw FormatError(
          fmt::format("{}: expected an integer >= {}, got {}", where, lo, detail::excerpt(v)));
    }
    return v.get<Index>();
  }
  std::vector<Index> integers(const char* key, Index lo, bool needed = false) const {
    if (!has(key)) {
      if (needed) {
        static_cast<void>(required(key));
      }
      return {};
    }
    const Json& v = m_obj.at(key);
    if (!v.is_array()) {
      throw FormatError(
          fmt::format("{}: expected a list of integers, got {}", at(key), detail::excerpt(v)));
    }
    std::vector<Index> out;
    for (std::size_t i = 0; i < v.size(); ++i) {
      out.push_back(integer_value(v[i], fmt::format("{}[{}]", at(key), i), lo));
    }
    return out;
  }
  bool boolean(const char* key, bool fallback) const {
    if (!has(key)) {
      return fallback;
    }
    if (!m_obj.at(key).is_boolean()) {
      throw FormatError(fmt::format("{}: expected true or false, got {}", at(key),
                                    detail::excerpt(m_obj.at(key))));
    }
    return m_obj.at(key).get<bool>();
  }
  double number(const char* key, double fallback, bool needed = false) const {
    if (!has(key)) {
      if (needed) {
        (void)required(key);
      }
      return fallback;
    }
    const Json& v = m_obj.at(key);
    if (!v.is_number() || !std::isfinite(v.get<double>())) {
      throw FormatError(
          fmt::format("{}: expected a finite number, got {}", at(key), detail::excerpt(v)));
    }
    return v.get<double>();
  }

  /// A list of finite numbers (empty when absent).
  std::vector<double> numbers(const char* key) const {
    if (!has(key)) {
      return {};
    }
    const Json& v = m_obj.at(key);
    if (!v.is_array()) {
      throw FormatError(
          fmt::format("{}: expected a list of numbers, got {}", at(key), detail::excerpt(v)));
    }
    std::vector<double> out;
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_number() || !std::isfinite(v[i].get<double>())) {
        throw FormatError(fmt::format("{}[{}]: expected a finite number, got {}", at(key), i,
                                      detail::excerpt(v[i])));
      }
      out.push_back(v[i].get<double>());
    }
    return out;
  }

  std::string string(const char* key) const {
    const Json& v = required(key);
    if (!v.is_string()) {
      throw FormatError(fmt::format("{}: expected a string, got {}", at(key), detail::excerpt(v)));
    }
    return v.get<std::string>();
  }
  /// Rejects keys outside `allowed`, listing them.
  void only(const std::vector<std::string_view>& allowed, const std::string& what) const {
    for (const auto& [key, value] : m_obj.items()) {
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        throw FormatError(fmt::format("{}: unknown key \"{}\" ({} has {})", m_where, key, what,
                                      key_list(allowed)));
      }
    }
  }

 private:
  const Json& m_obj;
  std::string m_where;
};

/// A layer reference: an index or the name of a layer the builder has (an earlier one).
Index layer_ref(const Json& v, const std::string& where, const LayerGraphBuilder& names) {
  if (v.is_string()) {
    const Index found = names.find(v.get<std::string>());
    if (found < 0) {
      throw FormatError(fmt::format("{}: no earlier layer is named {}", where, detail::excerpt(v)));
    }
    return found;
  }
  return Reader::integer_value(v, where, 0);
}

Layer read_layer(const Json& j, std::size_t index, const LayerGraphBuilder& names) {
  const std::string where = fmt::format("\"layers\"[{}]", index);
  if (!j.is_object()) {
    throw FormatError(fmt::format("{}: a layer must be an object, not {}", where, j.type_name()));
  }
  const Reader r(j, where);
  Layer layer;
  layer.name = r.string("name");
  try {
    layer.kind = parse_layer_kind(r.string("kind"));
  } catch (const FormatError& e) {
    throw FormatError(fmt::format("{}: {}", r.at("kind"), e.what()));
  }
  std::vector<std::string_view> allowed{"name", "kind", "inputs"};
  const auto extra = kind_keys(layer.kind);
  allowed.insert(allowed.end(), extra.begin(), extra.end());
  r.only(allowed, fmt::format("a {} layer", to_string(layer.kind)));
  if (r.has("inputs")) {
    const Json& in = j.at("inputs");
    if (!in.is_array()) {
      throw FormatError(fmt::format("{}: expected a list of layers (indices or names), got {}",
                                    r.at("inputs"), detail::excerpt(in)));
    }
    for (std::size_t k = 0; k < in.size(); ++k) {
      layer.inputs.push_back(layer_ref(in[k], fmt::format("{}[{}]", r.at("inputs"), k), names));
    }
  }
  const bool conv = detail::is_convolution(layer.kind);
  layer.out_features = r.integer("out_features", 1, 0, layer.kind == LayerKind::linear);
  layer.out_channels = r.integer("out_channels", 1, 0, conv);
  layer.groups = r.integer("groups", 1, 1);
  layer.kernel = r.integers(
      "kernel", 1, conv || detail::is_max_window(layer.kind) || layer.kind == LayerKind::avg_pool);
  layer.stride = r.integers("stride", 1);
  layer.padding = r.integers("padding", 0);
  layer.dilation = r.integers("dilation", 1);
  layer.output_padding = r.integers("output_padding", 0);
  layer.ceil_mode = r.boolean("ceil_mode", false);
  layer.count_include_pad = r.boolean("count_include_pad", true);
  layer.output_size = r.integers(
      "output_size", 1,
      layer.kind == LayerKind::adaptive_avg_pool || layer.kind == LayerKind::interpolate);
  layer.k = r.integer("k", 1, 1);
  layer.group_size = r.integer("group_size", 1, 0, layer.kind == LayerKind::group_sort);
  layer.descending = r.boolean("descending", false);
  layer.align_corners = r.boolean("align_corners", false);
  layer.scales = r.numbers("scales");
  layer.axis = r.integer("axis", 0, 0);
  layer.indices = r.integers("indices", 0, layer.kind == LayerKind::gather);
  layer.factor = r.number("factor", 1.0, layer.kind == LayerKind::scale);
  if (layer.kind == LayerKind::activation) {
    try {
      layer.activation = Activation::parse(r.string("activation"));
    } catch (const FormatError& e) {
      throw FormatError(fmt::format("{}: {}", r.at("activation"), e.what()));
    }
  }
  const bool params =
      conv || layer.kind == LayerKind::linear || layer.kind == LayerKind::batch_norm;
  layer.weight_offset = r.integer("weight_offset", 0, -1, params);
  layer.bias_offset = r.integer("bias_offset", -1, -1);
  return layer;
}

Json layer_json(const Layer& layer) {
  Json j = Json::object();
  j["name"] = layer.name;
  j["kind"] = to_string(layer.kind);
  if (layer.kind != LayerKind::input || !layer.inputs.empty()) {
    j["inputs"] = layer.inputs;
  }
  const auto list = [&](const char* key, const std::vector<Index>& v) {
    if (!v.empty()) {
      j[key] = v;
    }
  };
  switch (layer.kind) {
    case LayerKind::linear:
      j["out_features"] = layer.out_features;
      break;
    case LayerKind::conv:
    case LayerKind::conv_transpose:
      j["out_channels"] = layer.out_channels;
      j["kernel"] = layer.kernel;
      list("stride", layer.stride);
      list("padding", layer.padding);
      list("dilation", layer.dilation);
      if (layer.kind == LayerKind::conv_transpose) {
        list("output_padding", layer.output_padding);
      }
      j["groups"] = layer.groups;
      break;
    case LayerKind::max_pool:
    case LayerKind::k_max_pool:
    case LayerKind::avg_pool:
      j["kernel"] = layer.kernel;
      list("stride", layer.stride);
      list("padding", layer.padding);
      list("dilation", layer.dilation);
      if (layer.ceil_mode) {
        j["ceil_mode"] = true;
      }
      if (layer.kind == LayerKind::avg_pool) {
        j["count_include_pad"] = layer.count_include_pad;
      }
      if (layer.kind == LayerKind::k_max_pool) {
        j["k"] = layer.k;
      }
      break;
    case LayerKind::group_sort:
      j["group_size"] = layer.group_size;
      j["descending"] = layer.descending;
      break;
    case LayerKind::interpolate:
      j["output_size"] = layer.output_size;
      j["align_corners"] = layer.align_corners;
      if (!layer.scales.empty()) {
        j["scales"] = layer.scales;
      }
      break;
    case LayerKind::adaptive_avg_pool:
      j["output_size"] = layer.output_size;
      break;
    case LayerKind::activation:
      j["activation"] = layer.activation.name();
      break;
    case LayerKind::concat:
      j["axis"] = layer.axis;
      break;
    case LayerKind::gather:
      j["axis"] = layer.axis;
      j["indices"] = layer.indices;
      break;
    case LayerKind::scale:
      j["factor"] = layer.factor;
      break;
    case LayerKind::input:
    case LayerKind::batch_norm:
    case LayerKind::add:
    case LayerKind::sub:
    case LayerKind::flatten:
      break;
  }
  if (detail::has_parameters(layer.kind)) {
    j["weight_offset"] = layer.weight_offset;
    if (layer.bias_offset >= 0) {
      j["bias_offset"] = layer.bias_offset;
    }
  }
  return j;
}

}  // namespace

std::string layer_graph_to_json(const LayerGraph& graph, int indent) {
  Json doc = Json::object();
  doc["format"] = "pathlift-layers";
  doc["version"] = 1;
  doc["input_shape"] = graph.input_shape;
  Json layers = Json::array();
  for (const Layer& layer : graph.layers) {
    layers.push_back(layer_json(layer));
  }
  doc["layers"] = std::move(layers);
  doc["outputs"] = graph.outputs;
  doc["num_params"] = graph.num_params;
  if (graph.weights) {
    doc["weights"] = *graph.weights;
  }
  return detail::dump_readable(doc, indent, {"layers"});
}

LayerGraph parse_layer_graph(std::string_view json_text) {
  Json doc = detail::parse_json_object<Json>(json_text, "pathlift-layers");
  const Reader r(doc, "the layer graph");
  r.only({"format", "version", "input_shape", "layers", "outputs", "num_params", "weights"},
         "a pathlift-layers file");
  if (!doc.contains("format") || doc["format"] != "pathlift-layers") {
    throw FormatError("\"format\" must be \"pathlift-layers\" (missing or different)");
  }
  if (!doc.contains("version") || doc["version"] != 1) {
    throw FormatError(fmt::format(
        "\"version\" must be the integer 1 (this pathlift reads version 1 of pathlift-layers), "
        "got {}",
        doc.contains("version") ? detail::excerpt(doc["version"]) : "nothing"));
  }
  const std::vector<Index> input_shape = r.integers("input_shape", 1, true);
  const Json& layers = r.required("layers");
  if (!layers.is_array()) {
    throw FormatError(
        fmt::format("\"layers\" must be a list of layers, not {}", layers.type_name()));
  }
  if (layers.empty()) {
    throw NetworkError("layer 0 must be the input layer (kind input)");
  }
  // Layer 0 names the input; the builder checks the input shape with it.
  const Layer input = read_layer(layers[0], 0, LayerGraphBuilder({1}));
  if (input.kind != LayerKind::input) {
    throw NetworkError("layer 0 must be the input layer (kind input)");
  }
  if (!input.inputs.empty()) {
    throw NetworkError(fmt::format("layer 0 '{}' (input) has inputs", printable(input.name)));
  }
  LayerGraphBuilder builder(input_shape, input.name, LayerNames::strict);
  const Index num_params = r.integer("num_params", 0, 0, true);
  builder.set_num_params(num_params);
  for (std::size_t i = 1; i < layers.size(); ++i) {
    builder.add(read_layer(layers[i], i, builder));
  }
  const Json& outputs = r.required("outputs");
  if (!outputs.is_array()) {
    throw FormatError(
        fmt::format("\"outputs\" must be a list of layers, not {}", outputs.type_name()));
  }
  for (std::size_t j = 0; j < outputs.size(); ++j) {
    builder.output(layer_ref(outputs[j], fmt::format("\"outputs\"[{}]", j), builder));
  }
  std::optional<std::vector<double>> weights;
  if (r.has("weights")) {
    const Json& w = doc["weights"];
    if (!w.is_array()) {
      throw FormatError(
          fmt::format("\"weights\" must be a list of numbers, not {}", w.type_name()));
    }
    weights.emplace(w.size());
    for (std::size_t k = 0; k < w.size(); ++k) {
      if (!w[k].is_number()) {
        throw FormatError(fmt::format("\"weights\"[{}]: a weight must be a number, got {}", k,
                                      detail::excerpt(w[k])));
      }
      (*weights)[k] = w[k].get<double>();
    }
  }
  return builder.finish(num_params, std::move(weights));
}

}  // namespace pathlift
