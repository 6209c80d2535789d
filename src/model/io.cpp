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
#include "src/core/detail/json.hpp"
#include "src/model/detail/input_file.hpp"

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

std::size_t max_input_bytes(InputKind kind, std::size_t max_memory) {
  return effective_max_memory(max_memory) / static_cast<std::size_t>(kind);
}

namespace detail {

InputFile::InputFile(InputFile&& other) noexcept
    : m_fd(std::exchange(other.m_fd, -1)),
      m_regular(other.m_regular),
      m_size(other.m_size),
      m_path(std::move(other.m_path)),
      m_what(std::move(other.m_what)),
      m_max_bytes(other.m_max_bytes) {}

InputFile& InputFile::operator=(InputFile&& other) noexcept {
  if (this != &other) {
    if (m_fd >= 0) {
      ::close(m_fd);
    }
    m_fd = std::exchange(other.m_fd, -1);
    m_regular = other.m_regular;
    m_size = other.m_size;
    m_path = std::move(other.m_path);
    m_what = std::move(other.m_what);
    m_max_bytes = other.m_max_bytes;
  }
  return *this;
}

InputFile::~InputFile() {
  if (m_fd >= 0) {
    ::close(m_fd);
  }
}

namespace {

TooLarge too_large(std::string_view what, const std::string& path, std::size_t max_bytes) {
  return TooLarge(fmt::format(
      "{} '{}' is too large to read: more than {} ({} bytes), the most a "
      "file of its kind may hold under the memory limit",
      what, printable(path, 200), format_bytes(static_cast<double>(max_bytes)), max_bytes));
}

FormatError cannot_read(std::string_view what, const std::string& path) {
  return FormatError(
      fmt::format("cannot read {} '{}': {}", what, printable(path, 200), std::strerror(errno)));
}

}  // namespace

InputFile open_input_file(const std::string& path, std::size_t max_bytes, std::string_view what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw FormatError(
        fmt::format("cannot open {} '{}': {}", what, printable(path, 200), std::strerror(errno)));
  }
  InputFile file(fd, false, 0, path, std::string(what), max_bytes);  // closes fd on every way out
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    throw cannot_read(what, path);
  }
  if (S_ISDIR(st.st_mode)) {
    throw FormatError(
        fmt::format("cannot read {}: '{}' is a directory", what, printable(path, 200)));
  }
  if (S_ISREG(st.st_mode)) {
    if (static_cast<std::uint64_t>(st.st_size) > max_bytes) {
      throw too_large(what, path, max_bytes);
    }
    file.m_regular = true;
    file.m_size = static_cast<std::uint64_t>(st.st_size);
  }
  return file;
}

namespace {

/// Watches the bytes of a stream as they arrive (StreamFormat): problem() says why the bytes so
/// far cannot start a file of the format, or "" (not yet known, or plausible). Incremental:
/// each call reads only what arrived since the last one.
class StreamCheck {
 public:
  StreamCheck(StreamFormat format, std::size_t max_bytes)
      : m_format(format), m_max_bytes(max_bytes) {}

