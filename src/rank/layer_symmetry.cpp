// h_sym of a layer graph without unrolling (symmetry.hpp, docs/rank.md#layer-graphs).
//
// The log-scales live on the tensor entries (value points) of the layers that own theirs: an
// entry the unrolled DAG makes a node is that node; a pending sum its consumer absorbs (an
// activation, an add, sub's first operand, an output) is joined to it by an equality, which is
// what absorbing does to the constraints; views are their operands' entries. So the classes and
// constraints below are those of the unrolled DAG with the absorbed sums added as variables
// equal to their consumers: the same h_sym. Only live entries (those reaching an output) count.

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <span>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "pathlift/error.hpp"
#include "pathlift/limits.hpp"
#include "pathlift/symmetry.hpp"
#include "src/layers/layer_kinds.hpp"
#include "src/layers/layers_unroll.hpp"
#include "src/rank/detail/symmetry_layer_view.hpp"
#include "src/rank/detail/symmetry_system.hpp"

namespace pathlift {

namespace {

using detail::Channels;
using detail::Groups;
using detail::has_parameters;
using detail::k_no_entry;
using detail::k_split;
using detail::Lerp;
using detail::Maps;
using detail::ParamLayout;
using detail::ParamMaps;
using detail::SymmetryClasses;
using detail::Unroller;
using detail::visit_kind;
using detail::visit_param_kind;
using detail::Window;

class LayerSymmetry : private detail::SymmetryLayerView {
 public:
  /// `theta` empty: the symmetries of the graph; else of the graph without the edges of the
  /// zero parameters of theta (zeros_keep_the_entries() must hold).
  LayerSymmetry(const LayerGraph& graph, Unroller& plan, std::span<const double> theta = {})
      : SymmetryLayerView(graph, plan, theta),
        m_cls(plan.global_entries() + 1),
        m_pin(plan.global_entries()) {
    m_cls.pin(m_pin);
  }

  /// The classes of each parameter's edges (run() with `first` set records them).
  ParameterClasses parameter_classes(const EngineOptions& options) {
    detail::FirstEdges first(static_cast<std::size_t>(m_graph.num_params), {-1, -1});
    m_first_edges = &first;
    (void)run(options);
    m_first_edges = nullptr;
    return detail::parameter_classes_of(m_cls, first, m_rows);
  }

  /// The zero parameters with an edge between live entries: those some path crosses as its
  /// only zero edge (run() first).
  [[nodiscard]] Index single_zeros() const { return m_single_zero; }

  /// Whether the zeros of theta leave every entry of the plan on an input-to-output path of
  /// non-zero edges, so that the entries and their liveness stay the plan's: every zero is a
  /// bias (of any layer with parameters), a linear weight (each live output and
  /// each input feature keeping a non-zero weight) or a convolution weight; no parameter
  /// block is shared between layers; no fixed weight is 0 (a scale by 0); every live
  /// convolution entry reads at least one tap; and in a convolution with zero weights, every
  /// output entry is live and every (output channel, tap) and every (input channel, tap) keeps
  /// a non-zero weight within its group (so an entry that read, or was read by, a tap still
  /// does through a non-zero edge).
  bool zeros_keep_the_entries() {
    std::vector<std::uint8_t> allowed(static_cast<std::size_t>(m_graph.num_params), 0);
    for (std::size_t l = 1; l < m_graph.layers.size(); ++l) {
      const Layer& ly = layer(l);
      if (detail::form_of(ly.kind) == detail::Form::scaled && ly.factor == 0.0) {
        return false;
      }
      const auto [w, b] = block_sizes(l);
      std::fill_n(allowed.begin() + (b > 0 ? ly.bias_offset : 0), b, 1);
      if (detail::is_convolution(ly.kind)) {
        if (!every_entry_reads_a_tap(l)) {
          return false;
        }
        const bool zeros =
            std::find(m_theta.begin() + ly.weight_offset, m_theta.begin() + ly.weight_offset + w,
                      0.0) != m_theta.begin() + ly.weight_offset + w;
        if (zeros && !conv_zeros_keep_the_entries(l)) {
          return false;
        }
        std::fill_n(allowed.begin() + ly.weight_offset, w, 1);
      }
      if (detail::form_of(ly.kind) == detail::Form::dense && linear_zeros_keep_the_entries(l)) {
        std::fill_n(allowed.begin() + ly.weight_offset, w, 1);
      }
    }
    mark_shared_blocks();
    if (m_shared) {
      return false;
    }
    for (std::size_t k = 0; k < m_theta.size(); ++k) {
      if (m_theta[k] == 0.0 && allowed[k] == 0) {
        return false;
      }
    }
    return true;
  }

