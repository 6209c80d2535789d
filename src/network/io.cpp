#include "pathlift/io.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <utility>

#include "pathlift/error.hpp"
#include "pathlift/limits.hpp"
#include "src/core/json.hpp"
#include "src/network/input_file.hpp"

namespace pathlift {

namespace {

using nlohmann::json;

const char* type_name(const json& j) {
  return j.type_name();
}

/// Resolves a node reference (a name or a 0-based index); `where()` names the key and entry
/// in messages.
template <class Where>
NodeId resolve(const json& ref, const NodeNames& nodes, const Where& where) {
  if (ref.is_string()) {
    return nodes.by_name(ref.get_ref<const std::string&>(), where);
  }
  // Unsigned first: an index above 2^63 must not read as a negative one.
  if (ref.is_number_unsigned()) {
    return nodes.by_index(ref.get<std::uint64_t>(), where);
  }
  if (ref.is_number_integer()) {
    return nodes.by_index(ref.get<std::int64_t>(), where);
  }
  throw FormatError(fmt::format(
      "{}: a node reference must be a name (string) or a 0-based index (integer), not {}", where(),
      type_name(ref)));
}

std::vector<NodeId> node_list(const json& doc, const char* key, const NodeNames& nodes) {
  std::vector<NodeId> out;
  if (!doc.contains(key)) {
    return out;
  }
  const json& list = doc.at(key);
  if (!list.is_array()) {
    throw FormatError(
        fmt::format("\"{}\" must be an array of nodes, not {}", key, type_name(list)));
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    out.push_back(resolve(list[i], nodes, [&] { return fmt::format("\"{}\"[{}]", key, i); }));
  }
  return out;
}

/// The version 2 keys: "num_params" (d) and "params" (per edge: a parameter index, or
/// {"fixed": w}).
void read_parameters(const json& doc, NetworkSpec& spec) {
  const json& d = doc["num_params"];
  if (!d.is_number_unsigned() ||
      d.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<Index>::max() / 2)) {
    throw FormatError(
        fmt::format("\"num_params\" must be a non-negative integer, not {}", detail::excerpt(d)));
  }
  spec.num_params = d.get<Index>();
  const json& params = doc["params"];
  if (!params.is_array()) {
    throw FormatError(fmt::format(
        "\"params\" must be a list (one entry per edge: a parameter index or {{\"fixed\": w}}), "
        "not {}",
        type_name(params)));
  }
  if (params.size() != spec.edges.size()) {
    throw FormatError(fmt::format("\"params\" has {} entries but \"edges\" has {}", params.size(),
                                  spec.edges.size()));
  }
  spec.edge_params.resize(params.size());
  spec.fixed_weights.assign(params.size(), 0.0);
  for (std::size_t e = 0; e < params.size(); ++e) {
    const json& p = params[e];
    if (p.is_number_unsigned()) {
      if (p.get<std::uint64_t>() >= static_cast<std::uint64_t>(spec.num_params)) {
        throw FormatError(
            fmt::format("\"params\"[{}]: parameter {} is out of range (\"num_params\" is {})", e,
                        detail::excerpt(p), spec.num_params));
      }
      spec.edge_params[e] = p.get<Index>();
    } else if (p.is_object() && p.size() == 1 && p.contains("fixed") && p["fixed"].is_number()) {
      spec.edge_params[e] = kFixedEdge;
      spec.fixed_weights[e] = p["fixed"].get<double>();
    } else {
      throw FormatError(fmt::format(
          "\"params\"[{}]: expected a parameter index (an integer >= 0) or {{\"fixed\": "
          "<number>}}, got {}",
          e, detail::excerpt(p)));
    }
  }
}

}  // namespace

