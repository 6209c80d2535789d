#pragma once
/// \file network.hpp
/// The DAG ReLU network of docs/conventions.md#network: named nodes, edges in parameter order
/// (parallel edges allowed), inputs (nodes without incoming edge; bias inputs have value 1),
/// outputs (sinks plus designated nodes, which may have outgoing edges), hidden nodes (the rest),
/// one activation per node, and a topological order computed once.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "pathlift/types.hpp"

namespace pathlift {

enum class ActivationKind : std::uint8_t { identity, relu, leaky_relu, max };

/// A positively homogeneous piecewise-linear activation: slope 1 for positive
/// pre-activations, `negative_slope` for negative ones (identity 1, ReLU 0, leaky ReLU a).
struct Activation {
  ActivationKind kind = ActivationKind::identity;
  double negative_slope = 1.0;

  static Activation identity() { return {ActivationKind::identity, 1.0}; }
  static Activation relu() { return {ActivationKind::relu, 0.0}; }
  /// Leaky ReLU with slope `a` on negative inputs; `a` must be finite.
  static Activation leaky_relu(double a) { return {ActivationKind::leaky_relu, a}; }
  /// k-th largest of max nodes (1: the largest); 1 for the other kinds.
  Index order = 1;

  /// A max-pooling node (order k = 1) or a k-max-pooling node (order k >= 2): its value is the
  /// k-th largest of w_e v(u) over its incoming edges e = (u -> v), repeats counted (not their
  /// sum); they must all be fixed edges, at least k of them. In the linearization only the
  /// edge of the k-th largest is active: the incoming values ordered by decreasing value, ties
  /// by increasing edge index (k = 1: the arg-max edge, ties to the smallest index).
  static Activation max(Index k = 1) { return {ActivationKind::max, 1.0, k}; }

  /// "identity", "relu", "leaky_relu:<slope>", "max" or "max:<k>" (k >= 2).
  [[nodiscard]] std::string name() const;
  /// Parses the names above; throws FormatError naming the text otherwise.
  static Activation parse(std::string_view text);

  bool operator==(const Activation&) const = default;
};

enum class NodeRole : std::uint8_t { input, hidden, output };

/// The names of a network's nodes and the node each name denotes: the one resolver of node
/// references (a node given by its name or by its 0-based index) for the network file, the
/// Python Network constructor and the built-in networks, and the name index of Network.
///
/// Example:
/// \code
///   pathlift::NodeNames nodes({"a", "b"});
///   nodes.by_name("b", [] { return std::string("\"outputs\"[0]"); });  // 1
///   nodes.by_index(5, [] { return std::string("edge 3"); });  // FormatError: out of range
/// \endcode
class NodeNames {
 public:
  NodeNames() = default;
  /// Node i is names[i]. Throws NetworkError for an empty name ("node 3 has an empty name"),
  /// a duplicate ("duplicate node name 'a' (nodes 0 and 3)") or more nodes than NodeId holds.
  /// Complexity: O(m) expected.
  explicit NodeNames(std::vector<std::string> names);

  /// Appends a node named `name` and returns its index; throws as the constructor.
  NodeId add(std::string name);

  /// The nodes "0", ..., "count - 1" of a network given by a node count (or by node indices)
  /// with `edges` edges. A count no such network can have is refused (FormatError "<what>:
  /// ...") before a name is made: one above 2 x edges (every node needs an edge) and above
  /// 1,000,000 (smaller counts reach the isolated-node check, which names the nodes), or
  /// above the largest NodeId. Complexity: O(count).
  static NodeNames numbered(std::uint64_t count, std::size_t edges, std::string_view what);

  [[nodiscard]] Index size() const { return static_cast<Index>(m_names.size()); }
  [[nodiscard]] const std::vector<std::string>& names() const { return m_names; }
  /// The names, moved out (the index is left empty).
  [[nodiscard]] std::vector<std::string> take_names() &&;
  /// The node with this name, if any. Complexity: O(1) expected, no allocation.
  [[nodiscard]] std::optional<NodeId> find(std::string_view name) const;

  /// The node named `name`. `where()` names the reference in the message and is called only
  /// on error: throws FormatError "<where>: unknown node 'zz'".
  template <class Where>
  [[nodiscard]] NodeId by_name(std::string_view name, const Where& where) const {
    if (const auto v = find(name)) {
      return *v;
    }
    throw_unknown(where(), name);
  }

