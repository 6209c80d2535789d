// The unroller's plan (layers_unroll.hpp): the layout of the entries, which of them reach an
// output, how many consumers each has and whether one needs its value; node names.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

#include "pathlift/error.hpp"
#include "pathlift/limits.hpp"
#include "src/layers/layers_unroll.hpp"

namespace pathlift::detail {

namespace {

double product(const std::vector<Index>& shape) {
  double n = 1;
  for (const Index x : shape) {
    n *= static_cast<double>(x);
  }
  return n;
}

/// At most how many terms an entry's sum has besides its bias (operand 0 of shape `in`): the
/// bounds checked before anything is allocated.
struct MaxTerms {
  const Layer& ly;
  const std::vector<Index>& in;

  [[nodiscard]] double input() const { return 0; }  // never a term
  [[nodiscard]] double dense() const { return product(in); }
  [[nodiscard]] double window() const {
    const Window w = window_of(ly, in);
    return window_length(w.h) * window_length(w.w) * static_cast<double>(w.channels_in / w.groups);
  }
  [[nodiscard]] double adjoint_window() const {
    // Per input channel of its group, at most one term per tap.
    const Window w = window_of(ly, in);
    return static_cast<double>(w.h.kernel) * static_cast<double>(w.w.kernel) *
           static_cast<double>(w.channels_out / w.groups);
  }
  [[nodiscard]] double channel_affine() const { return 1; }
  [[nodiscard]] double pool(bool /*max*/) const {
    const Window w = window_of(ly, in);
    return window_length(w.h) * window_length(w.w);
  }
  // A fixed edge from its operand's node, or its operand's terms.
  [[nodiscard]] double entrywise() const { return 1; }
  [[nodiscard]] double scaled() const { return 1; }
  [[nodiscard]] double sum(bool /*negate_last*/) const {
    return static_cast<double>(ly.inputs.size());
  }
  // Views: no term.
  [[nodiscard]] double concat() const { return 0; }
  [[nodiscard]] double reshape() const { return 0; }
  [[nodiscard]] double pick() const { return 0; }
  [[nodiscard]] double group() const { return static_cast<double>(ly.group_size); }
  [[nodiscard]] double lerp() const { return 4; }  // two taps per axis
};

}  // namespace

UnrollBounds unroll_bounds(const LayerGraph& graph, const std::vector<std::vector<Index>>& shapes) {
  // Every edge is a term of an entry's sum (a parameter, a bias or a fixed pooling weight: each
  // entry's terms are written once, into its own node or into its one consumer), or a fixed
  // edge 1 from an operand's node into a consumer: per entry at most `terms` below.
  UnrollBounds b;
  const std::size_t n = graph.layers.size();
  const auto layers = static_cast<double>(n);
  std::vector<double> blocks(n, 1);  // >= the term blocks of an entry (<= the layers)
  double largest_batch = 0;          // bytes of one layer's batch temporaries
  for (std::size_t l = 0; l < n; ++l) {
    const Layer& ly = graph.layers[l];
    const double entries = product(shapes[l]);
    b.entries += entries;
    if (l == 0) {
      b.max_nodes += entries;
      b.plan_bytes += 11 * entries;
      continue;
    }
    const auto operand = [&](std::size_t k) { return static_cast<std::size_t>(ly.inputs[k]); };
    blocks[l] = std::min(term_blocks<double>(ly, [&](std::size_t k) { return blocks[operand(k)]; }),
                         layers);
    if (is_view(ly)) {
      b.plan_bytes += 8 * entries;  // its references
      continue;
    }
    double terms = visit_kind(ly.kind, [&]<class K>(K) {
      return K::map(MaxTerms{ly, shapes[operand(0)]});
    });
    if (has_bias(ly)) {
      terms += 1;
    }
    const bool reads_values = reads_node_values(ly.kind);
    b.max_edges += entries * terms;
    b.max_nodes += entries + (has_bias(ly) ? 1 : 0);
    // live, uses, value use, owner, node (per entry); the operand's nodes of a layer that
    // reads values; node_entries' flags; the relu flag of a node.
    b.plan_bytes += 12 * entries + 1 + (reads_values ? 4 * product(shapes[operand(0)]) : 0);
    // The batch of a layer's new nodes: per node its job, its node and a count per block; the
    // window mask of its input.
    largest_batch = std::max(largest_batch, entries * (12 + 8 * blocks[l]) +
                                                (reads_values ? product(shapes[operand(0)]) : 0));
  }
  double outputs = 0;
  double output_blocks = 1;
  for (const Index o : graph.outputs) {
    outputs += product(shapes[static_cast<std::size_t>(o)]);
    output_blocks = std::max(output_blocks, blocks[static_cast<std::size_t>(o)]);
  }
  b.max_nodes += outputs;
  b.max_edges += outputs;
  b.plan_bytes += outputs + std::max(largest_batch, outputs * (12 + 8 * output_blocks));
  return b;
}

std::string unroll_description(const LayerGraph& graph, const UnrollBounds& bounds) {
  return fmt::format(
      "unrolling the layer graph ({} layers, {:.4g} tensor entries: up to {:.4g} nodes and {:.4g} "
      "edges)",
      graph.layers.size(), bounds.entries, bounds.max_nodes, bounds.max_edges);
}

Unroller::Unroller(const LayerGraph& graph, const EngineOptions& options)
    : m_graph(graph), m_shapes(layer_shapes(graph)), m_bounds(unroll_bounds(graph, m_shapes)) {
  if (m_bounds.max_nodes > static_cast<double>(std::numeric_limits<NodeId>::max())) {
    throw TooLarge(
        fmt::format("{}: more nodes than a network holds ({})", unroll_description(graph, m_bounds),
                    std::numeric_limits<NodeId>::max()),
        TooLarge::Reason::too_many_paths);
  }
  require_bytes(m_bounds.plan_bytes, options.max_memory,
                fmt::format("{}: its plan", unroll_description(graph, m_bounds)));
  layout();
  plan();
}

void Unroller::layout() {
  const std::size_t n = m_graph.layers.size();
  m_entries.assign(n, 0);
  m_base.assign(n, -1);
  m_refs.resize(n);
  m_window.resize(n);
  m_lerp.resize(n);
  m_groups.resize(n);
  Index total = 0;
  for (std::size_t l = 0; l < n; ++l) {
    Index entries = 1;
    for (const Index x : m_shapes[l]) {
      entries *= x;
    }
    m_entries[l] = entries;
    const Layer& ly = layer(l);
    if (l > 0 && is_window(ly.kind)) {
      m_window[l] = detail::window_of(ly, m_shapes[op(l)]);
    }
    if (l > 0 && form_of(ly.kind) == Form::lerp) {
      m_lerp[l] = detail::lerp_of(ly, m_shapes[op(l)]);
    }
    if (l > 0 && form_of(ly.kind) == Form::group) {
      m_groups[l] = detail::groups_of(ly, m_shapes[op(l)]);
    }
    if (!is_view(ly)) {
      m_base[l] = total;
      total += entries;
      continue;
    }
    std::vector<Index>& refs = m_refs[l];
    refs.resize(static_cast<std::size_t>(entries));
    for (Index e = 0; e < entries; ++e) {
      const auto [k, i] = view_source(m_graph, m_shapes, l, e);
      refs[static_cast<std::size_t>(e)] = ref(op(l, k), i);
    }
  }
  m_live.assign(static_cast<std::size_t>(total), 0);
  m_uses.assign(static_cast<std::size_t>(total), 0);
  m_value_use.assign(static_cast<std::size_t>(total), 0);
  m_owner.resize(static_cast<std::size_t>(total));
  for (std::size_t l = 0; l < n; ++l) {
    if (m_base[l] >= 0) {
      std::fill_n(m_owner.begin() + m_base[l], m_entries[l], static_cast<std::int32_t>(l));
    }
  }
}

void Unroller::mark_entrywise(std::size_t l, std::size_t k, bool value) {
  for (Index e = 0; e < m_entries[l]; ++e) {
    if (live(l, e)) {
      mark(ref(op(l, k), e), value);
    }
  }
}

void Unroller::mark_dense(std::size_t l) {
  for (Index e = 0; e < m_entries[op(l)]; ++e) {
    mark(ref(op(l), e), true);
  }
}

void Unroller::mark_window(std::size_t l, bool conv) {
  const Window& w = m_window[l];
  const Index hw_in = w.h.in * w.w.in;
  const Index hw_out = w.h.out * w.w.out;
  // conv: one spatial mask per group (every input channel of the group is read); pools: one
  // per channel. A window is read when some output channel of its mask is live at its position.
  const Index masks = conv ? w.groups : w.channels_in;
  const Index per_mask = w.channels_out / masks;
  const Index per_group = w.channels_in / masks;
  std::vector<std::uint8_t> position(static_cast<std::size_t>(hw_out));
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(hw_in));
  for (Index g = 0; g < masks; ++g) {
    std::fill(position.begin(), position.end(), 0);
    for (Index c = g * per_mask; c < (g + 1) * per_mask; ++c) {
      const std::uint8_t* alive = m_live.data() + m_base[l] + c * hw_out;
      for (Index p = 0; p < hw_out; ++p) {
        position[static_cast<std::size_t>(p)] |= alive[p];
      }
    }
    std::fill(mask.begin(), mask.end(), 0);
    for (Index oh = 0; oh < w.h.out; ++oh) {
      for (Index ow = 0; ow < w.w.out; ++ow) {
        if (position[static_cast<std::size_t>(oh * w.w.out + ow)] == 0) {
          continue;
        }
        for (Index kh = w.h.first(oh); kh < w.h.last(oh); ++kh) {
          const Index ih = w.h.input(oh, kh);
          for (Index kw = w.w.first(ow); kw < w.w.last(ow); ++kw) {
            mask[static_cast<std::size_t>(ih * w.w.in + w.w.input(ow, kw))] = 1;
          }
        }
      }
    }
    for (Index c = g * per_group; c < (g + 1) * per_group; ++c) {
      for (Index p = 0; p < hw_in; ++p) {
        if (mask[static_cast<std::size_t>(p)] != 0) {
          mark(ref(op(l), c * hw_in + p), true);
        }
      }
    }
  }
}

