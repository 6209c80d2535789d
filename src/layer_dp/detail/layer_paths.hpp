#pragma once
// The heaviest and sampled paths of a layer graph without unrolling it (heavy_paths.hpp's
// top_paths and sample_paths on a layer graph; docs/paths.md#layer-graphs): the search runs on
// the layers' entries, each entry's terms generated from its layer's geometry on demand.

#include <cstdint>
#include <span>
#include <vector>

#include "pathlift/heavy_paths.hpp"
#include "pathlift/layers.hpp"
#include "pathlift/options.hpp"

namespace pathlift::detail {

/// top_paths on a valid layer graph (arguments checked by the caller).
std::vector<WeightedPath> layer_top_paths(const LayerGraph& graph, std::span<const double> theta,
                                          Index k, double s, const EngineOptions& options);

/// sample_paths on a valid layer graph (arguments checked by the caller).
std::vector<WeightedPath> layer_sample_paths(const LayerGraph& graph, std::span<const double> theta,
                                             Index n, double s, std::uint64_t seed,
                                             const EngineOptions& options);

}  // namespace pathlift::detail
