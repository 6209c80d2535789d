#pragma once
// The geometry of the window layers (the forms window, adjoint_window and pool: convolutions,
// their adjoints and the pools), shared by the validation (layer_shapes), the liveness plan and the
// edge generation of the unroller, and the layer dynamic programme. 1-D data {C, L} is handled as
// 2-D data {C, 1, L} with a kernel of height 1, so every loop is 2-D. A window's adjoint is
// described by the convolution it transposes (its adjoint): that convolution's input is the
// adjoint's output and its output the adjoint's input, with the same weights.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "pathlift/layers.hpp"
#include "pathlift/types.hpp"
#include "src/layers/layer_kinds.hpp"
#include "src/layers/layers_window.hpp"

namespace pathlift::detail {

/// max_pool and k_max_pool: windows whose outputs are max nodes over fixed edges 1.
inline bool is_max_window(LayerKind kind) {
  return record(kind).has(kTraitWindow) && record(kind).has(kTraitMaxNodes);
}

/// Which order statistic a max window of `layer` takes: its field k where its kind has one
/// (k_max_pool), the largest (1) otherwise (max_pool: a k set on it is not read).
inline Index window_order(const Layer& layer) {
  return record(layer.kind).has(Field::k) ? layer.k : 1;
}

/// The window forms (convolutions, their adjoints, the pools): a window over a {C, L} or
/// {C, H, W} input.
inline bool is_window(LayerKind kind) {
  return record(kind).has(kTraitWindow);
}

/// An upper bound on the terms one entry of a window layer reads along `axis`.
inline double window_length(const Axis& axis) {
  if (axis.adaptive) {
    // PyTorch's adaptive windows: [floor(o in / out), ceil((o + 1) in / out)).
    return std::min(static_cast<double>(axis.in),
                    std::ceil(static_cast<double>(axis.in) / static_cast<double>(axis.out)) + 1);
  }
  return static_cast<double>(std::min(axis.kernel, axis.in));
}

/// The window of window layer `layer` on an input of shape `in` ({C, L} or {C, H, W}), defaults
/// filled in (stride = kernel for pools, 1 for convolutions; padding 0; dilation 1). Output sizes
/// are PyTorch's, ceil_mode included (a last window must start inside the input or the left
/// padding). An adjoint's window is the window it is the adjoint of (see the file comment): in =
/// the adjoint's output size (in - 1) stride - 2 padding + dilation (kernel - 1) + output_padding +
/// 1, out = its input size. The layer is assumed valid (layer_shapes checks it with the same
/// arithmetic).
inline Window window_of(const Layer& layer, const std::vector<Index>& in) {
  Window win;
  const bool conv = form_of(layer.kind) == Form::window;
  const bool transposed = form_of(layer.kind) == Form::adjoint_window;
  win.channels_in = transposed ? layer.out_channels : in[0];
  win.channels_out = conv ? layer.out_channels : in[0];
  win.groups = conv || transposed ? layer.groups : 1;
  const std::size_t dims = in.size() - 1;
  const auto pick = [](const std::vector<Index>& v, std::size_t i, Index fallback) {
    return v.empty() ? fallback : v[i];
  };
  for (std::size_t i = 0; i < dims; ++i) {
    Axis& axis = (dims == 2 && i == 0) ? win.h : win.w;
    axis.in = in[i + 1];
    if (record(layer.kind).has(Field::output_size)) {  // an adaptive window
      axis.adaptive = true;
      axis.out = layer.output_size[i];
      continue;
    }
    axis.kernel = layer.kernel[i];
    axis.stride = pick(layer.stride, i, conv || transposed ? 1 : axis.kernel);
    axis.padding = pick(layer.padding, i, 0);
    axis.dilation = pick(layer.dilation, i, 1);
    const Index span = axis.dilation * (axis.kernel - 1) + 1;
    if (transposed) {
      axis.out = axis.in;
      axis.in =
          (axis.out - 1) * axis.stride - 2 * axis.padding + span + pick(layer.output_padding, i, 0);
      continue;
    }
    const Index padded = axis.in + 2 * axis.padding;
    if (padded < span) {
      axis.out = 0;
    } else if (!layer.ceil_mode) {
      axis.out = (padded - span) / axis.stride + 1;
    } else {
      axis.out = (padded - span + axis.stride - 1) / axis.stride + 1;
      if ((axis.out - 1) * axis.stride >= axis.in + axis.padding) {
        --axis.out;
      }
    }
  }
  return win;
}

/// The fixed weight of a pool's output (oh, ow) before a pass's transform: 1 for a (k-)max pool,
/// 1 / divisor for a mean with PyTorch's divisor (the window clipped to the padded input with
/// count_include_pad, else the taps inside the input).
inline double pool_weight(const Layer& layer, const Window& w, Index oh, Index ow) {
  if (is_max_window(layer.kind)) {
    return 1.0;
  }
  const bool padded = record(layer.kind).has(Field::count_include_pad) && layer.count_include_pad;
  const Index divisor =
      padded ? w.h.padded_taps(oh) * w.w.padded_taps(ow) : w.h.taps(oh) * w.w.taps(ow);
  return 1.0 / static_cast<double>(divisor);
}

/// One output coordinate of a linear interpolation along one axis: `count` (1 or 2) input
/// indices, increasing, with their weights (> 0: a zero weight is dropped, two equal indices
/// are one tap).
struct LerpTaps {
  std::array<Index, 2> index{0, 0};
  std::array<double, 2> weight{0, 0};
  int count = 0;
};

/// PyTorch's linear interpolation weights along one axis of `in` positions resized to `out`
/// (aten's upsample_linear1d / upsample_bilinear2d on the CPU in double precision:
/// area_pixel_compute_scale, area_pixel_compute_source_index, guard_index_and_lambda). `scale`
/// is the caller's scale_factor (0: none; then in / out), read only when !align_corners; an
/// axis whose size does not change is copied.
inline std::vector<LerpTaps> lerp_axis(Index in, Index out, bool align_corners, double scale) {
  std::vector<LerpTaps> taps(static_cast<std::size_t>(out));
  double ratio = 0;
  if (align_corners) {
    ratio = out > 1 ? static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
  } else {
    ratio = scale > 0 ? 1.0 / scale : static_cast<double>(in) / static_cast<double>(out);
  }
  for (Index o = 0; o < out; ++o) {
    LerpTaps& t = taps[static_cast<std::size_t>(o)];
    if (in == out) {
      t = {{o, o}, {1.0, 0.0}, 1};
      continue;
    }
    double src = align_corners ? ratio * static_cast<double>(o)
                               : ratio * (static_cast<double>(o) + 0.5) - 0.5;
    if (!align_corners && src < 0) {
      src = 0;
    }
    const Index i0 = std::min(static_cast<Index>(std::floor(src)), in - 1);
    const double l1 = std::min(std::max(src - static_cast<double>(i0), 0.0), 1.0);
    const double l0 = 1.0 - l1;
    const Index i1 = i0 + (i0 < in - 1 ? 1 : 0);
    if (i1 == i0) {
      t = {{i0, i0}, {l0 + l1, 0.0}, 1};
    } else if (l1 == 0) {
      t = {{i0, i0}, {l0, 0.0}, 1};
    } else if (l0 == 0) {
      t = {{i1, i1}, {l1, 0.0}, 1};
    } else {
      t = {{i0, i1}, {l0, l1}, 2};
    }
  }
  return taps;
}

/// The two axes of an interpolate layer on an input of shape `in` ({C, L}: h is a copy of
/// height 1).
struct Lerp {
  Index channels = 1;
  Index h_in = 1;
  Index w_in = 1;
  std::vector<LerpTaps> h;
  std::vector<LerpTaps> w;

