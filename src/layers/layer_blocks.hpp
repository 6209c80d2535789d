#pragma once
// The parameter blocks a layer reads from theta, as other parts see them (the shares of the
// path-norm per channel, layer_dp/path_shares.cpp): the layers part's interface to
// LayerChecker::blocks().

#include <cstddef>
#include <vector>

#include "pathlift/layers.hpp"

namespace pathlift::detail {

/// A layer's parameter blocks: its weight (batch_norm: a) and bias (b) sizes, and the shape of
/// the tensor its weight is read as (linear (out, in); conv (out, in / groups, k...);
/// conv_transpose (in, out / groups, k...); batch_norm (C)).
struct Blocks {
  Index weight = 0;
  Index bias = 0;
  std::vector<Index> weight_shape;
};

/// The blocks of layer l of a valid graph whose output shapes are `shapes` (layer_shapes);
/// empty for a layer without parameters.
Blocks layer_blocks(const LayerGraph& graph, const std::vector<std::vector<Index>>& shapes,
                    std::size_t l);

}  // namespace pathlift::detail