  SymmetryDimension run(const EngineOptions& options) {
    for (Index e = 0; e < entries(0); ++e) {
      m_cls.unite(at(0, e), m_pin);
    }
    for (const Index o : m_graph.outputs) {
      for (Index e = 0; e < entries(static_cast<std::size_t>(o)); ++e) {
        m_cls.unite(at(static_cast<std::size_t>(o), e), m_pin);
      }
    }
    for (std::size_t l = 1; l < m_graph.layers.size(); ++l) {
      if (m_plan.owns_entries(l)) {
        merge(l);
      }
    }
    m_roots.assign(m_graph.layers.size(), std::nullopt);
    m_shared = false;
    mark_shared_blocks();
    m_used.assign(static_cast<std::size_t>(m_graph.num_params), 0);
    for (std::size_t l = 1; l < m_graph.layers.size(); ++l) {
      if (m_plan.owns_entries(l)) {
        constrain(l);
      }
    }
    // The free classes: the roots of the live entries, pinned ones aside.
    std::vector<std::uint8_t> seen(static_cast<std::size_t>(m_cls.size()), 0);
    Index free_classes = 0;
    for (Index g = 0; g < m_plan.global_entries(); ++g) {
      if (!m_plan.is_live(g)) {
        continue;
      }
      const Index r = m_cls.find(g);
      if (!m_cls.pinned(r) && seen[static_cast<std::size_t>(r)] == 0) {
        seen[static_cast<std::size_t>(r)] = 1;
        ++free_classes;
      }
    }
    const auto unused = static_cast<Index>(std::count(m_used.begin(), m_used.end(), 0));
    return detail::symmetry_dimension(free_classes, m_rows, unused, options);
  }

 private:
  /// Whether parameter k has its edges (theta empty, or theta_k != 0).
  [[nodiscard]] bool has_edges(Index k) const {
    return m_theta.empty() || m_theta[static_cast<std::size_t>(k)] != 0.0;
  }

  /// Joins the live entries of channel c of layer l into one class.
  void unite_channel(std::size_t l, Index c) {
    const Channels ch = channels(l);
    Index first = -1;
    for (Index e = c * ch.size; e < (c + 1) * ch.size; ++e) {
      if (live(l, e)) {
        first < 0 ? void(first = at(l, e)) : void(m_cls.unite(first, at(l, e)));
      }
    }
  }

  /// The root of each channel of layer l: k_split or k_no_entry when it has none. Computed
  /// once the merges are done (constrain), or afresh during them (fresh = true).
  const std::vector<Index>& channel_roots(std::size_t l, bool fresh = false) {
    if (!fresh && m_roots[l]) {
      return *m_roots[l];
    }
    const Channels ch = channels(l);
    std::vector<Index> roots(static_cast<std::size_t>(ch.count), k_no_entry);
    for (Index c = 0; c < ch.count; ++c) {
      Index& r = roots[static_cast<std::size_t>(c)];
      for (Index e = c * ch.size; e < (c + 1) * ch.size && r != k_split; ++e) {
        if (live(l, e)) {
          const Index x = m_cls.find(at(l, e));
          r = r == k_no_entry || r == x ? x : k_split;
        }
      }
    }
    if (fresh) {
      m_scratch = std::move(roots);
      return m_scratch;
    }
    m_roots[l] = std::move(roots);
    return *m_roots[l];
  }