  [[nodiscard]] Index h_out() const { return static_cast<Index>(h.size()); }
  [[nodiscard]] Index w_out() const { return static_cast<Index>(w.size()); }
  /// Calls f(input position, weight) for the taps of output position (oh, ow) (row-major
  /// positions), by increasing input position.
  template <class F>
  void for_taps(Index oh, Index ow, const F& f) const {
    const LerpTaps& a = h[static_cast<std::size_t>(oh)];
    const LerpTaps& b = w[static_cast<std::size_t>(ow)];
    for (int i = 0; i < a.count; ++i) {
      for (int j = 0; j < b.count; ++j) {
        f(a.index[static_cast<std::size_t>(i)] * w_in + b.index[static_cast<std::size_t>(j)],
          a.weight[static_cast<std::size_t>(i)] * b.weight[static_cast<std::size_t>(j)]);
      }
    }
  }
};

/// The interpolation of `layer` (interpolate, assumed valid) on an input of shape `in`.
inline Lerp lerp_of(const Layer& layer, const std::vector<Index>& in) {
  Lerp l;
  l.channels = in[0];
  const bool two = in.size() == 3;
  const auto scale = [&](std::size_t i) { return layer.scales.empty() ? 0.0 : layer.scales[i]; };
  if (two) {
    l.h_in = in[1];
    l.h = lerp_axis(in[1], layer.output_size[0], layer.align_corners, scale(0));
  } else {
    l.h = {LerpTaps{{0, 0}, {1.0, 0.0}, 1}};
  }
  l.w_in = in.back();
  l.w = lerp_axis(in.back(), layer.output_size.back(), layer.align_corners, scale(two ? 1 : 0));
  return l;
}

/// A group_sort layer on an input of shape `in`: groups of `size` consecutive indices along
/// axis 0, each at `positions` positions (the product of the other dimensions). Entry
/// (c, p) is c * positions + p; its group's entries are (g0 + j, p) for j < size.
struct Groups {
  Index size = 1;
  Index channels = 1;
  Index positions = 1;