  std::string problem(std::string_view bytes) {
    if (m_format == StreamFormat::json_or_onnx) {
      const auto first = bytes.find_first_not_of(" \t\n\r\f\v");
      if (first == std::string_view::npos) {
        return {};
      }
      m_format = bytes[first] == '{' ? StreamFormat::json : StreamFormat::onnx;
    }
    switch (m_format) {
      case StreamFormat::any:
      case StreamFormat::json_or_onnx:
        return {};
      case StreamFormat::json: {
        const auto first = bytes.find_first_not_of(" \t\n\r\f\v");
        if (first == std::string_view::npos || bytes[first] == '{') {
          if (first != std::string_view::npos) {
            m_format = StreamFormat::any;  // decided
          }
          return {};
        }
        return fmt::format("byte {} is {}, where a JSON object starts with '{{'", first,
                           byte_name(bytes[first]));
      }
      case StreamFormat::npy: {
        constexpr std::string_view magic = "\x93NUMPY";
        const std::size_t n = std::min(bytes.size(), magic.size());
        for (std::size_t i = 0; i < n; ++i) {
          if (bytes[i] != magic[i]) {
            return fmt::format("byte {} is {}: not the .npy magic \\x93NUMPY", i,
                               byte_name(bytes[i]));
          }
        }
        if (n == magic.size()) {
          m_format = StreamFormat::any;
        }
        return {};
      }
      case StreamFormat::text: {
        const auto nul = bytes.find('\0', m_next);
        m_next = bytes.size();
        return nul == std::string_view::npos
                   ? std::string()
                   : fmt::format("byte {} is a NUL byte: not a text file", nul);
      }
      case StreamFormat::onnx:
        return protobuf_problem(bytes);
    }
    return {};
  }

 private:
  static std::string byte_name(char c) {
    const auto u = static_cast<unsigned char>(c);
    return u >= 0x20 && u < 0x7f ? fmt::format("'{}'", c) : fmt::format("0x{:02x}", u);
  }

  /// A varint at bytes[at...]: its value and end, or nullopt while incomplete; `bad` when it
  /// runs over 10 bytes.
  static std::optional<std::pair<std::uint64_t, std::size_t>> varint(std::string_view bytes,
                                                                     std::size_t at, bool& bad) {
    std::uint64_t value = 0;
    for (std::size_t i = 0; i < 10; ++i) {
      if (at + i >= bytes.size()) {
        return std::nullopt;
      }
      const auto b = static_cast<unsigned char>(bytes[at + i]);
      value |= static_cast<std::uint64_t>(b & 0x7f) << (7 * i);
      if ((b & 0x80) == 0) {
        return std::pair{value, at + i + 1};
      }
    }
    bad = true;
    return std::nullopt;
  }

  /// The top-level fields of a protobuf message (ONNX's ModelProto), as far as they arrived.
  std::string protobuf_problem(std::string_view bytes) {
    while (m_next < bytes.size()) {
      bool bad = false;
      const auto tag = varint(bytes, m_next, bad);
      if (bad) {
        return fmt::format("the field tag at byte {} runs over 10 bytes: not protobuf", m_next);
      }
      if (!tag) {
        return {};
      }
      const std::uint64_t field = tag->first >> 3;
      const auto wire = static_cast<unsigned>(tag->first & 7);
      // ModelProto's fields are numbered up to 25 (onnx.proto): 1000 leaves room for new ones.
      if (field == 0 || field > 1000 || (wire != 0 && wire != 1 && wire != 2 && wire != 5)) {
        return fmt::format(
            "byte {} ({}) is no protobuf field (field {}, wire type {}): not an ONNX model", m_next,
            byte_name(bytes[m_next]), field, wire);
      }
      std::size_t end = tag->second;
      if (wire == 0) {
        const auto value = varint(bytes, end, bad);
        if (bad) {
          return fmt::format("the varint at byte {} runs over 10 bytes: not protobuf", end);
        }
        if (!value) {
          return {};
        }
        end = value->second;
      } else if (wire == 1 || wire == 5) {
        end += wire == 1 ? 8 : 4;
      } else {
        const auto length = varint(bytes, end, bad);
        if (bad) {
          return fmt::format("the length at byte {} runs over 10 bytes: not protobuf", end);
        }
        if (!length) {
          return {};
        }
        if (length->first > m_max_bytes - std::min(m_max_bytes, length->second)) {
          return fmt::format(
              "the field at byte {} declares {} bytes, more than the {} bytes a file of its kind "
              "may hold under the memory limit",
              m_next, length->first, m_max_bytes);
        }
        end = length->second + static_cast<std::size_t>(length->first);
      }
      m_next = end;
    }
    return {};
  }