  /// The node of 0-based index `index` (of any integer type, so that neither a negative index
  /// nor one above 2^63 wraps). Throws FormatError "<where>: node index 7 is out of range (the
  /// network has 3 nodes)", `where()` called only then.
  template <class Int, class Where>
  [[nodiscard]] NodeId by_index(Int index, const Where& where) const {
    static_assert(std::is_integral_v<Int>);
    if (std::cmp_greater_equal(index, 0) && std::cmp_less(index, m_names.size())) {
      return static_cast<NodeId>(index);
    }
    throw_out_of_range(where(), std::to_string(index));
  }

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };
  void index(const std::string& name, std::size_t v);
  [[noreturn]] static void throw_unknown(const std::string& where, std::string_view name);
  [[noreturn]] void throw_out_of_range(const std::string& where, const std::string& index) const;

  std::vector<std::string> m_names;
  std::unordered_map<std::string, NodeId, Hash, std::equal_to<>> m_index;
};

/// What a network is built from. Node references are 0-based indices into `node_names`.
struct NetworkSpec {
  std::vector<std::string> node_names;
  std::vector<std::pair<NodeId, NodeId>> edges;  ///< (source, target), edge k = theta_k
  std::vector<NodeId> outputs;                   ///< designated outputs (sinks are outputs anyway)
  /// Designated inputs: nodes without an incoming edge, inputs even when they have no edge at
  /// all (an input entry no path leaves, such as one a strided window never reads); an
  /// isolated node that is not designated is an error.
  std::vector<NodeId> inputs;
  std::vector<NodeId> bias;                                ///< input nodes whose value is 1
  std::vector<std::pair<NodeId, Activation>> activations;  ///< overrides of the defaults
  std::optional<std::vector<double>> weights;              ///< theta (num_params entries), if known

  /// Parameters distinct from edges (file format version 2). Empty: edge k carries parameter
  /// k, d = number of edges (version 1). Otherwise one entry per edge: the parameter index
  /// k in [0, num_params) the edge carries (several edges may share one), or kFixedEdge for
  /// an edge of constant weight fixed_weights[e].
  std::vector<Index> edge_params;
  /// With edge_params: one entry per edge, the weight of each fixed edge (the entries of
  /// parameter edges are ignored and stored as 0).
  std::vector<double> fixed_weights;
  /// With edge_params: d, the number of parameters (a parameter may carry no edge: a zero
  /// column of B). Ignored without edge_params.
  Index num_params = 0;
};

/// edge_params entry of an edge with a fixed weight.
inline constexpr Index kFixedEdge = -1;

/// How the edges of a network carry its parameters, when they are not one per edge: shared
/// (not copied) by the Network and the PathSets enumerated from it.
struct ParameterMap {
  Index num_params = 0;               ///< d
  std::vector<Index> edge_params;     ///< per edge: parameter k, or kFixedEdge
  std::vector<double> fixed_weights;  ///< per edge: the weight of a fixed edge, else 0
  std::vector<Index> offsets;         ///< CSR parameter -> edges: num_params + 1 entries
  std::vector<EdgeId> edges;          ///< the edges of each parameter, increasing

  /// The weight of every edge at theta (num_params entries, not checked here).
  [[nodiscard]] std::vector<double> edge_weights(std::span<const double> theta) const;
  [[nodiscard]] std::vector<float> edge_weights(std::span<const float> theta) const;
};

/// An immutable, validated DAG ReLU network.
///
/// Example:
/// \code
///   pathlift::NetworkSpec s;
///   s.node_names = {"a", "b", "c"};
///   s.edges = {{0, 1}, {1, 2}};
///   pathlift::Network net(std::move(s));  // a -> b -> c: I = {a}, H = {b}, O = {c}
/// \endcode
class Network {
 public:
  /// Validates `spec` and builds the network. Throws NetworkError naming the culprits for:
  /// an empty network, a duplicate or empty node name, an edge naming an unknown node, a
  /// cycle (the nodes on one cycle are listed), an isolated node, a designated output without
  /// incoming edge, a bias node with an incoming edge, an activation on an input node, a
  /// weight count different from the edge count, a non-finite weight or slope.
  /// Complexity: O(m + d) expected.
  explicit Network(NetworkSpec spec);