void Unroller::mark_groups(std::size_t l) {
  const Groups& g = m_groups[l];
  for (Index c0 = 0; c0 < g.channels; c0 += g.size) {
    for (Index p = 0; p < g.positions; ++p) {
      bool alive = false;
      for (Index c = c0; c < c0 + g.size && !alive; ++c) {
        alive = live(l, c * g.positions + p);
      }
      for (Index c = c0; c < c0 + g.size && alive; ++c) {
        mark(ref(op(l), c * g.positions + p), true);
      }
    }
  }
}

void Unroller::mark_lerp(std::size_t l) {
  const Lerp& t = m_lerp[l];
  const Index n_in = t.h_in * t.w_in;
  const Index n_out = t.h_out() * t.w_out();
  for (Index c = 0; c < t.channels; ++c) {
    for (Index oh = 0; oh < t.h_out(); ++oh) {
      for (Index ow = 0; ow < t.w_out(); ++ow) {
        if (live(l, c * n_out + oh * t.w_out() + ow)) {
          t.for_taps(oh, ow, [&](Index i, double) { mark(ref(op(l), c * n_in + i), true); });
        }
      }
    }
  }
}

void Unroller::mark_adjoint_window(std::size_t l) {
  // The adjoint convolution's input is this layer's output: an input entry (an adjoint output)
  // is read when a live output of its group is a position it reaches.
  const Window& w = m_window[l];
  const Index hw_in = w.h.out * w.w.out;  // this layer's input positions
  const Index hw_out = w.h.in * w.w.in;   // its output positions
  const Index per_group_out = w.channels_in / w.groups;
  const Index per_group_in = w.channels_out / w.groups;
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(hw_in));
  for (Index g = 0; g < w.groups; ++g) {
    std::fill(mask.begin(), mask.end(), 0);
    for (Index p = 0; p < hw_out; ++p) {
      bool alive = false;
      for (Index c = g * per_group_out; c < (g + 1) * per_group_out && !alive; ++c) {
        alive = live(l, c * hw_out + p);
      }
      if (!alive) {
        continue;
      }
      w.h.readers(p / w.w.in, [&](Index ih, Index) {
        w.w.readers(p % w.w.in, [&](Index iw, Index) {
          mask[static_cast<std::size_t>(ih * w.w.out + iw)] = 1;
        });
      });
    }
    for (Index c = g * per_group_in; c < (g + 1) * per_group_in; ++c) {
      for (Index p = 0; p < hw_in; ++p) {
        if (mask[static_cast<std::size_t>(p)] != 0) {
          mark(ref(op(l), c * hw_in + p), true);
        }
      }
    }
  }
}

