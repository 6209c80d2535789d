#pragma once
/// \file io.hpp
/// The network file format `pathlift-network` versions 1 and 2 (JSON; version 2: parameters
/// distinct from edges, "num_params" and "params"), documented in docs/file-format.md. The
/// readers also take a layer graph (`"format": "pathlift-layers"`, layers.hpp), unrolled.
/// \code{.json}
///   {"format": "pathlift-network", "version": 1,
///    "nodes": ["a", "c", "g", "d", "f", "h"],
///    "edges": [["a", "d"], ["a", "f"], ["c", "d"], ["c", "f"], ["d", "h"], ["f", "h"], ["g",
///    "h"]], "weights": [0.5, -1.0, 2.0, 0.25, 1.5, -0.5, 3.0], "outputs": ["h"], "bias": ["g"],
///    "activations": {"d": "relu"}}
/// \endcode
/// `nodes` may be an integer n (names "0".."n-1"); a node reference is a name (JSON string) or
/// a 0-based index (JSON integer). `weights`, `outputs`, `bias`, `activations` are optional.

#include <string>
#include <string_view>

#include "pathlift/network.hpp"

namespace pathlift {

/// Parses a network from JSON text. Throws FormatError naming the key (and the index of the
/// offending entry) for bad JSON or a bad field, NetworkError for an invalid network.
/// Complexity: O(size of the text).
Network parse_network(std::string_view json_text);

/// Reads a network file. Throws FormatError when the file cannot be read or parsed.
Network read_network(const std::string& path);

/// The network as `pathlift-network` JSON: version 1 with one parameter per edge, else version
/// 2 (weights included when the network has them).
/// `indent` < 0 writes one line; otherwise pretty-printed with that indent.
std::string network_to_json(const Network& net, int indent = -1);

/// Writes network_to_json(net, 1) to `path` (replaced atomically: written to a temporary
/// file first). Throws FormatError when the file cannot be written.
void write_network(const Network& net, const std::string& path);

}  // namespace pathlift
