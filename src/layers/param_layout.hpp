#pragma once
// The layout of a parameter layer's blocks (the parameter forms: dense, window, its adjoint,
// channel affine):
// the weight tensor's shape in PyTorch's order, and which output channel, input channel and
// tap each weight is. One home for the rule: the builder sizes the blocks with it, the
// rescaling symmetries and the conservation laws place each weight with it.

#include <optional>
#include <vector>

#include "pathlift/layers.hpp"
#include "pathlift/types.hpp"
#include "src/core/checked.hpp"
#include "src/layers/layer_kinds.hpp"

namespace pathlift::detail {

struct ParamLayout {
  /// The weight tensor's leading axis is the input channels (a window's adjoint, PyTorch's
  /// ConvTranspose layout) rather than the output channels.
  bool transposed = false;
  /// linear (out, in); conv (out, in / groups, k...); the transposed convolution (in,
  /// out / groups, k...); batch_norm (C).
  std::vector<Index> weight_shape;
  Index weights = 0;    ///< the weight block's size
  Index out = 0;        ///< output channels (features; a batch norm's C): a bias each
  Index in = 0;         ///< input channels (a linear layer's input entries; a batch norm's C)
  Index out_group = 0;  ///< output channels per group (out for a linear layer)
  Index in_group = 0;   ///< input channels per group (a batch norm: 1, a group per channel)
  Index taps = 1;       ///< kernel entries (1 without a kernel)

  /// The first input channel of output channel co's group.
  [[nodiscard]] Index group_in(Index co) const { return (co / out_group) * in_group; }

  /// The index in the weight block of the weight from input channel ci (in co's group) to
  /// output channel co at tap t (t = 0 without a kernel; a batch norm's weight co: ci = co).
  [[nodiscard]] Index weight(Index co, Index ci, Index t) const {
    return transposed ? (ci * out_group + co % out_group) * taps + t
                      : (co * in_group + (ci - group_in(co))) * taps + t;
  }

  /// The output channel that weight i enters.
  [[nodiscard]] Index out_channel(Index i) const {
    if (transposed) {
      const Index row = i / taps;  // (input channel, output channel in its group)
      return (row / out_group / in_group) * out_group + row % out_group;
    }
    return i / (in_group * taps);
  }
};

/// The layout of `layer` on its (first) input's shape `in`, nullopt for a layer without
/// parameters. The sizes are those of a layer the builder accepted (no overflow checks here).
inline std::optional<ParamLayout> param_layout(const Layer& layer, const std::vector<Index>& in) {
  if (!has_parameters(layer)) {
    return std::nullopt;
  }
  ParamLayout p;
  const auto window = [&](bool transposed) {
    p.transposed = transposed;
    p.out = layer.out_channels;
    p.in = in[0];
    p.out_group = p.out / layer.groups;
    p.in_group = p.in / layer.groups;
    p.weight_shape = {transposed ? p.in : p.out, transposed ? p.out_group : p.in_group};
    for (const Index k : layer.kernel) {
      p.weight_shape.push_back(k);
      p.taps *= k;
    }
  };
  visit_param_kind(layer, "param_layout", [&]<class K>(K) {
    K::map(ParamMaps<void>{.dense =
                               [&] {
                                 p.out = p.out_group = layer.out_features;
                                 p.in = p.in_group = entries_of(in);
                                 p.weight_shape = {p.out, p.in};
                               },
                           .window = [&] { window(false); },
                           .adjoint_window = [&] { window(true); },
                           .channel_affine = [&] {  // a group per channel
                             p.out = p.in = in[0];
                             p.out_group = p.in_group = 1;
                             p.weight_shape = {p.out};
                           }});
  });
  p.weights = 1;
  for (const Index s : p.weight_shape) {
    p.weights *= s;
  }
  return p;
}

}  // namespace pathlift::detail
