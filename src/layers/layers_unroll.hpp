#pragma once
// The unroller behind unroll() and unrolled_size() of layers.hpp: the layer graph as a DAG
// (docs/layers.md).
//
// Every layer output is a tensor of "entries". The entries of an input, activation or max_pool
// layer are nodes; those of a sum layer (linear, conv, batch_norm, avg_pool, adaptive_avg_pool,
// add, sub) are pending sums: lists of terms (source node, parameter or fixed weight) generated
// on demand from the layer's geometry, never stored. flatten, concat and identity activations
// are views: their entries are entries of earlier layers. Two passes:
//  - the plan (backwards): which entries reach an output (live), how many consumers use each,
//    and whether a consumer needs its value (linear, conv, pools, batch_norm, sub's second
//    operand). A pending sum becomes a node of its own (identity) when some consumer needs its
//    value or when it has two consumers or more; otherwise its one consumer absorbs its terms
//    (an activation: its node; add: its own sum; an output: the output node).
//  - the run (forwards): nodes are created layer by layer and the edges of each batch of new
//    nodes are generated, counted first, then written in parallel at block-major positions.
// The run is made twice: counting only (unrolled_size, and the memory check), then emitting.
// The plan is in layers_plan.cpp, the run in layers_unroll.cpp.

#include <fmt/format.h>
#include <stdexcept>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pathlift/layers.hpp"
#include "pathlift/options.hpp"
#include "src/layers/layer_kinds.hpp"
#include "src/layers/layers_geometry.hpp"

namespace pathlift::detail {

/// The views (reshapes, concatenations, picks) and identity activations: their entries are
/// entries of earlier layers (a pick may repeat one: it then has several consumers and becomes
/// a node).
inline bool is_view(const Layer& layer) {
  return record(layer.kind).has(kTraitView) || (form_of(layer.kind) == Form::entrywise &&
                                                layer.activation.kind == ActivationKind::identity);
}

/// The kinds whose entries are pending sums of terms.
inline bool is_sum(LayerKind kind) {
  return record(kind).has(kTraitSum);
}

/// The kinds whose terms read their operand's entries as node values (a fixed or parameter
/// edge from each entry's node): the unroller makes those entries nodes.
inline bool reads_node_values(LayerKind kind) {
  return record(kind).has(kTraitReadsValues);
}

inline bool has_bias(const Layer& layer) {
  return has_parameters(layer.kind) && layer.bias_offset >= 0;
}

/// The term blocks of an entry's sum in layer `ly`, from its operands' (`blocks_of(k)`): a view
/// shows its operands' (the most of them); a sum has its operands' one after the other (a
/// negated last operand: one block, the edge of its node, EntryTerms); a layer with a bias two
/// (its terms, its bias); any other one.
template <class T, class F>
T term_blocks(const Layer& ly, const F& blocks_of) {
  const std::size_t n = ly.inputs.size();
  if (is_view(ly)) {
    T b = 0;
    for (std::size_t k = 0; k < n; ++k) {
      b = std::max<T>(b, blocks_of(k));
    }
    return b;
  }
  if (form_of(ly.kind) == Form::sum) {
    const bool negated = negates_last(ly.kind);
    T b = negated ? 1 : 0;
    for (std::size_t k = 0; k + (negated ? 1 : 0) < n; ++k) {
      b += blocks_of(k);
    }
    return b;
  }
  return has_bias(ly) ? 2 : 1;
}

/// What the unrolling of a graph can reach, from its layers' sizes alone (O(layers)), before any
/// per-entry work: upper bounds on the unrolled network's nodes and edges, and the bytes of the
/// unroller's own per-entry arrays (the plan and the counting run), which are exact up to the
/// temporaries of one layer.
struct UnrollBounds {
  double entries = 0;     ///< tensor entries of the layer outputs (views included)
  double max_nodes = 0;   ///< >= the unrolled nodes
  double max_edges = 0;   ///< >= the unrolled edges
  double plan_bytes = 0;  ///< the unroller's arrays for size() and node_entries()
};
UnrollBounds unroll_bounds(const LayerGraph& graph, const std::vector<std::vector<Index>>& shapes);

/// "unrolling the layer graph (12 layers, 6.1e8 tensor entries: up to 6.1e8 nodes and 7.0e11
/// edges)" for messages.
std::string unroll_description(const LayerGraph& graph, const UnrollBounds& bounds);

/// The unroller of one layer graph: the plan at construction, then size() or build(). The
/// construction refuses (TooLarge, before any per-entry array) a graph whose plan would exceed
/// options.max_memory or whose nodes could exceed NodeId's range.
class Unroller {
 public:
  explicit Unroller(const LayerGraph& graph, const EngineOptions& options = {});