  /// The forced equalities layer l adds.
  void merge(std::size_t l) {
    const Layer& ly = layer(l);
    // Fixed edges, or a pending sum absorbed: the value equals each operand's.
    const auto operands = [&](auto...) {
      for (Index e = 0; e < entries(l); ++e) {
        if (live(l, e)) {
          for (std::size_t k = 0; k < ly.inputs.size(); ++k) {
            m_cls.unite(at(l, e), at(op(l, k), e));
          }
        }
      }
    };
    const auto none = [](auto...) {};  // views, and one edge per weight and per bias
    visit_kind(ly.kind, [&]<class K>(K) {
      K::map(Maps<void>{.input = none,
                        .dense = none,
                        .window = [&] { merge_conv(l); },
                        .adjoint_window = [&] { merge_conv(l); },
                        .channel_affine =
                            [&] {
                              const std::vector<Index>& in = channel_roots(op(l), true);
                              for (Index c = 0; c < channels(l).count; ++c) {
                                // b: edges from the bias node (pinned); a: from a channel that is
                                // one class.
                                if ((ly.bias_offset >= 0 && has_edges(ly.bias_offset + c)) ||
                                    in[static_cast<std::size_t>(c)] >= 0) {
                                  unite_channel(l, c);
                                }
                              }
                            },
                        .pool = [&](bool /*max*/) { merge_pool(l); },
                        .entrywise = operands,
                        .scaled = operands,
                        .sum = operands,
                        .concat = none,
                        .reshape = none,
                        .pick = none,
                        .group = [&] { merge_group(l); },
                        .lerp = [&] { merge_lerp(l); }});
    });
  }

  void merge_pool(std::size_t l) {
    const Window& w = m_plan.window(l);
    for (Index c = 0; c < w.channels_out; ++c) {
      for (Index oh = 0; oh < w.h.out; ++oh) {
        for (Index ow = 0; ow < w.w.out; ++ow) {
          const Index e = (c * w.h.out + oh) * w.w.out + ow;
          if (!live(l, e)) {
            continue;
          }
          for (Index kh = w.h.first(oh); kh < w.h.last(oh); ++kh) {
            for (Index kw = w.w.first(ow); kw < w.w.last(ow); ++kw) {
              const Index i = (c * w.h.in + w.h.input(oh, kh)) * w.w.in + w.w.input(ow, kw);
              m_cls.unite(at(l, e), at(op(l), i));
            }
          }
        }
      }
    }
  }

  /// An order statistic of a group: every entry of the group is rescaled with it.
  void merge_group(std::size_t l) {
    const Groups& g = m_plan.groups(l);
    for (Index e = 0; e < entries(l); ++e) {
      if (!live(l, e)) {
        continue;
      }
      const Index p = e % g.positions;
      const Index c0 = g.first_channel(e / g.positions);
      for (Index c = c0; c < c0 + g.size; ++c) {
        m_cls.unite(at(l, e), at(op(l), c * g.positions + p));
      }
    }
  }

  /// Fixed edges from the taps: the entry's value is their weighted sum.
  void merge_lerp(std::size_t l) {
    const Lerp& t = m_plan.lerp(l);
    const Index n_in = t.h_in * t.w_in;
    const Index n_out = t.h_out() * t.w_out();
    for (Index e = 0; e < entries(l); ++e) {
      if (live(l, e)) {
        const Index c = e / n_out;
        const Index o = e % n_out;
        t.for_taps(o / t.w_out(), o % t.w_out(),
                   [&](Index i, double) { m_cls.unite(at(l, e), at(op(l), c * n_in + i)); });
      }
    }
  }

