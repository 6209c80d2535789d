// The network JSON readers, as the CLI's --network uses them: a "pathlift-layers" document is
// read as a layer graph (parse_layer_graph, validated by Model) and, when small, unrolled;
// anything else goes to parse_network. Any bytes give a network or a pathlift error. A network
// read back from its own JSON (network_to_json) must give the same JSON.

#include <cstddef>
#include <cstdint>
#include <exception>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "harness.hpp"
#include "pathlift/io.hpp"
#include "pathlift/layers.hpp"
#include "pathlift/model.hpp"

namespace {

/// Whether `text` is a JSON object whose "format" is "pathlift-layers" (parse_network's own
/// test, so that the network branch never unrolls).
bool is_layer_graph(std::string_view text) {
  const auto doc = nlohmann::json::parse(text, nullptr, false);
  if (!doc.is_object()) {
    return false;
  }
  const auto format = doc.find("format");
  return format != doc.end() && *format == "pathlift-layers";
}

void read_layer_graph(std::string_view text) {
  pathlift::fuzz::check_unrolls(pathlift::Model(pathlift::parse_layer_graph(text)));
}

void read_network(std::string_view text) {
  const pathlift::Network net = pathlift::parse_network(text);
  const std::string json = pathlift::network_to_json(net);
  try {
    if (pathlift::network_to_json(pathlift::parse_network(json)) != json) {
      pathlift::fuzz::fail("the network's JSON reads back differently", json.substr(0, 200));
    }
  } catch (const std::exception& e) {
    pathlift::fuzz::fail("the network's own JSON is refused", e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (is_layer_graph(text)) {
    pathlift::fuzz::expect_clean([&] { read_layer_graph(text); });
  } else {
    pathlift::fuzz::expect_clean([&] { read_network(text); });
  }
  return 0;
}