/// Marks the operand entries the live entries of layer l read.
struct MarkOperands {
  Unroller& u;
  std::size_t l;

  void input() const {}
  void dense() const { u.mark_dense(l); }
  void window() const { u.mark_window(l, true); }
  void adjoint_window() const { u.mark_adjoint_window(l); }
  void channel_affine() const { u.mark_entrywise(l, 0, true); }
  void pool(bool /*max*/) const { u.mark_window(l, false); }
  void entrywise() const { u.mark_entrywise(l, 0, false); }
  void scaled() const { u.mark_entrywise(l, 0, true); }
  void sum(bool negate_last) const {
    for (std::size_t k = 0; k < u.operands(l); ++k) {
      u.mark_entrywise(l, k, negate_last && k + 1 == u.operands(l));
    }
  }
  // Views: their consumers read the entries they show.
  void concat() const {}
  void reshape() const {}
  void pick() const {}
  void group() const { u.mark_groups(l); }
  void lerp() const { u.mark_lerp(l); }
};

void Unroller::plan() {
  for (const Index o : m_graph.outputs) {
    for (Index e = 0; e < m_entries[static_cast<std::size_t>(o)]; ++e) {
      mark(ref(static_cast<std::size_t>(o), e), false);
    }
  }
  for (std::size_t l = m_graph.layers.size(); l-- > 1;) {
    if (m_base[l] < 0 ||
        std::none_of(m_live.begin() + m_base[l], m_live.begin() + m_base[l] + m_entries[l],
                     [](std::uint8_t x) { return x != 0; })) {
      continue;
    }
    visit_kind(layer(l).kind, [&]<class K>(K) { K::map(MarkOperands{*this, l}); });
  }
  // Blocks: how many term groups an entry's sum can have (the edges of a batch of new nodes
  // are ordered by block, then by node, then within the block).
  m_blocks.assign(m_graph.layers.size(), 1);
  m_own_blocks.assign(m_graph.layers.size(), 1);
  for (std::size_t l = 1; l < m_graph.layers.size(); ++l) {
    const Layer& ly = layer(l);
    const int b = term_blocks<int>(ly, [&](std::size_t k) { return m_blocks[op(l, k)]; });
    m_own_blocks[l] = b;
    // As seen by a consumer: one block (a fixed edge 1) when every entry is a node.
    m_blocks[l] = is_sum(ly.kind) && b > 1 && all_materialised(l) ? 1 : b;
  }
}

