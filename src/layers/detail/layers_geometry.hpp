#pragma once
// The geometry of the window layers (conv, max_pool, avg_pool, adaptive_avg_pool), shared by the
// validation (layer_shapes), the liveness plan and the edge generation of the unroller. 1-D data
// {C, L} is handled as 2-D data {C, 1, L} with a kernel of height 1, so every loop is 2-D.

#include <algorithm>
#include <vector>

#include "pathlift/layers.hpp"
#include "pathlift/types.hpp"

namespace pathlift::detail {

/// One spatial axis of a convolution or pooling: output o reads input
/// o * stride - padding + k * dilation for the taps k in [first(o), last(o)), the ones that fall
/// inside the input (the others read padding). Adaptive pooling instead reads the window
/// [floor(o in / out), ceil((o + 1) in / out)) with one tap per input position.
struct Axis {
  Index in = 1;
  Index out = 1;
  Index kernel = 1;
  Index stride = 1;
  Index padding = 0;
  Index dilation = 1;
  bool adaptive = false;

  /// The first input position output o reads (window layers: for tap k = first(o)).
  [[nodiscard]] Index first(Index o) const {
    if (adaptive) {
      return 0;
    }
    // Smallest k >= 0 with o * stride - padding + k * dilation >= 0.
    const Index start = o * stride - padding;
    return start >= 0 ? 0 : (-start + dilation - 1) / dilation;
  }
  /// One past the last tap of output o.
  [[nodiscard]] Index last(Index o) const {
    if (adaptive) {
      return end(o) - begin(o);
    }
    // Largest k < kernel with o * stride - padding + k * dilation <= in - 1, plus one.
    const Index start = o * stride - padding;
    if (start > in - 1) {
      return 0;
    }
    return std::min(kernel, (in - 1 - start) / dilation + 1);
  }
  /// The input position of tap k of output o.
  [[nodiscard]] Index input(Index o, Index k) const {
    return adaptive ? begin(o) + k : o * stride - padding + k * dilation;
  }
  /// Taps inside the input for output o (0 when its whole window is padding).
  [[nodiscard]] Index taps(Index o) const { return std::max<Index>(0, last(o) - first(o)); }

  /// PyTorch's adaptive window of output o: [floor(o in / out), ceil((o + 1) in / out)).
  [[nodiscard]] Index begin(Index o) const { return (o * in) / out; }
  [[nodiscard]] Index end(Index o) const { return ((o + 1) * in + out - 1) / out; }
};

/// A window layer on {C, H, W} data (1-D: H = 1): channels in and out, and the two axes.
struct Window {
  Index channels_in = 1;
  Index channels_out = 1;
  Index groups = 1;
  Axis h;
  Axis w;

  [[nodiscard]] Index in_entries() const { return channels_in * h.in * w.in; }
  [[nodiscard]] Index out_entries() const { return channels_out * h.out * w.out; }
};

/// The window of `layer` (conv, max_pool, avg_pool or adaptive_avg_pool) on an input of shape
/// `in` ({C, L} or {C, H, W}), defaults filled in (stride = kernel for pools, 1 for conv;
/// padding 0; dilation 1). Output sizes are PyTorch's (floor mode). The layer is assumed valid
/// (layer_shapes checks it with the same arithmetic).
inline Window window_of(const Layer& layer, const std::vector<Index>& in) {
  Window win;
  win.channels_in = in[0];
  win.channels_out = layer.kind == LayerKind::conv ? layer.out_channels : in[0];
  win.groups = layer.kind == LayerKind::conv ? layer.groups : 1;
  const std::size_t dims = in.size() - 1;
  const auto pick = [](const std::vector<Index>& v, std::size_t i, Index fallback) {
    return v.empty() ? fallback : v[i];
  };
  for (std::size_t i = 0; i < dims; ++i) {
    Axis& axis = (dims == 2 && i == 0) ? win.h : win.w;
    axis.in = in[i + 1];
    if (layer.kind == LayerKind::adaptive_avg_pool) {
      axis.adaptive = true;
      axis.out = layer.output_size[i];
      continue;
    }
    axis.kernel = layer.kernel[i];
    axis.stride = pick(layer.stride, i, layer.kind == LayerKind::conv ? 1 : axis.kernel);
    axis.padding = pick(layer.padding, i, 0);
    axis.dilation = pick(layer.dilation, i, 1);
    const Index span = axis.dilation * (axis.kernel - 1) + 1;
    const Index padded = axis.in + 2 * axis.padding;
    axis.out = padded >= span ? (padded - span) / axis.stride + 1 : 0;
  }
  return win;
}

}  // namespace pathlift::detail
