// unroll() and unrolled_size() of layers.hpp: the unroller's run (layers_unroll.hpp), which
// creates the nodes layer by layer and writes the edges of each batch of new nodes.

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <limits>

#include "pathlift/error.hpp"
#include "pathlift/layers.hpp"
#include "pathlift/limits.hpp"
#include "pathlift/options.hpp"
#include "src/core/huge_pages.hpp"
#include "src/core/parallel.hpp"
#include "src/layers/layers_unroll.hpp"

namespace pathlift {
namespace detail {

namespace {

// Bytes of the unrolled network per edge and per node, for the memory check: the spec's
// arrays (edge pair, parameter index, fixed weight) and the Network's own copies, adjacency
// and parameter index; per node a name and the Network's per-node arrays.
constexpr double k_bytes_per_edge = 72.0;
constexpr double k_bytes_per_node = 160.0;
// Batches of fewer edges are written on the calling thread.
constexpr Index k_parallel_edges = Index{1} << 18;

/// Counts the terms of one job, per block.
struct CountSink {
  static constexpr bool count_only = true;
  Index* counts;
  void term(int block, NodeId /*src*/, Index /*param*/, double /*weight*/) const {
    ++counts[block];
  }
  void bulk(int block, Index n) const { counts[block] += n; }
};

/// Writes the terms of one job as edges into `dst`, block b at cursor[b].
struct WriteSink {
  static constexpr bool count_only = false;
  Index* cursor;
  NodeId dst;
  std::pair<NodeId, NodeId>* edges;
  Index* params;
  double* fixed;
  void term(int block, NodeId src, Index param, double weight) const {
    const Index k = cursor[block]++;  // cursor: this node's own positions
    edges[k] = {src, dst};
    params[k] = param;
    fixed[k] = weight;
  }
  void bulk(int /*block*/, Index /*n*/) const {}
};

}  // namespace

/// The terms of entry e of layer l, into `sink` from term block `block` on, in the canonical
/// edge order (docs/layers.md#orders): one member per form of the kinds' maps.
template <class Sink>
struct Unroller::EntryTerms {
  const Unroller& u;
  std::size_t l;
  Index e;
  int block;
  Sink& sink;

  void input() const {}

  /// A weight per operand entry, then the bias.
  void dense() const {
    const auto f = static_cast<Index>(u.m_in_nodes[l].size());
    if constexpr (Sink::count_only) {
      sink.bulk(block, f);
    } else {
      const auto term = operand_term();
      const Index w0 = u.layer(l).weight_offset + e * f;
      for (Index j = 0; j < f; ++j) {
        term(j, w0 + j, 0.0);
      }
    }
    bias(e);
  }

  /// A convolution: its window's weights, then its bias.
  void window() const {
    const Window& w = u.m_window[l];
    const Position at = w.out_position(e);
    if constexpr (Sink::count_only) {
      sink.bulk(block, (w.channels_in / w.groups) * w.h.taps(at.h) * w.w.taps(at.w));
    } else {
      const auto term = operand_term();
      conv_taps(u.layer(l), w, e, [&](Index i, Index p) { term(i, p, 0.0); });
    }
    bias(at.c);
  }

  /// The terms of the window's outputs that read the entry, then its bias.
  void adjoint_window() const {
    const Window& w = u.m_window[l];  // the adjoint convolution: its input is this layer's output
    const Position at = w.in_position(e);
    if constexpr (Sink::count_only) {
      Index taps = 0;
      w.h.readers(at.h, [&](Index, Index) { w.w.readers(at.w, [&](Index, Index) { ++taps; }); });
      sink.bulk(block, (w.channels_out / w.groups) * taps);
    } else {
      const auto term = operand_term();
      adjoint_window_taps(u.layer(l), w, e, [&](Index i, Index p) { term(i, p, 0.0); });
    }
    bias(at.c);
  }

  /// Its channel's weight, then its bias.
  void channel_affine() const {
    const Index c = e / (u.m_entries[l] / u.m_shapes[l][0]);
    operand_term()(e, u.layer(l).weight_offset + c, 0.0);
    bias(c);
  }

