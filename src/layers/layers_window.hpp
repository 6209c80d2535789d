#pragma once
// The window of a window layer (a convolution, its adjoint, a pool) as plain arithmetic: its
// two axes and the taps each output reads. Below the table of kinds (layer_kinds.hpp), so that
// a kind's rule can read its window (LayerChecker::window_geometry()); which window a layer
// has (window_of()) and the rest of the geometry are in layers_geometry.hpp.

#include <algorithm>

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

  /// PyTorch's pool_size of an average pool's output o: its window clipped to the padded input
  /// (padding included), which is the kernel except for a ceil_mode window at the end.
  [[nodiscard]] Index padded_taps(Index o) const {
    const Index start = o * stride - padding;
    return std::min(start + kernel, in + padding) - start;
  }

  /// Calls f(o, k) for every output o and tap k that read input position pos, by increasing k
  /// (the outputs an entry pos of the window's adjoint sums: the window read backwards).
  template <class F>
  void readers(Index pos, const F& f) const {
    for (Index k = 0; k < kernel; ++k) {
      const Index t = pos + padding - k * dilation;
      if (t < 0) {
        break;
      }
      if (t % stride == 0 && t / stride < out) {
        f(t / stride, k);
      }
    }
  }

  /// PyTorch's adaptive window of output o: [floor(o in / out), ceil((o + 1) in / out)).
  [[nodiscard]] Index begin(Index o) const { return (o * in) / out; }
  [[nodiscard]] Index end(Index o) const { return ((o + 1) * in + out - 1) / out; }
};

/// An entry of a {C, H, W} tensor: its channel, row and column.
struct Position {
  Index c = 0;
  Index h = 0;
  Index w = 0;
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
  /// Where output entry e is (for an adjoint: its input entry e).
  [[nodiscard]] Position out_position(Index e) const { return position(e, h.out, w.out); }
  /// Where input entry e is (for an adjoint: its output entry e).
  [[nodiscard]] Position in_position(Index e) const { return position(e, h.in, w.in); }

 private:
  static Position position(Index e, Index height, Index width) {
    const Index plane = height * width;
    return {e / plane, (e % plane) / width, e % width};
  }
};

/// The fewest and the most taps inside the input of one output of window `w` (k_max_pool's k
/// must not exceed the fewest; the bound's K is the most).
struct TapRange {
  Index fewest = 0;
  Index most = 0;
};
inline TapRange tap_range(const Window& w) {
  const auto axis = [](const Axis& a) {
    TapRange r{a.in, 0};
    for (Index o = 0; o < a.out; ++o) {
      r.fewest = std::min(r.fewest, a.taps(o));
      r.most = std::max(r.most, a.taps(o));
    }
    return r;
  };
  const TapRange h = axis(w.h);
  const TapRange x = axis(w.w);
  return {h.fewest * x.fewest, h.most * x.most};
}

}  // namespace pathlift::detail