  void merge_conv(std::size_t l) {
    const Layer& ly = layer(l);
    const Window& w = m_plan.window(l);
    const ParamLayout c = layout(l);
    const std::vector<Index> in = channel_roots(op(l), true);
    for (Index co = 0; co < c.out; ++co) {
      if (ly.bias_offset >= 0 && has_edges(ly.bias_offset + co)) {
        // edges of one bias from the bias node (pinned)
        unite_channel(l, co);
        continue;
      }
      // The edges of weight (co, ci, tap) from a channel ci that is one class: their targets
      // are one class.
      const Index ci0 = c.group_in(co);
      for (Index kh = 0; kh < w.h.kernel; ++kh) {
        for (Index kw = 0; kw < w.w.kernel; ++kw) {
          Index ci = -1;
          for (Index i = ci0; i < ci0 + c.in_group && ci < 0; ++i) {
            const bool edges = has_edges(ly.weight_offset + c.weight(co, i, kh * w.w.kernel + kw));
            ci = edges && in[static_cast<std::size_t>(i)] >= 0 ? i : -1;
          }
          if (ci < 0) {
            continue;
          }
          Index first = -1;
          for_tap(l, c, co, ci, kh, kw, [&](Index e, Index) {
            first < 0 ? void(first = at(l, e)) : void(m_cls.unite(first, at(l, e)));
          });
        }
      }
    }
  }

  /// Parameter blocks that overlap another layer's (weights shared between layers).
  void mark_shared_blocks() {
    std::vector<std::pair<Index, Index>> blocks;  // [begin, end)
    for (std::size_t l = 1; l < m_graph.layers.size(); ++l) {
      const auto [w, b] = block_sizes(l);
      if (w > 0) {
        blocks.emplace_back(layer(l).weight_offset, layer(l).weight_offset + w);
      }
      if (b > 0) {
        blocks.emplace_back(layer(l).bias_offset, layer(l).bias_offset + b);
      }
    }
    std::sort(blocks.begin(), blocks.end());
    for (std::size_t i = 1; i < blocks.size(); ++i) {
      m_shared = m_shared || blocks[i].first < blocks[i - 1].second;
    }
  }

  /// One edge-class pair (t, s) of parameter k: k is used, and every pair of k after its first
  /// is a constraint against the first.
  void pair(Index k, Index t, Index s) {
    m_used[static_cast<std::size_t>(k)] = 1;
    if (m_first_edges != nullptr && (*m_first_edges)[static_cast<std::size_t>(k)].first < 0) {
      (*m_first_edges)[static_cast<std::size_t>(k)] = {static_cast<std::int32_t>(t),
                                                       static_cast<std::int32_t>(s)};
    }
    if (m_shared) {
      const auto [it, fresh] = m_first.try_emplace(k, t, s);
      if (!fresh) {
        m_rows.add(m_cls, t, s, it->second.first, it->second.second);
      }
      return;
    }
    if (k != m_current) {
      m_current = k;
      m_current_pair = {t, s};
      return;
    }
    m_rows.add(m_cls, t, s, m_current_pair.first, m_current_pair.second);
  }

  /// A bias of one edge (linear).
  void bias_pair(Index k, Index t, Index pin) {
    if (!has_edges(k)) {
      m_single_zero += 1;
      return;
    }
    pair(k, t, pin);
  }

