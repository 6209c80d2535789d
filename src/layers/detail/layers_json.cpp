// layer_graph_to_json() and parse_layer_graph() of layers.hpp: the "pathlift-layers" JSON form
// (docs/layers.md#json).

#include <fmt/format.h>
#include <stdexcept>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <variant>

#include "pathlift/error.hpp"
#include "pathlift/layer_graph_builder.hpp"
#include "pathlift/layers.hpp"
#include "src/core/json.hpp"
#include "src/layers/layers_geometry.hpp"

namespace pathlift {

namespace {

using Json = nlohmann::ordered_json;

/// The keys a layer of `kind` may have besides name, kind and inputs: its fields' keys.
std::vector<std::string_view> kind_keys(LayerKind kind) {
  std::vector<std::string_view> keys;
  for (const detail::FieldUse& u : detail::record(kind).fields) {
    keys.push_back(detail::field_record(u.field).key);
  }
  return keys;
}

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
// The deduction guide C++20 makes implicit, for clang 14 (the fuzz build).
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

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

/// Reads field f of a layer into it (its default: Layer's, the value it holds).
void read_field(const Reader& r, const detail::FieldRecord& f, bool required, Layer& layer) {
  const char* key = f.key.data();  // a literal: null-terminated
  std::visit(Overloaded{
                 [&](Index Layer::*m) { layer.*m = r.integer(key, f.min, layer.*m, required); },
                 [&](std::vector<Index> Layer::*m) { layer.*m = r.integers(key, f.min, required); },
                 [&](bool Layer::*m) { layer.*m = r.boolean(key, layer.*m); },
                 [&](double Layer::*m) { layer.*m = r.number(key, layer.*m, required); },
                 [&](std::vector<double> Layer::*m) { layer.*m = r.numbers(key); },
                 [&](Activation Layer::*m) {
                   try {
                     layer.*m = Activation::parse(r.string(key));
                   } catch (const FormatError& e) {
                     throw FormatError(fmt::format("{}: {}", r.at(key), e.what()));
                   }
                 },
             },
             f.member);
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
  // Its fields, in k_fields' order, each at Layer's default when absent.
  const detail::KindRecord& rec = detail::record(layer.kind);
  for (const detail::FieldRecord& f : detail::k_fields) {
    if (rec.has(f.field)) {
      read_field(r, f, rec.requires_field(f.field), layer);
    }
  }
  return layer;
}

Json layer_json(const Layer& layer) {
  Json j = Json::object();
  j["name"] = layer.name;
  j["kind"] = to_string(layer.kind);
  if (layer.kind != LayerKind::input || !layer.inputs.empty()) {
    j["inputs"] = layer.inputs;
  }
  // Its fields, in its unit's order; a sparse field only when it is not at Layer's default.
  static const Layer defaults;
  for (const detail::FieldUse& u : detail::record(layer.kind).fields) {
    const detail::FieldRecord& f = detail::field_record(u.field);
    const std::string key(f.key);
    std::visit(Overloaded{[&](Activation Layer::*m) { j[key] = (layer.*m).name(); },
                          [&](auto m) {
                            if (!f.sparse || layer.*m != defaults.*m) {
                              j[key] = layer.*m;
                            }
                          }},
               f.member);
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
