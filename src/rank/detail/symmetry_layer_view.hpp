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
#include "src/layers/param_layout.hpp"

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
  /// co and input channel ci of a window layer l with parameters (of layout c: a convolution,
  /// or its adjoint) whose output entry is live.
  template <class F>
  void for_tap(std::size_t l, const ParamLayout& c, Index co, Index ci, Index kh, Index kw,
               const F& f) const {
    const Window& w = m_plan.window(l);
    if (!c.transposed) {
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
    // The adjoint: input (ci, q) reaches output (co, p) through the window's tap k when the
    // window's output q reads p = input(q, k).
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

  /// Parameter layer l's layout (param_layout): channels, groups, and where each weight is.
  [[nodiscard]] ParamLayout layout(std::size_t l) const {
    const auto p = param_layout(layer(l), m_plan.shapes()[op(l)]);
    if (!p) {
      throw std::logic_error("layout: not a parameter layer");
    }
    return *std::move(p);
  }

  /// The weight and bias block sizes of layer l ({0, 0} without parameters).
  [[nodiscard]] std::pair<Index, Index> block_sizes(std::size_t l) const {
    if (!has_parameters(layer(l))) {
      return {0, 0};
    }
    const ParamLayout p = layout(l);
    return {p.weights, layer(l).bias_offset >= 0 ? p.out : 0};
  }

  /// A linear layer's zero weights keep every entry on a path when each live output keeps a
  /// non-zero weight and each input feature a non-zero weight into a live output.
  [[nodiscard]] bool linear_zeros_keep_the_entries(std::size_t l) const;

  /// Conditions of zeros_keep_the_entries() on a convolution with zero weights.
  [[nodiscard]] bool conv_zeros_keep_the_entries(std::size_t l) const;

  /// Whether every live entry of window layer l with parameters reads at least one tap.
  [[nodiscard]] bool every_entry_reads_a_tap(std::size_t l) const;

 protected:
  const LayerGraph& m_graph;
  Unroller& m_plan;
  std::span<const double> m_theta;
};

}  // namespace pathlift::detail