  [[nodiscard]] Index num_nodes() const { return m_nodes.size(); }
  /// The number of edges (d too when one_parameter_per_edge()).
  [[nodiscard]] Index num_edges() const { return static_cast<Index>(m_src.size()); }
  /// d, the number of parameters: the length of theta and the columns of B and dPhi.
  [[nodiscard]] Index num_params() const { return m_num_params; }
  /// True when edge k carries parameter k for every k (no sharing, no fixed edge): the model
  /// of the paper's Theorem 1 and of file format version 1.
  [[nodiscard]] bool one_parameter_per_edge() const { return m_params == nullptr; }
  /// The parameter edge e carries, or kFixedEdge.
  [[nodiscard]] Index edge_param(EdgeId e) const {
    return m_params ? m_params->edge_params[edge_at(e)] : static_cast<Index>(edge_at(e));
  }
  /// The weight of a fixed edge (0 for an edge that carries a parameter).
  [[nodiscard]] double fixed_weight(EdgeId e) const {
    return m_params ? m_params->fixed_weights[edge_at(e)] : 0.0;
  }
  /// The parameter map (null when one_parameter_per_edge()).
  [[nodiscard]] const std::shared_ptr<const ParameterMap>& parameter_map() const {
    return m_params;
  }
  /// The edges that carry parameter k, by increasing index. Only for a network with
  /// edge_params (std::logic_error otherwise: there edge k alone carries parameter k).
  [[nodiscard]] std::span<const EdgeId> param_edges(Index k) const;
  /// The weight of every edge at theta: theta[edge_param(e)], or the fixed weight. theta has
  /// num_params() entries (checked). Complexity: O(edges).
  [[nodiscard]] std::vector<double> edge_weights(std::span<const double> theta) const;
  /// True when some node has activation max (max pooling).
  [[nodiscard]] bool has_max_nodes() const { return m_has_max; }
  /// "parameter 4 (edge a -> b)", "parameter 4 (edges a -> b, c -> d and 7 more)" or
  /// "parameter 4 (no edge)", for messages; "edge a -> b" for one parameter per edge.
  [[nodiscard]] std::string param_label(Index k) const;

  [[nodiscard]] const std::string& node_name(NodeId v) const { return m_nodes.names()[at(v)]; }
  [[nodiscard]] const std::vector<std::string>& node_names() const { return m_nodes.names(); }

  /// The node with this name, if any.
  [[nodiscard]] std::optional<NodeId> find_node(std::string_view name) const;

  [[nodiscard]] NodeId source(EdgeId e) const { return m_src[edge_at(e)]; }
  [[nodiscard]] NodeId target(EdgeId e) const { return m_dst[edge_at(e)]; }
  [[nodiscard]] std::span<const NodeId> sources() const { return m_src; }
  [[nodiscard]] std::span<const NodeId> targets() const { return m_dst; }
  /// "a -> d", for messages (the names through printable(), error.hpp).
  [[nodiscard]] std::string edge_label(EdgeId e) const;

  /// Outgoing edges of v by increasing edge index.
  [[nodiscard]] std::span<const EdgeId> out_edges(NodeId v) const {
    return slice(m_out_offsets, m_out_edges, v);
  }
  /// Incoming edges of v by increasing edge index.
  [[nodiscard]] std::span<const EdgeId> in_edges(NodeId v) const {
    return slice(m_in_offsets, m_in_edges, v);
  }
  /// CSR arrays of the outgoing edges (offsets has m + 1 entries), for hot loops.
  [[nodiscard]] std::span<const Index> out_offsets() const { return m_out_offsets; }
  [[nodiscard]] std::span<const EdgeId> out_edge_list() const { return m_out_edges; }
  [[nodiscard]] std::span<const Index> in_offsets() const { return m_in_offsets; }
  [[nodiscard]] std::span<const EdgeId> in_edge_list() const { return m_in_edges; }

  [[nodiscard]] NodeRole role(NodeId v) const { return m_role[at(v)]; }
  [[nodiscard]] bool is_input(NodeId v) const { return role(v) == NodeRole::input; }
  [[nodiscard]] bool is_hidden(NodeId v) const { return role(v) == NodeRole::hidden; }
  [[nodiscard]] bool is_output(NodeId v) const { return role(v) == NodeRole::output; }
  [[nodiscard]] bool is_bias(NodeId v) const { return m_is_bias[at(v)] != 0; }
  /// True when v was designated as an output in the spec (sinks are outputs anyway).
  [[nodiscard]] bool is_designated_output(NodeId v) const { return m_designated[at(v)] != 0; }
  [[nodiscard]] const Activation& activation(NodeId v) const { return m_act[at(v)]; }