  /// The parameters of layer l: which are used, and the constraints among their edges.
  void constrain(std::size_t l) {
    const Layer& ly = layer(l);
    if (!has_parameters(ly)) {
      return;
    }
    const Index pin = m_cls.find(m_pin);
    visit_param_kind(ly, "constrain", [&]<class K>(K) {
      K::map(ParamMaps<void>{
          .dense =
              [&] {
                const Index f = entries(op(l));
                std::vector<Index> src(static_cast<std::size_t>(f));
                for (Index j = 0; j < f; ++j) {
                  src[static_cast<std::size_t>(j)] = m_cls.find(at(op(l), j));
                }
                for (Index o = 0; o < ly.out_features; ++o) {
                  if (!live(l, o)) {
                    continue;
                  }
                  const Index t = m_cls.find(at(l, o));
                  for (Index j = 0; j < f; ++j) {
                    if (has_edges(ly.weight_offset + o * f + j)) {
                      pair(ly.weight_offset + o * f + j, t, src[static_cast<std::size_t>(j)]);
                    } else {
                      m_single_zero += 1;  // its one edge joins two live entries
                    }
                  }
                  if (ly.bias_offset >= 0) {
                    bias_pair(ly.bias_offset + o, t, pin);
                  }
                }
              },
          .window = [&] { constrain_conv(l, pin); },
          .adjoint_window = [&] { constrain_conv(l, pin); },
          .channel_affine =
              [&] {
                const std::vector<Index>& out = channel_roots(l);
                const std::vector<Index>& in = channel_roots(op(l));
                const Channels ch = channels(l);
                for (Index c = 0; c < ch.count; ++c) {
                  const Index t = out[static_cast<std::size_t>(c)];
                  const Index s = in[static_cast<std::size_t>(c)];
                  if (t == k_no_entry) {
                    continue;
                  }
                  if (t >= 0 && s >= 0) {
                    pair(ly.weight_offset + c, t, s);
                  } else {
                    for (Index e = c * ch.size; e < (c + 1) * ch.size; ++e) {
                      if (live(l, e)) {
                        pair(ly.weight_offset + c, m_cls.find(at(l, e)), m_cls.find(at(op(l), e)));
                      }
                    }
                  }
                  if (ly.bias_offset >= 0) {
                    bias_pairs(l, c, ly.bias_offset + c, t, pin);
                  }
                }
              }});
    });
  }

  /// The edges of bias k into channel c of layer l (root t of the channel, or k_split).
  void bias_pairs(std::size_t l, Index c, Index k, Index t, Index pin) {
    if (!has_edges(k)) {
      m_single_zero += 1;  // the channel has a live entry: its zero bias is crossed alone
      return;
    }
    if (t >= 0) {
      pair(k, t, pin);
      return;
    }
    const Channels ch = channels(l);
    for (Index e = c * ch.size; e < (c + 1) * ch.size; ++e) {
      if (live(l, e)) {
        pair(k, m_cls.find(at(l, e)), pin);
      }
    }
  }

  void constrain_conv(std::size_t l, Index pin) {
    const Layer& ly = layer(l);
    const Window& w = m_plan.window(l);
    const ParamLayout c = layout(l);
    const std::vector<Index>& out = channel_roots(l);
    const std::vector<Index>& in = channel_roots(op(l));
    const Index taps = w.h.kernel * w.w.kernel;
    for (Index co = 0; co < c.out; ++co) {
      const Index t = out[static_cast<std::size_t>(co)];
      if (t == k_no_entry) {
        continue;
      }
      const Index ci0 = c.group_in(co);
      // Which taps have an edge into this channel (the same for every input channel).
      std::vector<std::uint8_t> tap_used(static_cast<std::size_t>(taps), 0);
      for (Index kh = 0; kh < w.h.kernel; ++kh) {
        for (Index kw = 0; kw < w.w.kernel; ++kw) {
          bool any = false;
          for_tap(l, c, co, ci0, kh, kw, [&](Index, Index) { any = true; });
          tap_used[static_cast<std::size_t>(kh * w.w.kernel + kw)] = any ? 1 : 0;
        }
      }
      for (Index ci = ci0; ci < ci0 + c.in_group; ++ci) {
        const Index s = in[static_cast<std::size_t>(ci)];
        for (Index tap = 0; tap < taps; ++tap) {
          if (tap_used[static_cast<std::size_t>(tap)] == 0) {
            continue;
          }
          const Index k = ly.weight_offset + c.weight(co, ci, tap);
          if (!has_edges(k)) {
            m_single_zero += 1;  // every entry is live: its edges' ends are on paths
            continue;
          }
          if (t >= 0 && s >= 0) {
            pair(k, t, s);
            continue;
          }
          for_tap(l, c, co, ci, tap / w.w.kernel, tap % w.w.kernel, [&](Index e, Index i) {
            pair(k, m_cls.find(at(l, e)), m_cls.find(at(op(l), i)));
          });
        }
      }
      if (ly.bias_offset >= 0) {
        bias_pairs(l, co, ly.bias_offset + co, t, pin);
      }
    }
  }