  UnrolledSize size();

  /// Per layer, per entry: 1 when the unrolled network makes the entry a node of its own (an
  /// input, activation or max_pool entry; a pending sum that some consumer needs as a value or
  /// that has two consumers), 0 for a pending sum absorbed by its consumer or a relu entry
  /// whose operand is already a relu node (that node), 2 for an entry that reaches no output. Empty
  /// for views (flatten, concat, identity activations), whose entries are other layers' entries.
  [[nodiscard]] std::vector<std::vector<std::uint8_t>> node_entries() const;

  Network build(const EngineOptions& options);

  // The layout and the plan, as the rescaling symmetries read them (src/rank/layer_symmetry.cpp).
  [[nodiscard]] const std::vector<std::vector<Index>>& shapes() const { return m_shapes; }
  /// Entries of all the layers that own theirs (every layer but the views).
  [[nodiscard]] Index global_entries() const { return static_cast<Index>(m_live.size()); }
  /// The global entry that entry e of layer l is (a view's: the entry it shows).
  [[nodiscard]] Index global_entry(std::size_t l, Index e) const { return ref(l, e); }
  [[nodiscard]] bool owns_entries(std::size_t l) const { return m_base[l] >= 0; }
  /// Whether global entry g reaches an output.
  [[nodiscard]] bool is_live(Index g) const { return m_live[static_cast<std::size_t>(g)] != 0; }
  /// The window of a window layer (window_of()).
  [[nodiscard]] const Window& window(std::size_t l) const { return m_window[l]; }
  /// The interpolation of an interpolate layer (lerp_of()).
  [[nodiscard]] const Lerp& lerp(std::size_t l) const { return m_lerp[l]; }
  /// The groups of a group_sort layer (groups_of()).
  [[nodiscard]] const Groups& groups(std::size_t l) const { return m_groups[l]; }

  // The mechanisms MarkOperands (the plan's visitor of the kinds' maps) composes: the
  // liveness of a layer's operands.
  [[nodiscard]] std::size_t operands(std::size_t l) const { return layer(l).inputs.size(); }

  /// Marks operand k of l entry-wise (as values: `value`): entry e for each live entry e of l.
  void mark_entrywise(std::size_t l, std::size_t k, bool value);
  /// Marks every entry of l's operand as a value (a dense map: every output reads them all).
  void mark_dense(std::size_t l);
  /// Marks the inputs a window layer reads for its live outputs (`mixes_channels`: an output
  /// reads every input channel of its group, a convolution; otherwise its own channel).
  void mark_window(std::size_t l, bool mixes_channels);
  /// The same for the adjoint of a window (its inputs are the window's outputs).
  void mark_adjoint_window(std::size_t l);
  /// The same for groups (group_sort) and interpolation taps.
  void mark_groups(std::size_t l);
  void mark_lerp(std::size_t l);

 private:
  [[nodiscard]] const Layer& layer(std::size_t l) const { return m_graph.layers[l]; }
  [[nodiscard]] std::size_t op(std::size_t l, std::size_t k = 0) const {
    return static_cast<std::size_t>(layer(l).inputs[k]);
  }

  /// The global entry that entry e of layer l is.
  [[nodiscard]] Index ref(std::size_t l, Index e) const {
    return m_base[l] >= 0 ? m_base[l] + e : m_refs[l][static_cast<std::size_t>(e)];
  }