  StreamFormat m_format;
  std::size_t m_max_bytes;
  std::size_t m_next = 0;  // onnx: where the next top-level field starts; text: bytes seen
};

}  // namespace

std::string InputFile::read_all(StreamFormat format) const {
  // Chunks, growing: a pipe or a device has no size, and a regular file may grow meanwhile.
  constexpr std::size_t chunk = std::size_t{1} << 16;
  std::string bytes;
  if (m_regular) {
    // With room for the last read, which finds the end: no reallocation, no second copy.
    bytes.reserve(static_cast<std::size_t>(m_size) + chunk + 1);
  }
  StreamCheck check(m_regular ? StreamFormat::any : format, m_max_bytes);
  std::size_t size = 0;
  for (;;) {
    if (size > m_max_bytes) {
      throw too_large(m_what, m_path, m_max_bytes);
    }
    const std::size_t room = m_max_bytes - size;
    const std::size_t want = room < chunk ? room + 1 : chunk;  // one past the bound: too large
    if (bytes.capacity() < size + want) {
      // Doubling, but never past the bound + 1 byte.
      bytes.reserve(std::min(std::max(2 * bytes.capacity(), size + want), m_max_bytes + 1));
    }
    bytes.resize(size + want);
    const ssize_t got = ::read(m_fd, bytes.data() + size, want);
    if (got < 0) {
      if (errno == EINTR) {
        continue;
      }
      throw cannot_read(m_what, m_path);
    }
    if (got == 0) {
      break;
    }
    size += static_cast<std::size_t>(got);
    if (const std::string problem = check.problem(std::string_view(bytes.data(), size));
        !problem.empty()) {
      throw FormatError(fmt::format("{} '{}' (a stream, refused as it is read): {}", m_what,
                                    printable(m_path, 200), problem));
    }
  }
  bytes.resize(size);
  return bytes;
}

void InputFile::read_at(std::uint64_t offset, std::size_t n, char* out) const {
  while (n > 0) {
    const ssize_t got = ::pread(m_fd, out, n, static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR) {
        continue;
      }
      throw cannot_read(m_what, m_path);
    }
    if (got == 0) {
      throw FormatError(
          fmt::format("cannot read {} '{}': it ends at byte {}, before the {} "
                      "bytes it held when opened (it changed meanwhile)",
                      m_what, printable(m_path, 200), offset, m_size));
    }
    offset += static_cast<std::uint64_t>(got);
    out += got;
    n -= static_cast<std::size_t>(got);
  }
}

}  // namespace detail

std::string read_input_file(const std::string& path, std::size_t max_bytes, std::string_view what,
                            StreamFormat format) {
  return detail::open_input_file(path, max_bytes, what).read_all(format);
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

namespace {

/// The permissions of a new file, 0666 & ~umask. umask() can only be read by setting it, so it
/// is read from /proc/self/status (Linux 4.7+, no race with other threads) where it can be.
mode_t new_file_mode() {
  if (FILE* f = std::fopen("/proc/self/status", "re")) {
    char line[256];
    unsigned mask = 0;
    bool found = false;
    while (!found && std::fgets(line, sizeof line, f) != nullptr) {
      found = std::sscanf(line, "Umask: %o", &mask) == 1;
    }
    std::fclose(f);
    if (found) {
      return static_cast<mode_t>(0666 & ~mask);
    }
  }
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return 0666 & ~mask;
}

}  // namespace

std::string temporary_template(const std::string& path) {
  const auto slash = path.find_last_of('/');
  const std::size_t name_at = slash == std::string::npos ? 0 : slash + 1;
  return fmt::format("{}.{}.XXXXXX{}", path.substr(0, name_at), path.substr(name_at, 200),
                     temporary_suffix);
}

int write_all(int fd, const void* data, std::size_t bytes) {
  const auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd, p, bytes);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return n < 0 ? errno : ENOSPC;
    }
    p += n;
    bytes -= static_cast<std::size_t>(n);
  }
  return 0;
}

