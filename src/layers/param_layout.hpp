#pragma once
// The layout of a parameter layer's blocks (ParamKind: linear, conv, its transpose, batch_norm):
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
  ParamKind kind = ParamKind::linear;
  /// linear (out, in); conv (out, in / groups, k...); the transposed convolution (in,
  /// out / groups, k...); batch_norm (C).
  std::vector<Index> weight_shape;
  Index weights = 0;    ///< the weight block's size
  Index out = 0;        ///< output channels (features; a batch norm's C): a bias each
  Index in = 0;         ///< input channels (a linear layer's input entries; a batch norm's C)
  Index out_group = 0;  ///< output channels per group (out for the kinds without groups)
  Index in_group = 0;   ///< input channels per group
  Index taps = 1;       ///< kernel entries (1 without a kernel)

  /// The first input channel of output channel co's group.
  [[nodiscard]] Index group_in(Index co) const { return (co / out_group) * in_group; }

  /// The index in the weight block of the weight from input channel ci (in co's group) to
  /// output channel co at tap t (a batch norm's weight co: ci = co, t = 0).
  [[nodiscard]] Index weight(Index co, Index ci, Index t) const {
    switch (kind) {
      case ParamKind::linear:
        return co * in + ci;
      case ParamKind::conv:
        return (co * in_group + (ci - group_in(co))) * taps + t;
      case ParamKind::conv_transpose:
        return (ci * out_group + co % out_group) * taps + t;
      case ParamKind::batch_norm:
        return co;
    }
    return -1;
  }

  /// The output channel that weight i enters.
  [[nodiscard]] Index out_channel(Index i) const {
    switch (kind) {
      case ParamKind::linear:
        return i / in;
      case ParamKind::conv:
        return i / (in_group * taps);
      case ParamKind::conv_transpose: {
        const Index row = i / taps;  // (input channel, output channel in its group)
        return (row / out_group / in_group) * out_group + row % out_group;
      }
      case ParamKind::batch_norm:
        return i;
    }
    return -1;
  }
};

/// The layout of `layer` on its (first) input's shape `in`, nullopt for a layer without
/// parameters. The sizes are those of a layer the builder accepted (no overflow checks here).
inline std::optional<ParamLayout> param_layout(const Layer& layer, const std::vector<Index>& in) {
  const auto kind = param_kind(layer.kind);
  if (!kind) {
    return std::nullopt;
  }
  ParamLayout p;
  p.kind = *kind;
  switch (*kind) {
    case ParamKind::linear:
      p.out = layer.out_features;
      p.in = entries_of(in);
      p.weight_shape = {p.out, p.in};
      break;
    case ParamKind::conv:
    case ParamKind::conv_transpose: {
      const bool transposed = *kind == ParamKind::conv_transpose;
      p.out = layer.out_channels;
      p.in = in[0];
      p.out_group = p.out / layer.groups;
      p.in_group = p.in / layer.groups;
      p.weight_shape = {transposed ? p.in : p.out, transposed ? p.out_group : p.in_group};
      for (const Index k : layer.kernel) {
        p.weight_shape.push_back(k);
        p.taps *= k;
      }
      break;
    }
    case ParamKind::batch_norm:  // a group per channel
      p.out = p.in = in[0];
      p.out_group = p.in_group = 1;
      p.weight_shape = {p.out};
      break;
  }
  if (p.out_group == 0) {
    p.out_group = p.out;
    p.in_group = p.in;
  }
  p.weights = 1;
  for (const Index s : p.weight_shape) {
    p.weights *= s;
  }
  return p;
}

}  // namespace pathlift::detail