  Index m_single_zero = 0;
  detail::FirstEdges* m_first_edges = nullptr;
  SymmetryClasses m_cls;
  Index m_pin;
  std::vector<std::optional<std::vector<Index>>> m_roots;
  std::vector<Index> m_scratch;
  std::vector<std::uint8_t> m_used;
  detail::SymmetryConstraints m_rows;
  bool m_shared = false;
  std::unordered_map<Index, std::pair<Index, Index>> m_first;
  Index m_current = -1;
  std::pair<Index, Index> m_current_pair;
};

}  // namespace

SymmetryDimension rescaling_symmetry_dimension(const LayerGraph& graph,
                                               const EngineOptions& options) {
  Unroller plan(graph, options);
  require_bytes(
      5.0 * static_cast<double>(plan.global_entries()), options.max_memory,
      fmt::format("the rescaling symmetries' classes of {} tensor entries", plan.global_entries()));
  return LayerSymmetry(graph, plan).run(options);
}

std::optional<ZeroPatternRank> jacobian_rank_by_zero_pattern(const LayerGraph& graph,
                                                             std::span<const double> theta,
                                                             const EngineOptions& options) {
  if (static_cast<Index>(theta.size()) != graph.num_params) {
    throw std::invalid_argument(fmt::format(
        "jacobian_rank_by_zero_pattern: theta has {} entries, the layer graph {} parameters",
        theta.size(), graph.num_params));
  }
  Unroller plan(graph, options);
  require_bytes(
      5.0 * static_cast<double>(plan.global_entries()), options.max_memory,
      fmt::format("the rescaling symmetries' classes of {} tensor entries", plan.global_entries()));
  LayerSymmetry sym(graph, plan, theta);
  if (!sym.zeros_keep_the_entries()) {
    return std::nullopt;
  }
  ZeroPatternRank out;
  out.h_sym_nonzero = sym.run(options).h_sym;
  out.zero_params = static_cast<Index>(std::count(theta.begin(), theta.end(), 0.0));
  out.single_zero_params = sym.single_zeros();
  out.rank = graph.num_params - out.h_sym_nonzero + out.single_zero_params;
  return out;
}

ParameterClasses parameter_classes(const LayerGraph& graph, const EngineOptions& options) {
  Unroller plan(graph, options);
  require_bytes(5.0 * static_cast<double>(plan.global_entries()) +
                    16.0 * static_cast<double>(graph.num_params),
                options.max_memory,
                fmt::format("the rescaling classes of {} tensor entries and {} parameters",
                            plan.global_entries(), graph.num_params));
  return LayerSymmetry(graph, plan).parameter_classes(options);
}

ParameterClasses parameter_classes(const Model& model, const EngineOptions& options) {
  if (const LayerGraph* g = model.layer_graph()) {
    return parameter_classes(*g, options);
  }
  return parameter_classes(*model.dag(), options);
}

SymmetryDimension rescaling_symmetry_dimension(const Model& model, const EngineOptions& options) {
  if (const LayerGraph* g = model.layer_graph()) {
    return rescaling_symmetry_dimension(*g, options);
  }
  return rescaling_symmetry_dimension(*model.dag(), options);
}

Index unrolled_hidden_nodes(const LayerGraph& graph, const EngineOptions& options) {
  const Unroller plan(graph, options);
  const auto nodes = plan.node_entries();
  Index h = 0;
  for (std::size_t l = 1; l < nodes.size(); ++l) {
    h += static_cast<Index>(std::count(nodes[l].begin(), nodes[l].end(), 1));
  }
  return h;
}

}  // namespace pathlift
