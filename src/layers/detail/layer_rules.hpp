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
#include "src/layers/kinds/kind.hpp"
#include "src/layers/layers_window.hpp"

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

/// The kinds that have `field`, in LayerKind's order: "max_pool, avg_pool and k_max_pool".
std::string kinds_with(Field field);

/// Validates one layer against the output shapes of the layers before it and returns its
/// output shape: its inputs (how many its record allows, each an earlier layer), then its kind's
/// rule (Kind<K>::shape, src/layers/kinds/), which reads the layer and its inputs' shapes
/// through the helpers below and reports a problem with fail().
class LayerChecker {
 public:
  LayerChecker(const Layer& layer, Index index, const std::vector<std::vector<Index>>& shapes)
      : m_layer(layer), m_index(index), m_shapes(shapes) {}

  std::vector<Index> check() const;

  /// The blocks of a linear, conv or batch_norm layer whose output check() accepted.
  [[nodiscard]] Blocks blocks() const;

  [[noreturn]] void fail(const std::string& what) const { throw LayerProblem{what}; }

  [[nodiscard]] const Layer& layer() const { return m_layer; }
  /// The shape of input k.
  [[nodiscard]] const std::vector<Index>& in(std::size_t k) const;

  /// Input 0 as {C, L} or {C, H, W} data: its number of spatial dimensions (a problem otherwise).
  [[nodiscard]] std::size_t spatial_dims() const;

  /// A per-dimension list: empty (the default) or one value per spatial dimension, each >= lo.
  void check_list(const char* what, const std::vector<Index>& v, std::size_t dims, Index lo,
                  bool required) const;

  /// A convolution's out_channels (1..k_max_dim) and groups (dividing `in_channels` and
  /// out_channels).
  void check_channels(Index in_channels) const;

  /// The rule of a window layer (a convolution: `convolution`; an adaptive pool: `adaptive`):
  /// its lists, its channels, no window entirely in the padding.
  [[nodiscard]] std::vector<Index> window(bool convolution, bool adaptive) const;

  /// The window of the layer, a window kind whose lists are checked, on its first input
  /// (window_of()).
  [[nodiscard]] Window window_geometry() const;

 private:
  void check_inputs() const;

  const Layer& m_layer;
  Index m_index;
  const std::vector<std::vector<Index>>& m_shapes;
};

}  // namespace pathlift::detail
