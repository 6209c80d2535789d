// The ONNX reader, as --onnx uses it: the first byte picks the input shape (none, or one of a
// few, as --input-shape gives), the rest is the model's bytes for parse_onnx. Any bytes give a
// layer graph or a pathlift error. The import runs within 64 MB (theta and the gathers'
// indices, which a small file can ask for by the billion: TooLarge). A graph it gives is whole:
// its JSON (layer_graph_to_json) reads back to the same JSON (when its gathers hold under
// 100,000 indices: writing and reading millions is work, not reading the model), and as a Model
// its size() equals the unrolled network's counts (unrolled when under 100,000 nodes and edges,
// within 64 MB).

#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "harness.hpp"
#include "pathlift/layers.hpp"
#include "pathlift/model.hpp"
#include "pathlift/onnx.hpp"

namespace {

/// The shapes the first byte chooses from: the model's own (empty), images, a 1-D signal and a
/// vector.
const std::vector<std::vector<pathlift::Index>>& shapes() {
  static const std::vector<std::vector<pathlift::Index>> s = {
      {}, {1, 6, 6}, {2, 5, 5}, {3, 8, 8}, {2, 7}, {4}, {1, 28, 28}, {6}};
  return s;
}

void read(std::string_view bytes, const std::vector<pathlift::Index>& shape) {
  pathlift::LayerGraph graph =
      pathlift::parse_onnx(bytes, shape, {.max_memory = std::size_t{64} << 20});
  std::size_t indices = 0;
  for (const pathlift::Layer& l : graph.layers) {
    indices += l.indices.size();
  }
  if (indices >= 100'000) {
    pathlift::fuzz::check_unrolls(pathlift::Model(std::move(graph)));
    return;
  }
  const std::string json = pathlift::layer_graph_to_json(graph);
  try {
    if (pathlift::layer_graph_to_json(pathlift::parse_layer_graph(json)) != json) {
      pathlift::fuzz::fail("the layer graph's JSON reads back differently", json.substr(0, 200));
    }
  } catch (const std::exception& e) {
    pathlift::fuzz::fail("the layer graph's own JSON is refused", e.what());
  }
  pathlift::fuzz::check_unrolls(pathlift::Model(std::move(graph)));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) {
    return 0;
  }
  const auto& shape = shapes()[data[0] % shapes().size()];
  const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  pathlift::fuzz::expect_clean([&] { read(bytes, shape); });
  return 0;
}
