#pragma once
// The rules a layer of each kind follows (LayerGraphBuilder, layer_graph_builder.hpp): its
// inputs, its parameters and its output shape, checked against the output shapes of the layers
// before it (layer_rules.cpp).

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "pathlift/layers.hpp"
#include "pathlift/types.hpp"
#include "src/layers/layer_kinds.hpp"

namespace pathlift::detail {

/// A layer's parameter blocks: its weight (batch_norm: a) and bias (b) sizes, and the shape of
/// the tensor its weight is read as (param_layout.hpp's weight_shape).
struct Blocks {
  Index weight = 0;
  Index bias = 0;
  std::vector<Index> weight_shape;
};

// Every size, stride, padding and dilation is at most this, and so is every entry count, so
// that no window arithmetic (products of two of them) can overflow 64 bits and every entry is
// a node index.
inline constexpr Index k_max_dim = std::numeric_limits<std::int32_t>::max();

/// "{3, 32, 32}".
std::string shape_text(const std::vector<Index>& shape);

/// A rule one layer breaks: the builder records it.
struct LayerProblem {
  std::string what;
};

/// The number of entries of `shape`, or a problem naming `what` when a dimension is out of
/// 1..2^31 - 1 or the product exceeds it.
Index checked_entries(const std::vector<Index>& shape, std::string_view what);

/// Validates one layer against the output shapes of the layers before it and returns its
/// output shape.
class LayerChecker {
 public:
  LayerChecker(const Layer& layer, Index index, const std::vector<std::vector<Index>>& shapes)
      : m_layer(layer), m_index(index), m_shapes(shapes) {}

  std::vector<Index> check() const;

  /// The blocks of a linear, conv or batch_norm layer whose output check() accepted.
  [[nodiscard]] Blocks blocks() const;

  [[noreturn]] void fail(const std::string& what) const { throw LayerProblem{what}; }

 private:
  const std::vector<Index>& in(std::size_t k) const;

  void check_inputs() const;

  std::vector<Index> linear() const;

  /// A per-dimension list: empty (the default) or one value per spatial dimension, each >= lo.
  void check_list(const char* what, const std::vector<Index>& v, std::size_t dims, Index lo,
                  bool required) const;

  /// A convolution's out_channels (1..k_max_dim) and groups (dividing `in_channels` and
  /// out_channels).
  void check_channels(Index in_channels) const;

  std::vector<Index> window() const;

  /// A conv_transpose: its adjoint convolution's window, read backwards.
  std::vector<Index> transposed_window() const;

  /// A k_max_pool: a window whose every output has at least k taps inside the input.
  std::vector<Index> k_max_window() const;

  std::vector<Index> group_sort() const;

  std::vector<Index> interpolate() const;

  std::vector<Index> gather() const;

  std::vector<Index> concat() const;

  const Layer& m_layer;
  Index m_index;
  const std::vector<std::vector<Index>>& m_shapes;
};

}  // namespace pathlift::detail