  void layout();

  void mark(Index g, bool value) {
    const auto i = static_cast<std::size_t>(g);
    m_live[i] = 1;
    m_uses[i] = static_cast<std::uint8_t>(std::min(2, m_uses[i] + 1));
    m_value_use[i] = static_cast<std::uint8_t>(m_value_use[i] | (value ? 1 : 0));
  }

  [[nodiscard]] bool live(std::size_t l, Index e) const {
    return m_live[static_cast<std::size_t>(m_base[l] + e)] != 0;
  }

  void plan();

  [[nodiscard]] bool needs_node(Index g) const {
    const auto i = static_cast<std::size_t>(g);
    return m_live[i] != 0 && (m_value_use[i] != 0 || m_uses[i] > 1);
  }

  [[nodiscard]] bool all_materialised(std::size_t l) const;

  /// "name[c,h,w]" for entry e of layer l (the input: "x[...]").
  [[nodiscard]] std::string entry_name(std::string_view name, std::size_t l, Index e) const;

  void append_entry_name(fmt::memory_buffer& buf, std::string_view name, std::size_t l,
                         Index e) const;

  /// A new node. Its activation is recorded when it differs from the default of its role
  /// (inputs and outputs identity, hidden nodes relu).
  template <bool Emit, class Name>
  NodeId new_node(const Name& name, Activation act, bool hidden);

  template <bool Emit>
  NodeId new_entry_node(std::size_t l, Index e, Activation act);

  template <bool Emit>
  void run();

  template <bool Emit>
  void run_layer(std::size_t l);

  /// The edges into the new nodes dst[0..n): gen(i, block0, sink) generates the terms of node
  /// i in blocks block0 .. block0 + blocks - 1. Edges are placed block by block, node by node
  /// within a block, in generation order within a node.
  template <bool Emit, class Gen>
  void batch(const std::vector<NodeId>& dst, int blocks, const Gen& gen);

  /// The terms of entry e of layer l (a pending sum, or a max node's operands): the run's
  /// visitor of the kinds' maps (layers_unroll.cpp).
  template <class Sink>
  struct EntryTerms;

  /// The terms of global entry g: a fixed edge 1 from its node, or its pending sum.
  template <class Sink>
  void emit_value(Index g, int block, Sink& sink) const;

  /// The terms of the pending sum g (an entry of a sum layer).
  template <class Sink>
  void emit_pending(Index g, int block, Sink& sink) const;

  const LayerGraph& m_graph;
  std::vector<std::vector<Index>> m_shapes;
  UnrollBounds m_bounds;
  std::vector<Index> m_entries;            // per layer
  std::vector<Index> m_base;               // per layer: its first global entry, -1 for a view
  std::vector<std::vector<Index>> m_refs;  // per view layer: the global entry of each entry
  std::vector<Window> m_window;            // per window layer
  std::vector<Lerp> m_lerp;                // per interpolate layer
  std::vector<Groups> m_groups;            // per group_sort layer
  std::vector<int> m_blocks;               // per layer: term blocks of an entry's value
  std::vector<int> m_own_blocks;           // per layer: term blocks of an entry's sum
  std::vector<std::int32_t> m_owner;       // per global entry: its layer
  std::vector<std::uint8_t> m_live;        // per global entry: reaches an output
  std::vector<std::uint8_t> m_uses;        // per global entry: consumers, saturated at 2
  std::vector<std::uint8_t> m_value_use;   // per global entry: some consumer needs its value
  // The run.
  std::vector<NodeId> m_node;                   // per global entry: its node, -1 while pending
  std::vector<std::uint8_t> m_node_relu;        // per node: has activation relu
  std::vector<NodeId> m_bias_node;              // per layer
  std::vector<std::vector<NodeId>> m_in_nodes;  // per value-reading layer: its operand's nodes
  Index m_num_nodes = 0;
  Index m_num_edges = 0;
  int m_threads = 1;
  Progress m_progress;
  fmt::memory_buffer m_name;
  NetworkSpec m_spec;
};

}  // namespace pathlift::detail