std::vector<std::vector<std::uint8_t>> Unroller::node_entries() const {
  std::vector<std::vector<std::uint8_t>> out(m_graph.layers.size());
  for (std::size_t l = 0; l < m_graph.layers.size(); ++l) {
    if (m_base[l] < 0) {
      continue;
    }
    const Layer& ly = layer(l);
    const bool sum = is_sum(ly.kind);
    // relu of a relu node is that node (run_layer): the node of an entry is a relu node
    // exactly when the entry belongs to a relu activation layer.
    const auto is_relu = [](const Layer& x) {
      return form_of(x.kind) == Form::entrywise && x.activation.kind == ActivationKind::relu;
    };
    const bool merges = is_relu(ly);
    std::vector<std::uint8_t>& flags = out[l];
    flags.resize(static_cast<std::size_t>(m_entries[l]));
    for (Index e = 0; e < m_entries[l]; ++e) {
      bool node = sum ? needs_node(m_base[l] + e) : live(l, e);
      if (node && merges) {
        node = !is_relu(
            layer(static_cast<std::size_t>(m_owner[static_cast<std::size_t>(ref(op(l), e))])));
      }
      flags[static_cast<std::size_t>(e)] = !live(l, e) ? 2 : node ? 1 : 0;
    }
  }
  return out;
}

bool Unroller::all_materialised(std::size_t l) const {
  for (Index e = 0; e < m_entries[l]; ++e) {
    if (live(l, e) && !needs_node(m_base[l] + e)) {
      return false;
    }
  }
  return true;
}

std::string Unroller::entry_name(std::string_view name, std::size_t l, Index e) const {
  fmt::memory_buffer buf;
  append_entry_name(buf, name, l, e);
  return {buf.data(), buf.size()};
}

void Unroller::append_entry_name(fmt::memory_buffer& buf, std::string_view name, std::size_t l,
                                 Index e) const {
  const std::vector<Index>& shape = m_shapes[l];
  Index index[3] = {0, 0, 0};
  for (std::size_t i = shape.size(); i-- > 0;) {
    index[i] = e % shape[i];
    e /= shape[i];
  }
  auto out = std::back_inserter(buf);
  out = fmt::format_to(out, "{}[{}", name, index[0]);
  for (std::size_t i = 1; i < shape.size(); ++i) {
    out = fmt::format_to(out, ",{}", index[i]);
  }
  buf.push_back(']');
}

}  // namespace pathlift::detail