  [[nodiscard]] Index first_channel(Index c) const { return c - c % size; }
  /// Which order statistic entry channel c holds: the k-th largest of its group.
  [[nodiscard]] Index order(Index c, bool descending) const {
    const Index j = c % size;
    return descending ? j + 1 : size - j;
  }
};

inline Groups groups_of(const Layer& layer, const std::vector<Index>& in) {
  Groups g;
  g.size = layer.group_size;
  g.channels = in[0];
  g.positions = 1;
  for (std::size_t i = 1; i < in.size(); ++i) {
    g.positions *= in[i];
  }
  return g;
}

/// The operand k and its entry that entry e of view layer l (a reshape, a concatenation, a
/// pick, an identity activation) shows, with `shapes` the layers' output shapes
/// (layer_shapes): a reshape's or an activation's the same entry; a concatenation's along its
/// axis; a pick's along its axis at the picked index.
inline std::pair<std::size_t, Index> view_source(const LayerGraph& graph,
                                                 const std::vector<std::vector<Index>>& shapes,
                                                 std::size_t l, Index e) {
  const Layer& ly = graph.layers[l];
  const auto entries = [&](std::size_t x) {
    Index n = 1;
    for (const Index d : shapes[x]) {
      n *= d;
    }
    return n;
  };
  const auto axis = static_cast<std::size_t>(ly.axis);
  if (form_of(ly.kind) == Form::pick) {
    // Outer blocks (dimensions before the axis), the picked index, inner rows.
    const std::vector<Index>& in = shapes[static_cast<std::size_t>(ly.inputs[0])];
    Index outer = 1;
    for (std::size_t i = 0; i < axis; ++i) {
      outer *= in[i];
    }
    const Index inner = entries(static_cast<std::size_t>(ly.inputs[0])) / (outer * in[axis]);
    const auto picked = static_cast<Index>(ly.indices.size());
    const Index j = ly.indices[static_cast<std::size_t>((e / inner) % picked)];
    return {0, (e / (picked * inner) * in[axis] + j) * inner + e % inner};
  }
  if (form_of(ly.kind) != Form::concat) {
    return {0, e};
  }
  // Outer blocks (dimensions before the axis) of each operand's rows in turn.
  Index outer = 1;
  for (std::size_t i = 0; i < axis; ++i) {
    outer *= shapes[l][i];
  }
  const Index row = entries(l) / outer;
  Index i = e % row;
  for (std::size_t k = 0;; ++k) {
    const Index part = entries(static_cast<std::size_t>(ly.inputs[k])) / outer;
    if (i < part) {
      return {k, e / row * part + i};
    }
    i -= part;
  }
}

// The terms of one output entry of a window, interpolate or group_sort layer, in the order the
// unroller writes its edges and the path search reads them (docs/paths.md#layer-graphs): each
// as the index of the entry of the layer's input tensor it reads, with its parameter or weight.

/// A convolution's output entry e (co, oh, ow): f(input entry, parameter) by input channel of
/// its group, then kernel row, then column; taps in the padding skipped. The bias is not a tap.
template <class F>
void conv_taps(const Layer& ly, const Window& w, Index e, const F& f) {
  const auto [co, oh, ow] = w.out_position(e);
  const Index cg = w.channels_in / w.groups;
  const Index ci0 = (co / (w.channels_out / w.groups)) * cg;
  const Index kh0 = w.h.first(oh);
  const Index kh1 = w.h.last(oh);
  const Index kw0 = w.w.first(ow);
  const Index kw1 = w.w.last(ow);
  for (Index ci = 0; ci < cg; ++ci) {
    const Index p0 = ly.weight_offset + (co * cg + ci) * w.h.kernel * w.w.kernel;
    const Index plane = (ci0 + ci) * w.h.in * w.w.in;
    for (Index kh = kh0; kh < kh1; ++kh) {
      const Index row = plane + w.h.input(oh, kh) * w.w.in;
      const Index p = p0 + kh * w.w.kernel;
      for (Index kw = kw0; kw < kw1; ++kw) {
        f(row + w.w.input(ow, kw), p + kw);
      }
    }
  }
}

/// Output entry e of the adjoint of window w (the window's input): f(input
/// entry, parameter) for the adjoint's outputs that read it, by input channel, then tap. Parameter
/// (ci, co mod cg_out, kh, kw).
template <class F>
void adjoint_window_taps(const Layer& ly, const Window& w, Index e, const F& f) {
  const Position at = w.in_position(e);           // a named struct: the lambdas below read it
  const Index cg_out = w.channels_in / w.groups;  // this layer's output channels per group
  const Index cg_in = w.channels_out / w.groups;  // its input channels per group
  const Index ci0 = (at.c / cg_out) * cg_in;
  for (Index ci = ci0; ci < ci0 + cg_in; ++ci) {
    const Index p0 = ly.weight_offset + (ci * cg_out + at.c % cg_out) * w.h.kernel * w.w.kernel;
    const Index plane = ci * w.h.out * w.w.out;
    w.h.readers(at.h, [&](Index ih, Index kh) {
      w.w.readers(at.w, [&](Index iw, Index kw) {
        f(plane + ih * w.w.out + iw, p0 + kh * w.w.kernel + kw);
      });
    });
  }
}

/// A pool's output entry e: f(input entry) for the taps of its window inside the input, row by
/// row (the weight is pool_weight's).
template <class F>
void window_taps(const Window& w, Index e, const F& f) {
  const auto [c, oh, ow] = w.out_position(e);
  const Index plane = c * w.h.in * w.w.in;
  for (Index kh = w.h.first(oh); kh < w.h.last(oh); ++kh) {
    const Index row = plane + w.h.input(oh, kh) * w.w.in;
    for (Index kw = w.w.first(ow); kw < w.w.last(ow); ++kw) {
      f(row + w.w.input(ow, kw));
    }
  }
}

/// An interpolate layer's output entry e: f(input entry, weight) for its taps, by increasing
/// input entry.
template <class F>
void lerp_taps(const Lerp& t, Index e, const F& f) {
  const Index n_out = t.h_out() * t.w_out();
  const Index plane = (e / n_out) * t.h_in * t.w_in;
  const Index o = e % n_out;
  t.for_taps(o / t.w_out(), o % t.w_out(), [&](Index i, double weight) { f(plane + i, weight); });
}

/// A group_sort layer's output entry e: f(input entry) for the entries of its group.
template <class F>
void group_taps(const Groups& g, Index e, const F& f) {
  const Index p = e % g.positions;
  const Index c0 = g.first_channel(e / g.positions);
  for (Index c = c0; c < c0 + g.size; ++c) {
    f(c * g.positions + p);
  }
}

}  // namespace pathlift::detail