  /// All input nodes (bias included), in node order: where paths start.
  [[nodiscard]] std::span<const NodeId> inputs() const { return m_inputs; }
  /// Input nodes without the bias nodes, in node order: the columns of a data matrix X.
  [[nodiscard]] std::span<const NodeId> data_inputs() const { return m_data_inputs; }
  [[nodiscard]] std::span<const NodeId> bias_nodes() const { return m_bias; }
  /// Output nodes in node order: the columns of f(X).
  [[nodiscard]] std::span<const NodeId> outputs() const { return m_outputs; }
  [[nodiscard]] std::span<const NodeId> hidden() const { return m_hidden; }
  /// h, the number of hidden nodes.
  [[nodiscard]] Index num_hidden() const { return static_cast<Index>(m_hidden.size()); }

  /// A topological order: all inputs first (node order), then the other nodes by Kahn's
  /// algorithm taking the smallest available node index first. Deterministic.
  [[nodiscard]] std::span<const NodeId> topological_order() const { return m_topo; }
  /// Position of v in topological_order().
  [[nodiscard]] Index topological_position(NodeId v) const { return m_topo_pos[at(v)]; }

  /// Weights stored with the network (from its file), if any.
  [[nodiscard]] bool has_weights() const { return m_weights.has_value(); }
  [[nodiscard]] std::span<const double> weights() const;

  /// A copy of this network with other weights (validated), or without (nullopt).
  [[nodiscard]] Network with_weights(std::optional<std::vector<double>> weights) const;

  /// The spec this network was built from (round-trips through the file format).
  [[nodiscard]] NetworkSpec spec() const;

  /// True when edge indices increase along every path (each node's incoming edges all come
  /// before its outgoing edges), as in feed-forward networks in PyTorch order. Then a path's
  /// edges in walk order are also in column order.
  [[nodiscard]] bool edges_increase_along_paths() const { return m_monotone; }

 private:
  [[nodiscard]] std::size_t at(NodeId v) const;
  [[nodiscard]] std::size_t edge_at(EdgeId e) const;
  static std::span<const EdgeId> slice(const std::vector<Index>& off, const Buffer<EdgeId>& items,
                                       NodeId v) {
    const auto i = static_cast<std::size_t>(v);
    return {items.data() + off[i], static_cast<std::size_t>(off[i + 1] - off[i])};
  }
  // The steps of the constructor, in order; each validates what it indexes.
  void index_edges(const NetworkSpec& spec);
  void check_loops_and_isolated_nodes(const NetworkSpec& spec);
  void assign_roles(const NetworkSpec& spec);
  void assign_activations(const NetworkSpec& spec);
  void order_topologically();
  [[noreturn]] void throw_cycle(const std::vector<Index>& remaining) const;
  void assign_parameters(NetworkSpec& spec);  // moves spec.edge_params and fixed_weights
  void check_max_nodes();
  void check_weights(const NetworkSpec& spec) const;
  [[nodiscard]] Index in_degree(std::size_t v) const {
    return m_in_offsets[v + 1] - m_in_offsets[v];
  }
  [[nodiscard]] Index out_degree(std::size_t v) const {
    return m_out_offsets[v + 1] - m_out_offsets[v];
  }

  NodeNames m_nodes;
  // Buffers (no zero-fill, huge pages): a 10^7-edge network is built at memory speed.
  Buffer<NodeId> m_src, m_dst;
  std::vector<Index> m_out_offsets, m_in_offsets;
  Buffer<EdgeId> m_out_edges, m_in_edges;
  std::vector<NodeRole> m_role;
  std::vector<std::uint8_t> m_is_bias, m_designated, m_designated_input;
  std::vector<Activation> m_act;
  std::vector<NodeId> m_inputs, m_data_inputs, m_bias, m_outputs, m_hidden, m_topo;
  std::vector<Index> m_topo_pos;
  std::optional<std::vector<double>> m_weights;
  bool m_monotone = false;
  Index m_num_params = 0;
  std::shared_ptr<const ParameterMap> m_params;  // null: edge k carries parameter k
  bool m_has_max = false;
};

/// The size half of check_theta, for callers that check the values themselves (the scaled
/// DPs do it in their pass). Throws std::invalid_argument "theta has N entries but the network
/// has d edges", the vector named `what`.
void check_theta_size(const Network& net, std::size_t theta_size, std::string_view what = "theta");

/// The one check of a parameter vector: `values` has d entries and each is finite. `what`
/// names the vector in the message ("theta", "v"). Throws std::invalid_argument
/// "theta has 6 entries but the network has 7 edges" or
/// "theta[4] (edge d -> h) is not finite: nan".
/// Complexity: O(d), vectorised on valid input.
void check_theta(const Network& net, std::span<const double> values,
                 std::string_view what = "theta");
/// The same for float32 parameters.
void check_theta(const Network& net, std::span<const float> values,
                 std::string_view what = "theta");

}  // namespace pathlift