  /// Fixed edges from the entry's window: 1 (a max node's operands) or the mean's weight.
  void pool(bool max) const {
    const Window& w = u.m_window[l];
    const auto [c, oh, ow] = w.out_position(e);
    if constexpr (Sink::count_only) {
      sink.bulk(block, (w.h.last(oh) - w.h.first(oh)) * (w.w.last(ow) - w.w.first(ow)));
    } else {
      const double weight = max ? 1.0 : pool_weight(u.layer(l), w, oh, ow);
      const auto term = operand_term();
      window_taps(w, e, [&](Index i) { term(i, kFixedEdge, weight); });
    }
  }

  // No terms of its own: an activation's node reads its operand's (run_layer); views show
  // other entries.
  void entrywise() const {}

  /// The operand's entry with the layer's fixed factor.
  void scaled() const { operand_term()(e, kFixedEdge, u.layer(l).factor); }

  /// The operands' entries, each in its own blocks (`negate_last`: the last one's node with
  /// weight -1, a difference).
  void sum(bool negate_last) const {
    const std::size_t n = u.operands(l) - (negate_last ? 1 : 0);
    int b = block;
    for (std::size_t k = 0; k < n; ++k) {
      u.emit_value(u.ref(u.op(l, k), e), b, sink);
      b += u.m_blocks[u.op(l, k)];
    }
    if (negate_last) {
      sink.term(b, u.m_node[static_cast<std::size_t>(u.ref(u.op(l, n), e))], kFixedEdge, -1.0);
    }
  }

  void concat() const {}
  void reshape() const {}
  void pick() const {}

  /// Fixed edges 1 from the entries of the entry's group.
  void group() const {
    const auto term = operand_term();
    group_taps(u.m_groups[l], e, [&](Index i) { term(i, kFixedEdge, 1.0); });
  }

  /// Fixed edges from the interpolation taps of the entry, by increasing input entry.
  void lerp() const {
    const auto term = operand_term();
    lerp_taps(u.m_lerp[l], e, [&](Index i, double weight) { term(i, kFixedEdge, weight); });
  }

 private:
  /// term(i, param, weight): the term from the node of operand entry i, in block `block`. It
  /// holds the sink and the block itself: read through `this`, they would be reloaded per
  /// kernel row, since the sink's writes may alias them.
  auto operand_term() const {
    return [&s = sink, b = block, &in = u.m_in_nodes[l]](Index i, Index param, double weight) {
      s.term(b, in[static_cast<std::size_t>(i)], param, weight);
    };
  }