Network parse_network(std::string_view json_text) {
  json doc = detail::parse_json_object<json>(json_text, "pathlift-network");
  if (doc.contains("format") && doc["format"] == "pathlift-layers") {
    // Unrolling is a decision with a cost (a ResNet has 10^9 edges): the caller makes it.
    throw FormatError(
        "this is a pathlift-layers file (a layer graph), not a network: read it with load_model "
        "(model.hpp), which keeps it a layer graph, or parse_layer_graph and then unroll");
  }
  static const char* const known[] = {"format",      "version", "nodes",      "edges",
                                      "weights",     "outputs", "inputs",     "bias",
                                      "activations", "name",    "num_params", "params"};
  for (const auto& item : doc.items()) {
    const std::string& key = item.key();  // a name, not a binding: clang 14 captures no binding
    if (std::find_if(std::begin(known), std::end(known), [&](const char* k) { return key == k; }) ==
        std::end(known)) {
      throw FormatError(fmt::format(
          "unknown key \"{}\" (expected format, version, nodes, edges, weights, outputs, inputs, "
          "bias, activations, name, num_params, params)",
          printable(key)));
    }
  }
  if (!doc.contains("format") || doc["format"] != "pathlift-network") {
    throw FormatError(
        "\"format\" must be \"pathlift-network\" (missing or different: is this a pathlift "
        "network file?)");
  }
  if (!doc.contains("version") || !doc["version"].is_number_integer()) {
    throw FormatError("\"version\" must be the integer 1 or 2");
  }
  const auto version = doc["version"].get<std::int64_t>();
  if (version != 1 && version != 2) {
    throw FormatError(
        fmt::format("\"version\" {} is not supported (this pathlift reads versions 1 and 2)",
                    detail::excerpt(doc["version"])));
  }
  for (const char* key : {"num_params", "params"}) {
    if (version == 1 && doc.contains(key)) {
      throw FormatError(fmt::format(
          "\"{}\" belongs to version 2 (parameters distinct from edges): set \"version\": 2", key));
    }
    if (version == 2 && !doc.contains(key)) {
      throw FormatError(fmt::format("missing key \"{}\" (version 2)", key));
    }
  }

  NetworkSpec spec;
  if (!doc.contains("nodes")) {
    throw FormatError("missing key \"nodes\" (a list of names or a node count)");
  }
  const json& nodes = doc["nodes"];
  NodeNames node_index;
  if (nodes.is_number_integer()) {
    if (!nodes.is_number_unsigned()) {
      throw FormatError(fmt::format("\"nodes\": node count {} is out of range (negative)",
                                    detail::excerpt(nodes)));
    }
    node_index = NodeNames::numbered(
        nodes.get<std::uint64_t>(),
        doc.contains("edges") && doc["edges"].is_array() ? doc["edges"].size() : 0, "\"nodes\"");
  } else if (nodes.is_array()) {
    spec.node_names.reserve(nodes.size());
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      if (!nodes[i].is_string()) {
        throw FormatError(fmt::format("\"nodes\"[{}]: a node name must be a string, not {}", i,
                                      type_name(nodes[i])));
      }
      spec.node_names.push_back(nodes[i].get<std::string>());
    }
    // Names are indexed before the network is validated, so an empty or duplicate name is
    // reported here, as Network would.
    node_index = NodeNames(std::move(spec.node_names));
  } else {
    throw FormatError(
        fmt::format("\"nodes\" must be a list of names or a node count, not {}", type_name(nodes)));
  }

  if (!doc.contains("edges")) {
    throw FormatError("missing key \"edges\" (a list of [source, target] pairs)");
  }
  const json& edges = doc["edges"];
  if (!edges.is_array()) {
    throw FormatError(fmt::format("\"edges\" must be a list of [source, target] pairs, not {}",
                                  type_name(edges)));
  }
  spec.edges.reserve(edges.size());
  for (std::size_t k = 0; k < edges.size(); ++k) {
    const json& e = edges[k];
    if (!e.is_array() || e.size() != 2) {
      throw FormatError(fmt::format(
          "\"edges\"[{}]: an edge must be a [source, target] pair, got {}", k, detail::excerpt(e)));
    }
    spec.edges.emplace_back(
        resolve(e[0], node_index, [k] { return fmt::format("\"edges\"[{}][0]", k); }),
        resolve(e[1], node_index, [k] { return fmt::format("\"edges\"[{}][1]", k); }));
  }

  if (version == 2) {
    read_parameters(doc, spec);
  }

  if (doc.contains("weights") && !doc["weights"].is_null()) {
    const json& w = doc["weights"];
    if (!w.is_array()) {
      throw FormatError(fmt::format("\"weights\" must be a list of numbers, not {}", type_name(w)));
    }
    std::vector<double> weights(w.size());
    for (std::size_t k = 0; k < w.size(); ++k) {
      if (!w[k].is_number()) {
        throw FormatError(fmt::format("\"weights\"[{}]: a weight must be a number, got {}", k,
                                      detail::excerpt(w[k])));
      }
      weights[k] = w[k].get<double>();
    }
    spec.weights = std::move(weights);
  }

  spec.outputs = node_list(doc, "outputs", node_index);
  spec.inputs = node_list(doc, "inputs", node_index);
  spec.bias = node_list(doc, "bias", node_index);

  if (doc.contains("activations")) {
    const json& acts = doc["activations"];
    if (!acts.is_object()) {
      throw FormatError(fmt::format(
          "\"activations\" must be an object mapping a node to an activation name, not {}",
          type_name(acts)));
    }
    for (const auto& [key, value] : acts.items()) {
      const std::string where = fmt::format("\"activations\"[\"{}\"]", printable(key));
      const auto where_fn = [&] { return where; };
      // Keys are names; a key that is not a name but an integer is an index.
      NodeId v = -1;
      if (const auto named = node_index.find(key)) {
        v = *named;
      } else {
        std::size_t used = 0;
        long long i = -1;
        try {
          i = std::stoll(key, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        v = used == key.size() && !key.empty() ? node_index.by_index(i, where_fn)
                                               : node_index.by_name(key, where_fn);
      }
      if (!value.is_string()) {
        throw FormatError(fmt::format("{}: an activation must be a string, got {}", where,
                                      detail::excerpt(value)));
      }
      try {
        spec.activations.emplace_back(v, Activation::parse(value.get<std::string>()));
      } catch (const FormatError& e) {
        throw FormatError(fmt::format("{}: {}", where, e.what()));
      }
    }
  }
  spec.node_names = std::move(node_index).take_names();
  return Network(std::move(spec));
}

Network read_network(const std::string& path, const EngineOptions& options) {
  const std::string text =
      read_input_file(path, max_input_bytes(InputKind::json, options.max_memory), "network file",
                      StreamFormat::json);
  try {
    return parse_network(text);
  } catch (const FormatError& e) {
    throw FormatError(fmt::format("{}: {}", path, e.what()));
  } catch (const NetworkError& e) {
    throw NetworkError(fmt::format("{}: {}", path, e.what()));
  }
}

std::string network_to_json(const Network& net, int indent) {
  const NetworkSpec s = net.spec();
  // Node references by name, the readable choice; keys in the documented order.
  using ojson = nlohmann::ordered_json;
  ojson doc = ojson::object();
  auto names = [&](const std::vector<NodeId>& ids) {
    ojson a = ojson::array();
    for (NodeId v : ids) {
      a.push_back(s.node_names[static_cast<std::size_t>(v)]);
    }
    return a;
  };
  const bool v2 = !net.one_parameter_per_edge();
  doc["format"] = "pathlift-network";
  doc["version"] = v2 ? 2 : 1;
  doc["nodes"] = s.node_names;
  ojson edges = ojson::array();
  for (const auto& [a, b] : s.edges) {
    edges.push_back(ojson::array(
        {s.node_names[static_cast<std::size_t>(a)], s.node_names[static_cast<std::size_t>(b)]}));
  }
  doc["edges"] = std::move(edges);
  if (v2) {
    doc["num_params"] = s.num_params;
    ojson params = ojson::array();
    for (std::size_t e = 0; e < s.edge_params.size(); ++e) {
      if (s.edge_params[e] == kFixedEdge) {
        params.push_back(ojson{{"fixed", s.fixed_weights[e]}});
      } else {
        params.push_back(s.edge_params[e]);
      }
    }
    doc["params"] = std::move(params);
  }
  if (s.weights) {
    doc["weights"] = *s.weights;
  }
  if (!s.outputs.empty()) {
    doc["outputs"] = names(s.outputs);
  }
  if (!s.inputs.empty()) {
    doc["inputs"] = names(s.inputs);
  }
  if (!s.bias.empty()) {
    doc["bias"] = names(s.bias);
  }
  if (!s.activations.empty()) {
    ojson acts = ojson::object();
    for (const auto& [v, act] : s.activations) {
      acts[s.node_names[static_cast<std::size_t>(v)]] = act.name();
    }
    doc["activations"] = std::move(acts);
  }
  return detail::dump_readable(doc, indent, {"edges", "params"});
}

void write_network(const Network& net, const std::string& path) {
  write_file_atomically(path, network_to_json(net, 1) + "\n", "network file");
}

}  // namespace pathlift
