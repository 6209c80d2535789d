#pragma once
// The entries of a layer graph as a graph, for the searches that walk them without unrolling
// (layer_paths.cpp): each entry of a layer that owns its entries (views resolved to their
// operands'), its terms generated from its layer's geometry on demand (layers_geometry.hpp's
// taps: the unroller's edges, in the same order).

#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "pathlift/layers.hpp"
#include "src/layers/layer_kinds.hpp"
#include "src/layers/layers_geometry.hpp"
#include "src/layers/layers_unroll.hpp"

namespace pathlift::detail {

/// One term of an entry: the entry it reads (resolved through views) or, with `bias`, the bias
/// of channel `entry` of `layer`; its parameter (-1: fixed) and weight.
struct Term {
  std::int32_t layer;
  bool bias;
  Index entry;
  Index param;
  double weight;
};

/// The layer graph's entries as a graph: per layer its geometry, the terms of each entry.
class EntryGraph {
 public:
  explicit EntryGraph(const LayerGraph& graph)
      : m_graph(graph),
        m_shapes(layer_shapes(graph)),
        m_window(graph.layers.size()),
        m_lerp(graph.layers.size()),
        m_groups(graph.layers.size()) {
    for (std::size_t l = 0; l < graph.layers.size(); ++l) {
      Index n = 1;
      for (const Index x : m_shapes[l]) {
        n *= x;
      }
      m_entries.push_back(n);
      const Layer& ly = graph.layers[l];
      if (l == 0) {
        continue;
      }
      if (is_window(ly.kind)) {
        m_window[l] = window_of(ly, m_shapes[op(l)]);
      } else if (form_of(ly.kind) == Form::lerp) {
        m_lerp[l] = lerp_of(ly, m_shapes[op(l)]);
      } else if (form_of(ly.kind) == Form::group) {
        m_groups[l] = groups_of(ly, m_shapes[op(l)]);
      }
    }
  }

  [[nodiscard]] std::size_t size() const { return m_graph.layers.size(); }
  [[nodiscard]] const LayerGraph& graph() const { return m_graph; }
  [[nodiscard]] const std::vector<std::vector<Index>>& shapes() const { return m_shapes; }
  [[nodiscard]] Index entries(std::size_t l) const { return m_entries[l]; }
  [[nodiscard]] bool owns(std::size_t l) const { return l == 0 || !is_view(layer(l)); }
  /// The window of a window layer.
  [[nodiscard]] const Window& window(std::size_t l) const { return m_window[l]; }

  /// The owning layer and entry that entry e of layer l is (a view's: its operand's).
  [[nodiscard]] std::pair<std::size_t, Index> resolve(std::size_t l, Index e) const {
    while (!owns(l)) {
      const auto [k, i] = view_source(m_graph, m_shapes, l, e);
      l = op(l, k);
      e = i;
    }
    return {l, e};
  }

  /// For each term of entry e of the owning layer l, in the unroller's order (the bias last;
  /// none for the input): f(operand k, entry i of that operand's tensor, parameter or -1,
  /// weight) or bias(channel, parameter, weight).
  template <class F, class B>
  void raw_terms(std::size_t l, Index e, const double* theta, const F& f, const B& bias) const {
    const Layer& ly = layer(l);
    const auto from = [&](std::size_t k, Index i, Index param, double w) {
      f(k, i, param, param >= 0 ? theta[param] : w);
    };
    const auto bias_of = [&](Index c) {
      if (ly.bias_offset >= 0) {
        bias(c, ly.bias_offset + c, theta[ly.bias_offset + c]);
      }
    };
    const auto view = [](auto...) {
      throw std::logic_error("EntryGraph::terms: a view has no terms of its own");
    };
    visit_kind(ly.kind, [&]<class K>(K) {
      K::map(Maps<void>{
          .input = [] {},
          .dense =
              [&] {
                const Index in = m_entries[op(l)];
                const Index w0 = ly.weight_offset + e * in;
                for (Index j = 0; j < in; ++j) {
                  f(0, j, w0 + j, theta[w0 + j]);
                }
                bias_of(e);
              },
          .window =
              [&] {
                const Window& w = m_window[l];
                conv_taps(ly, w, e, [&](Index i, Index p) { f(0, i, p, theta[p]); });
                bias_of(w.out_position(e).c);
              },
          .adjoint_window =
              [&] {
                const Window& w = m_window[l];
                adjoint_window_taps(ly, w, e, [&](Index i, Index p) { f(0, i, p, theta[p]); });
                bias_of(w.in_position(e).c);
              },
          .channel_affine =
              [&] {
                const Index c = e / (m_entries[l] / m_shapes[l][0]);
                from(0, e, ly.weight_offset + c, 0.0);
                bias_of(c);
              },
          .pool =
              [&](bool /*max*/) {
                const Window& w = m_window[l];
                const Position at = w.out_position(e);
                const double weight = pool_weight(ly, w, at.h, at.w);
                window_taps(w, e, [&](Index i) { f(0, i, -1, weight); });
              },
          .entrywise = [&] { f(0, e, -1, 1.0); },
          .scaled = [&] { from(0, e, -1, ly.factor); },
          .sum =
              [&](bool negate_last) {
                for (std::size_t k = 0; k < ly.inputs.size(); ++k) {
                  f(k, e, -1, negate_last && k + 1 == ly.inputs.size() ? -1.0 : 1.0);
                }
              },
          .concat = view,
          .reshape = view,
          .pick = view,
          .group = [&] { group_taps(m_groups[l], e, [&](Index i) { f(0, i, -1, 1.0); }); },
          .lerp =
              [&] {
                lerp_taps(m_lerp[l], e, [&](Index i, double weight) { f(0, i, -1, weight); });
              }});
    });
  }

  /// f(Term) for each term of entry e of the owning layer l (raw_terms, sources resolved).
  template <class F>
  void terms(std::size_t l, Index e, const double* theta, const F& f) const {
    raw_terms(
        l, e, theta,
        [&](std::size_t k, Index i, Index param, double w) {
          const auto [sl, se] = resolve(op(l, k), i);
          f(Term{static_cast<std::int32_t>(sl), false, se, param, w});
        },
        [&](Index c, Index param, double w) {
          f(Term{static_cast<std::int32_t>(l), true, c, param, w});
        });
  }

  [[nodiscard]] std::size_t op(std::size_t l, std::size_t k = 0) const {
    return static_cast<std::size_t>(layer(l).inputs[k]);
  }

  /// The owning layers that layer l's terms read (through views).
  [[nodiscard]] std::vector<std::size_t> sources(std::size_t l) const {
    std::vector<std::size_t> out;
    std::vector<std::size_t> todo(layer(l).inputs.size());
    for (std::size_t k = 0; k < todo.size(); ++k) {
      todo[k] = op(l, k);
    }
    while (!todo.empty()) {
      const std::size_t v = todo.back();
      todo.pop_back();
      if (owns(v)) {
        out.push_back(v);
        continue;
      }
      for (std::size_t k = 0; k < layer(v).inputs.size(); ++k) {
        todo.push_back(op(v, k));
      }
    }
    return out;
  }

 private:
  [[nodiscard]] const Layer& layer(std::size_t l) const { return m_graph.layers[l]; }

  const LayerGraph& m_graph;
  std::vector<std::vector<Index>> m_shapes;
  std::vector<Index> m_entries;
  std::vector<Window> m_window;
  std::vector<Lerp> m_lerp;
  std::vector<Groups> m_groups;
};

}  // namespace pathlift::detail