int install_temporary(int fd, const std::string& tmp, const std::string& path) {
  int error = 0;
  if (::fchmod(fd, new_file_mode()) != 0) {  // mkostemps made it 0600
    error = errno;
  }
  if (::close(fd) != 0 && error == 0 && errno != EINTR) {  // Linux closes it even on EINTR
    error = errno;
  }
  if (error == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) {
    error = errno;
  }
  return error;
}

namespace {

/// What a file that is not a directory or a regular file is, with its article.
const char* file_kind(mode_t mode) {
  if (S_ISFIFO(mode)) {
    return "a FIFO (named pipe)";
  }
  if (S_ISCHR(mode)) {
    return "a character device";
  }
  if (S_ISBLK(mode)) {
    return "a block device";
  }
  if (S_ISSOCK(mode)) {
    return "a socket";
  }
  return "a special file";
}

}  // namespace

std::string output_folder(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) {
    return ".";
  }
  return slash == 0 ? "/" : path.substr(0, slash);
}

void check_output_path(const std::string& path, std::string_view what) {
  // "cannot write 'PATH'", or "cannot write WHAT 'PATH'"
  const std::string target =
      what.empty() ? fmt::format("'{}'", path) : fmt::format("{} '{}'", what, path);
  if (path.empty()) {
    throw FormatError(what.empty() ? std::string("an empty output file name")
                                   : fmt::format("an empty name for the {}", what));
  }
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;  // follows a symlink to its file
  if (path.back() == '/' || (exists && S_ISDIR(st.st_mode))) {
    throw FormatError(fmt::format("cannot write {}: it is a directory", target));
  }
  // An existing target (or the file a symlink names) is replaced by the rename: only a regular
  // file may be. A FIFO, a device or a socket would be destroyed, not written to.
  if (exists && !S_ISREG(st.st_mode)) {
    throw FormatError(fmt::format(
        "cannot write {}: it is {}, not a regular file (pathlift writes a new file and renames "
        "it onto the target, which would replace it; name a regular file)",
        target, file_kind(st.st_mode)));
  }
  const std::string folder = output_folder(path);
  if (::stat(folder.c_str(), &st) != 0) {
    throw FormatError(fmt::format("cannot write {}: the folder '{}' {}", target, folder,
                                  errno == ENOENT ? "does not exist" : std::strerror(errno)));
  }
  if (!S_ISDIR(st.st_mode)) {
    throw FormatError(fmt::format("cannot write {}: '{}' is not a folder", target, folder));
  }
  if (::access(folder.c_str(), W_OK | X_OK) != 0) {
    throw FormatError(fmt::format("cannot write {}: the folder '{}' is not writable ({})", target,
                                  folder, std::strerror(errno)));
  }
}

void write_file_atomically(const std::string& path, std::string_view bytes, std::string_view what) {
  const auto fail = [&](int error) {
    throw FormatError(fmt::format("cannot write {} '{}': {}", what, path, std::strerror(error)));
  };
  check_output_path(path, what);
  // Next to the target (the same file system, so the rename is atomic); mkostemps creates it
  // with O_EXCL: no symlink is followed, no existing file is reused.
  std::string tmp = temporary_template(path);
  const int fd = ::mkostemps(tmp.data(), static_cast<int>(temporary_suffix.size()), O_CLOEXEC);
  if (fd < 0) {
    fail(errno);
  }
  int error = write_all(fd, bytes.data(), bytes.size());
  if (error != 0) {
    ::close(fd);
  } else {
    error = install_temporary(fd, tmp, path);
  }
  if (error != 0) {
    ::unlink(tmp.c_str());
    fail(error);
  }
}

void write_network(const Network& net, const std::string& path) {
  write_file_atomically(path, network_to_json(net, 1) + "\n", "network file");
}

}  // namespace pathlift