  /// The bias term of parameter `index` of the layer's bias, in the block after `block`.
  void bias(Index index) const {
    const Index offset = u.layer(l).bias_offset;
    if (offset >= 0) {
      sink.term(block + 1, u.m_bias_node[l], offset + index, 0.0);
    }
  }
};

template <bool Emit, class Name>
NodeId Unroller::new_node(const Name& name, Activation act, bool hidden) {
  const auto v = static_cast<NodeId>(m_num_nodes++);
  m_node_relu.push_back(static_cast<std::uint8_t>(act.kind == ActivationKind::relu));
  if constexpr (Emit) {
    m_name.clear();
    name(m_name);
    m_spec.node_names.emplace_back(m_name.data(), m_name.size());
    if (hidden && act.kind != ActivationKind::relu) {
      m_spec.activations.emplace_back(v, act);
    }
  }
  return v;
}

template <bool Emit>
NodeId Unroller::new_entry_node(std::size_t l, Index e, Activation act) {
  return new_node<Emit>([&](fmt::memory_buffer& b) { append_entry_name(b, layer(l).name, l, e); },
                        act, true);
}

template <bool Emit>
void Unroller::run() {
  m_num_nodes = 0;
  m_num_edges = 0;
  m_node.assign(m_live.size(), -1);
  m_node_relu.clear();
  m_bias_node.assign(m_graph.layers.size(), -1);
  m_in_nodes.assign(m_graph.layers.size(), {});
  for (Index e = 0; e < m_entries[0]; ++e) {
    m_node[static_cast<std::size_t>(e)] =
        new_node<Emit>([&](fmt::memory_buffer& b) { append_entry_name(b, "x", 0, e); },
                       Activation::identity(), false);
    // An input entry no output depends on stays an input node with no edge (designated).
    if (Emit && !live(0, e)) {
      m_spec.inputs.push_back(m_node[static_cast<std::size_t>(e)]);
    }
  }
  for (std::size_t l = 1; l < m_graph.layers.size(); ++l) {
    if (Emit && m_progress) {
      m_progress("unrolling the layer graph",
                 static_cast<double>(l) / static_cast<double>(m_graph.layers.size()));
    }
    if (m_base[l] >= 0 &&
        std::any_of(m_live.begin() + m_base[l], m_live.begin() + m_base[l] + m_entries[l],
                    [](std::uint8_t x) { return x != 0; })) {
      run_layer<Emit>(l);
    }
  }
  // Outputs: y0.., one per output entry, absorbing pending sums.
  std::vector<Index> src;
  int blocks = 1;
  for (const Index o : m_graph.outputs) {
    const auto l = static_cast<std::size_t>(o);
    blocks = std::max(blocks, m_blocks[l]);
    for (Index e = 0; e < m_entries[l]; ++e) {
      src.push_back(ref(l, e));
    }
  }
  std::vector<NodeId> dst(src.size());
  for (std::size_t j = 0; j < src.size(); ++j) {
    dst[j] = new_node<Emit>(
        [&](fmt::memory_buffer& b) { fmt::format_to(std::back_inserter(b), "y{}", j); },
        Activation::identity(), false);
  }
  batch<Emit>(dst, blocks,
              [&](Index i, auto& sink) { emit_value(src[static_cast<std::size_t>(i)], 0, sink); });
}

template <bool Emit>
void Unroller::run_layer(std::size_t l) {
  const Layer& ly = layer(l);
  const Index base = m_base[l];
  if (reads_node_values(ly.kind)) {
    std::vector<NodeId>& in = m_in_nodes[l];
    in.resize(static_cast<std::size_t>(m_entries[op(l)]));
    for (Index e = 0; e < m_entries[op(l)]; ++e) {
      in[static_cast<std::size_t>(e)] = m_node[static_cast<std::size_t>(ref(op(l), e))];
    }
  }
  if (has_bias(ly)) {
    m_bias_node[l] = new_node<Emit>(
        [&](fmt::memory_buffer& b) { fmt::format_to(std::back_inserter(b), "{}.bias", ly.name); },
        Activation::identity(), false);
    if constexpr (Emit) {
      m_spec.bias.push_back(m_bias_node[l]);
    }
  }
  std::vector<Index> jobs;
  std::vector<NodeId> dst;
  if (is_sum(ly.kind)) {
    // Pending sums that must be nodes become identity nodes now.
    for (Index e = 0; e < m_entries[l]; ++e) {
      if (needs_node(base + e)) {
        jobs.push_back(base + e);
        dst.push_back(new_entry_node<Emit>(l, e, Activation::identity()));
      }
    }
    batch<Emit>(dst, m_own_blocks[l], [&](Index i, auto& sink) {
      emit_pending(jobs[static_cast<std::size_t>(i)], 0, sink);
    });
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      m_node[static_cast<std::size_t>(jobs[i])] = dst[i];
    }
    return;
  }
  if (makes_max_nodes(ly.kind)) {
    const bool group = form_of(ly.kind) == Form::group;
    for (Index e = 0; e < m_entries[l]; ++e) {
      if (live(l, e)) {
        const Groups& g = m_groups[l];
        const Index k = group ? g.order(e / g.positions, ly.descending) : window_order(ly);
        jobs.push_back(e);
        dst.push_back(new_entry_node<Emit>(l, e, Activation::max(k)));
        m_node[static_cast<std::size_t>(base + e)] = dst.back();
      }
    }
    batch<Emit>(dst, 1, [&](Index i, auto& sink) {
      visit_kind(ly.kind, [&]<class K>(K) {
        K::map(EntryTerms<std::remove_reference_t<decltype(sink)>>{
            *this, l, jobs[static_cast<std::size_t>(i)], 0, sink});
      });
    });
    return;
  }
  // An activation (not identity): a node per live entry, absorbing a pending sum or fed by
  // a fixed edge 1 from a node; relu of a relu node is that node.
  const bool relu = ly.activation.kind == ActivationKind::relu;
  for (Index e = 0; e < m_entries[l]; ++e) {
    if (!live(l, e)) {
      continue;
    }
    const Index g = ref(op(l), e);
    const NodeId src = m_node[static_cast<std::size_t>(g)];
    if (src >= 0 && relu && m_node_relu[static_cast<std::size_t>(src)] != 0) {
      m_node[static_cast<std::size_t>(base + e)] = src;
      continue;
    }
    jobs.push_back(g);
    dst.push_back(new_entry_node<Emit>(l, e, ly.activation));
    m_node[static_cast<std::size_t>(base + e)] = dst.back();
  }
  batch<Emit>(dst, m_blocks[op(l)],
              [&](Index i, auto& sink) { emit_value(jobs[static_cast<std::size_t>(i)], 0, sink); });
}

template <bool Emit, class Gen>
void Unroller::batch(const std::vector<NodeId>& dst, int blocks, const Gen& gen) {
  const auto n = dst.size();
  if (n == 0) {
    return;
  }
  const auto b = static_cast<std::size_t>(blocks);
  // Counting costs O(1) per node (window sizes, not taps), so it runs on this thread.
  std::vector<Index> counts(n * b, 0);
  for (std::size_t i = 0; i < n; ++i) {
    CountSink sink{counts.data() + i * b};
    gen(static_cast<Index>(i), sink);
  }
  // Block-major positions: counts become the first edge of each (node, block).
  Index pos = m_num_edges;
  for (std::size_t k = 0; k < b; ++k) {
    for (std::size_t i = 0; i < n; ++i) {
      const Index c = counts[i * b + k];
      counts[i * b + k] = pos;
      pos += c;
    }
  }
  if constexpr (Emit) {
    auto* edges = m_spec.edges.data();
    auto* params = m_spec.edge_params.data();
    auto* fixed = m_spec.fixed_weights.data();
    // Threads only for large batches: a parallel region costs more than a small one.
    const bool parallel = pos - m_num_edges >= k_parallel_edges && m_threads > 1;
    detail::run_team(m_threads, parallel, [&] {
#pragma omp for schedule(static)
      for (std::size_t i = 0; i < n; ++i) {
        const WriteSink sink{counts.data() + i * b, dst[i], edges, params, fixed};
        gen(static_cast<Index>(i), sink);
      }
    });
  }
  m_num_edges = pos;
}

template <class Sink>
void Unroller::emit_value(Index g, int block, Sink& sink) const {
  const NodeId v = m_node[static_cast<std::size_t>(g)];
  if (v >= 0) {
    sink.term(block, v, kFixedEdge, 1.0);
  } else {
    emit_pending(g, block, sink);
  }
}

template <class Sink>
void Unroller::emit_pending(Index g, int block, Sink& sink) const {
  const auto l = static_cast<std::size_t>(m_owner[static_cast<std::size_t>(g)]);
  const Index e = g - m_base[l];
  const Layer& ly = layer(l);
  visit_kind(ly.kind, [&]<class K>(K) { K::map(EntryTerms<Sink>{*this, l, e, block, sink}); });
}

UnrolledSize Unroller::size() {
  run<false>();
  return {m_num_nodes, m_num_edges};
}

Network Unroller::build(const EngineOptions& options) {
  m_threads = resolve_threads(options.threads);
  m_progress = options.progress;
  const UnrolledSize counted = size();
  const double bytes = k_bytes_per_edge * static_cast<double>(counted.edges) +
                       k_bytes_per_node * static_cast<double>(counted.nodes);
  const auto what = [&] {
    return fmt::format("unrolling the layer graph into {} nodes and {} edges", counted.nodes,
                       counted.edges);
  };
  if (counted.edges > std::numeric_limits<EdgeId>::max()) {
    throw TooLarge(fmt::format("{}: more edges than a network holds ({})", what(),
                               std::numeric_limits<EdgeId>::max()),
                   TooLarge::Reason::too_many_paths);
  }
  require_bytes(bytes, options.max_memory, what());
  m_spec.node_names.reserve(static_cast<std::size_t>(counted.nodes));
  detail::resize_huge(m_spec.edges, static_cast<std::size_t>(counted.edges));
  detail::resize_huge(m_spec.edge_params, static_cast<std::size_t>(counted.edges));
  detail::resize_huge(m_spec.fixed_weights, static_cast<std::size_t>(counted.edges));
  run<true>();
  if (m_progress) {
    m_progress("unrolling the layer graph", 1.0);
  }
  m_spec.num_params = m_graph.num_params;
  m_spec.weights = m_graph.weights;
  return Network(std::move(m_spec));
}

}  // namespace detail

Network unroll(const LayerGraph& graph, const EngineOptions& options) {
  return detail::Unroller(graph, options).build(options);
}

UnrolledSize unrolled_size(const LayerGraph& graph, const EngineOptions& options) {
  return detail::Unroller(graph, options).size();
}

}  // namespace pathlift
