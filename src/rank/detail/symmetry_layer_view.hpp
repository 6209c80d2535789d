#pragma once
// The layer graph as the rescaling symmetries read it (layer_symmetry.cpp): the unroller's
// plan (entries, liveness, windows), channels, the edges of one weight tap, parameter blocks,
// and the conditions under which zero parameters leave every entry on a path.

#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

#include "pathlift/layers.hpp"
#include "pathlift/types.hpp"
#include "src/core/checked.hpp"
#include "src/layers/layer_kinds.hpp"
#include "src/layers/layers_unroll.hpp"

namespace pathlift::detail {

/// Channels of a tensor and the entries of each: {F} has F channels of one entry (a batch
/// norm's channel is then a feature), {C, ...} C channels.
struct Channels {
  Index count = 1;
  Index size = 1;
};
inline Channels channels_of(const std::vector<Index>& shape, Index entries) {
  const Index c = shape.empty() ? 1 : shape[0];
  return {c, c > 0 ? entries / c : 0};
}

inline constexpr Index k_no_entry = -2;  // a channel without a live entry
inline constexpr Index k_split = -1;     // a channel whose live entries are in several classes

/// Read-only views of a layer graph and its plan; `theta` (may be empty) for the zero
/// conditions.
class SymmetryLayerView {
 public:
  SymmetryLayerView(const LayerGraph& graph, Unroller& plan, std::span<const double> theta)
      : m_graph(graph), m_plan(plan), m_theta(theta) {}

  [[nodiscard]] const Layer& layer(std::size_t l) const { return m_graph.layers[l]; }
  [[nodiscard]] std::size_t op(std::size_t l, std::size_t k = 0) const {
    return static_cast<std::size_t>(layer(l).inputs[k]);
  }
  [[nodiscard]] Index entries(std::size_t l) const { return entries_of(m_plan.shapes()[l]); }
  [[nodiscard]] Index at(std::size_t l, Index e) const { return m_plan.global_entry(l, e); }
  [[nodiscard]] bool live(std::size_t l, Index e) const { return m_plan.is_live(at(l, e)); }
  [[nodiscard]] Channels channels(std::size_t l) const {
    return channels_of(m_plan.shapes()[l], entries(l));
  }

  /// Calls f(output entry, input entry) for every edge of tap (kh, kw) between output channel
  /// co and input channel ci of a conv or conv_transpose l whose output entry is live.
  template <class F>
  void for_tap(std::size_t l, Index co, Index ci, Index kh, Index kw, const F& f) const {
    const Window& w = m_plan.window(l);
    if (layer(l).kind == LayerKind::conv) {
      for (Index oh = 0; oh < w.h.out; ++oh) {
        if (kh < w.h.first(oh) || kh >= w.h.last(oh)) {
          continue;
        }
        for (Index ow = 0; ow < w.w.out; ++ow) {
          if (kw < w.w.first(ow) || kw >= w.w.last(ow)) {
            continue;
          }
          const Index e = (co * w.h.out + oh) * w.w.out + ow;
          if (live(l, e)) {
            f(e, (ci * w.h.in + w.h.input(oh, kh)) * w.w.in + w.w.input(ow, kw));
          }
        }
      }
      return;
    }
    // conv_transpose: input (ci, q) reaches output (co, p) through the adjoint's tap k when the
    // adjoint's output q reads p = input(q, k).
    for (Index qh = 0; qh < w.h.out; ++qh) {
      if (kh < w.h.first(qh) || kh >= w.h.last(qh)) {
        continue;
      }
      for (Index qw = 0; qw < w.w.out; ++qw) {
        if (kw < w.w.first(qw) || kw >= w.w.last(qw)) {
          continue;
        }
        const Index e = (co * w.h.in + w.h.input(qh, kh)) * w.w.in + w.w.input(qw, kw);
        if (live(l, e)) {
          f(e, (ci * w.h.out + qh) * w.w.out + qw);
        }
      }
    }
  }

  /// A conv's (or conv_transpose's) group layout: output channels, input channels per group.
  struct ConvLayout {
    Index out = 0;       // output channels
    Index in = 0;        // input channels
    Index in_group = 0;  // input channels per group
    Index out_group = 0;
  };
  [[nodiscard]] ConvLayout conv_layout(std::size_t l) const {
    const Window& w = m_plan.window(l);
    const bool t = layer(l).kind == LayerKind::conv_transpose;
    ConvLayout c;
    c.out = t ? w.channels_in : w.channels_out;
    c.in = t ? w.channels_out : w.channels_in;
    c.in_group = c.in / w.groups;
    c.out_group = c.out / w.groups;
    return c;
  }

  /// The weight and bias block sizes of layer l.
  [[nodiscard]] std::pair<Index, Index> block_sizes(std::size_t l) const {
    const Layer& ly = layer(l);
    const bool bias = ly.bias_offset >= 0;
    const auto kind = param_kind(ly.kind);
    if (!kind) {
      return {0, 0};
    }
    switch (*kind) {
      case ParamKind::linear:
        return {ly.out_features * entries(op(l)), bias ? ly.out_features : 0};
      case ParamKind::conv:
      case ParamKind::conv_transpose: {
        const Window& w = m_plan.window(l);
        const ConvLayout c = conv_layout(l);
        return {c.out * c.in_group * w.h.kernel * w.w.kernel, bias ? c.out : 0};
      }
      case ParamKind::batch_norm:
        return {channels(l).count, bias ? channels(l).count : 0};
    }
    throw std::logic_error("block_sizes: not a layer kind");
  }

  /// The parameter of weight (output channel co, input channel ci, tap) of conv or
  /// conv_transpose l.
  [[nodiscard]] Index weight(std::size_t l, Index co, Index ci, Index tap) const {
    const Window& w = m_plan.window(l);
    const ConvLayout c = conv_layout(l);
    const Index taps = w.h.kernel * w.w.kernel;
    const Index ci0 = (co / c.out_group) * c.in_group;
    return layer(l).weight_offset + tap +
           (layer(l).kind == LayerKind::conv_transpose
                ? (ci * c.out_group + co % c.out_group) * taps
                : (co * c.in_group + (ci - ci0)) * taps);
  }

  /// A linear layer's zero weights keep every entry on a path when each live output keeps a
  /// non-zero weight and each input feature a non-zero weight into a live output.
  [[nodiscard]] bool linear_zeros_keep_the_entries(std::size_t l) const;

  /// Conditions of zeros_keep_the_entries() on a convolution with zero weights.
  [[nodiscard]] bool conv_zeros_keep_the_entries(std::size_t l) const;

  /// Whether every live entry of conv or conv_transpose l reads at least one tap.
  [[nodiscard]] bool every_entry_reads_a_tap(std::size_t l) const;

 protected:
  const LayerGraph& m_graph;
  Unroller& m_plan;
  std::span<const double> m_theta;
};

}  // namespace pathlift::detail
