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

/// The terms of entry e of layer l (a pending sum, or a max node's operands), into `sink`
/// from term block `block` on.
template <class Sink>
struct EntryTerms {
  const Unroller& u;
  std::size_t l;
  Index e;
  int block;
  Sink& sink;

  void input() const {}
  void dense() const { u.emit_dense(l, e, block, sink); }
  void window() const { u.emit_conv(l, e, block, sink); }
  void adjoint_window() const { u.emit_adjoint_window(l, e, block, sink); }
  void channel_affine() const { u.emit_channel_affine(l, e, block, sink); }
  void pool(bool max) const { u.emit_window(l, e, block, sink, max ? 1.0 : 0.0); }
  // No terms of its own: an activation's node reads its operand's (run_layer); views show
  // other entries.
  void entrywise() const {}
  void scaled() const { u.emit_scaled(l, e, block, sink); }
  void sum(bool negate_last) const { u.emit_operands(l, e, block, sink, negate_last); }
  void concat() const {}
  void reshape() const {}
  void pick() const {}
  void group() const { u.emit_group(l, e, block, sink); }
  void lerp() const { u.emit_lerp(l, e, block, sink); }
};

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

template <class Sink>
void Unroller::emit_dense(std::size_t l, Index e, int block, Sink& sink) const {
  const Layer& ly = layer(l);
  const std::vector<NodeId>& in = m_in_nodes[l];
  const auto f = static_cast<Index>(in.size());
  if constexpr (Sink::count_only) {
    sink.bulk(block, f);
  } else {
    const Index w0 = ly.weight_offset + e * f;
    for (Index j = 0; j < f; ++j) {
      sink.term(block, in[static_cast<std::size_t>(j)], w0 + j, 0.0);
    }
  }
  if (ly.bias_offset >= 0) {
    sink.term(block + 1, m_bias_node[l], ly.bias_offset + e, 0.0);
  }
}

template <class Sink>
void Unroller::emit_channel_affine(std::size_t l, Index e, int block, Sink& sink) const {
  const Layer& ly = layer(l);
  const Index c = e / (m_entries[l] / m_shapes[l][0]);
  sink.term(block, m_in_nodes[l][static_cast<std::size_t>(e)], ly.weight_offset + c, 0.0);
  if (ly.bias_offset >= 0) {
    sink.term(block + 1, m_bias_node[l], ly.bias_offset + c, 0.0);
  }
}

template <class Sink>
void Unroller::emit_scaled(std::size_t l, Index e, int block, Sink& sink) const {
  sink.term(block, m_in_nodes[l][static_cast<std::size_t>(e)], kFixedEdge, layer(l).factor);
}

template <class Sink>
void Unroller::emit_operands(std::size_t l, Index e, int block, Sink& sink,
                             bool negate_last) const {
  const std::size_t n = operands(l) - (negate_last ? 1 : 0);
  for (std::size_t k = 0; k < n; ++k) {
    emit_value(ref(op(l, k), e), block, sink);
    block += m_blocks[op(l, k)];
  }
  if (negate_last) {
    sink.term(block, m_node[static_cast<std::size_t>(ref(op(l, n), e))], kFixedEdge, -1.0);
  }
}

template <class Sink>
void Unroller::emit_group(std::size_t l, Index e, int block, Sink& sink) const {
  const std::vector<NodeId>& in = m_in_nodes[l];
  group_taps(m_groups[l], e,
             [&](Index i) { sink.term(block, in[static_cast<std::size_t>(i)], kFixedEdge, 1.0); });
}

template <class Sink>
void Unroller::emit_lerp(std::size_t l, Index e, int block, Sink& sink) const {
  const std::vector<NodeId>& in = m_in_nodes[l];
  lerp_taps(m_lerp[l], e, [&](Index i, double weight) {
    sink.term(block, in[static_cast<std::size_t>(i)], kFixedEdge, weight);
  });
}

template <class Sink>
void Unroller::emit_conv(std::size_t l, Index e, int block, Sink& sink) const {
  const Layer& ly = layer(l);
  const Window& w = m_window[l];
  const Position at = w.out_position(e);
  if constexpr (Sink::count_only) {
    sink.bulk(block, (w.channels_in / w.groups) * w.h.taps(at.h) * w.w.taps(at.w));
  } else {
    const std::vector<NodeId>& in = m_in_nodes[l];
    conv_taps(ly, w, e,
              [&](Index i, Index p) { sink.term(block, in[static_cast<std::size_t>(i)], p, 0.0); });
  }
  if (ly.bias_offset >= 0) {
    sink.term(block + 1, m_bias_node[l], ly.bias_offset + at.c, 0.0);
  }
}

template <class Sink>
void Unroller::emit_adjoint_window(std::size_t l, Index e, int block, Sink& sink) const {
  const Layer& ly = layer(l);
  const Window& w = m_window[l];  // the adjoint convolution: its input is this layer's output
  const Position at = w.in_position(e);
  if constexpr (Sink::count_only) {
    Index taps = 0;
    w.h.readers(at.h, [&](Index, Index) { w.w.readers(at.w, [&](Index, Index) { ++taps; }); });
    sink.bulk(block, (w.channels_out / w.groups) * taps);
  } else {
    const std::vector<NodeId>& in = m_in_nodes[l];
    adjoint_window_taps(ly, w, e, [&](Index i, Index p) {
      sink.term(block, in[static_cast<std::size_t>(i)], p, 0.0);
    });
  }
  if (ly.bias_offset >= 0) {
    sink.term(block + 1, m_bias_node[l], ly.bias_offset + at.c, 0.0);
  }
}

template <class Sink>
void Unroller::emit_window(std::size_t l, Index e, int block, Sink& sink, double weight) const {
  const Window& w = m_window[l];
  const auto [c, oh, ow] = w.out_position(e);
  if constexpr (Sink::count_only) {
    sink.bulk(block, (w.h.last(oh) - w.h.first(oh)) * (w.w.last(ow) - w.w.first(ow)));
  } else {
    if (weight == 0.0) {
      weight = pool_weight(layer(l), w, oh, ow);
    }
    const std::vector<NodeId>& in = m_in_nodes[l];
    window_taps(w, e, [&](Index i) {
      sink.term(block, in[static_cast<std::size_t>(i)], kFixedEdge, weight);
    });
  }
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
