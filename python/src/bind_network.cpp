// network.hpp: the Network class, built from edges (node names or indices), with its properties
// as numpy views (read-only, kept alive by the network).

#include <pybind11/stl.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common.hpp"
#include "pathlift/io.hpp"
#include "pathlift/network.hpp"

namespace pathlift::python {

namespace {

const char* role_name(NodeRole r) {
  switch (r) {
    case NodeRole::input:
      return "input";
    case NodeRole::hidden:
      return "hidden";
    case NodeRole::output:
      return "output";
  }
  return "?";
}

/// The node list being built (from nodes=, or inferred from the references) and the
/// resolution of node references against it: the library's NodeNames, fed Python objects.
class NodeResolver {
 public:
  /// `edges`: the number of edges, which bounds the node count (NodeNames::numbered).
  NodeResolver(const py::object& nodes, const std::vector<py::object>& refs, std::size_t edges) {
    if (nodes.is_none()) {
      infer(refs, edges);
    } else if (py::isinstance<py::int_>(nodes) && !py::isinstance<py::bool_>(nodes)) {
      const auto n = nodes.cast<long long>();
      if (n < 0) {
        throw std::invalid_argument(fmt::format("nodes = {} is not a valid node count", n));
      }
      m_nodes = NodeNames::numbered(static_cast<std::uint64_t>(n), edges, "nodes");
    } else if (py::isinstance<py::str>(nodes)) {
      throw std::invalid_argument("nodes must be a node count or a sequence of names, not a str");
    } else {
      for (const py::handle h : nodes) {
        if (!py::isinstance<py::str>(h)) {
          throw std::invalid_argument(fmt::format("node names must be str (got {})", repr_of(h)));
        }
        m_nodes.add(h.cast<std::string>());
      }
    }
  }

  /// The node `ref` (a str name or an int index) refers to; `where()` names it in messages.
  template <class Where>
  NodeId resolve(const py::handle& ref, const Where& where) const {
    if (py::isinstance<py::str>(ref)) {
      return m_nodes.by_name(ref.cast<std::string>(), where);
    }
    if (is_integer(ref)) {
      return m_nodes.by_index(ref.cast<long long>(), where);
    }
    throw std::invalid_argument(
        fmt::format("{}: a node is a name (str) or an index (int), got {}", where(), repr_of(ref)));
  }

  std::vector<std::string> take_names() { return std::move(m_nodes).take_names(); }

 private:
  static bool is_integer(const py::handle& h) {
    if (py::isinstance<py::bool_>(h)) {
      return false;
    }
    return py::isinstance<py::int_>(h) || py::hasattr(h, "__index__");
  }

  void infer(const std::vector<py::object>& refs, std::size_t edges) {
    bool any_name = false;
    bool any_index = false;
    long long max_index = -1;
    for (const auto& r : refs) {
      if (py::isinstance<py::str>(r)) {
        any_name = true;
      } else if (is_integer(r)) {
        any_index = true;
        max_index = std::max(max_index, r.cast<long long>());
      }
    }
    if (any_name && any_index) {
      throw std::invalid_argument(
          "node references mix names and indices: pass nodes= (a list of names or a count)");
    }
    if (any_index) {
      m_nodes = NodeNames::numbered(static_cast<std::uint64_t>(max_index) + 1, edges,
                                    fmt::format("node index {}", max_index));
      return;
    }
    for (const auto& r : refs) {
      if (py::isinstance<py::str>(r)) {
        auto name = r.cast<std::string>();
        if (!m_nodes.find(name)) {
          m_nodes.add(std::move(name));
        }
      }
    }
  }

  NodeNames m_nodes;
};

std::vector<py::object> as_list(const py::object& seq, const char* what) {
  std::vector<py::object> out;
  if (seq.is_none()) {
    return out;
  }
  if (!py::isinstance<py::iterable>(seq) || py::isinstance<py::str>(seq)) {
    throw std::invalid_argument(fmt::format("{} must be a sequence (got {})", what, repr_of(seq)));
  }
  for (const py::handle h : seq) {
    out.push_back(py::reinterpret_borrow<py::object>(h));
  }
  return out;
}

/// The version 2 arguments: params (one int per edge, -1 for a fixed edge), fixed_weights,
/// num_params.
void read_parameters(const py::object& params, const py::object& fixed_weights,
                     const py::object& num_params, NetworkSpec& spec) {
  if (params.is_none()) {
    if (!fixed_weights.is_none() || !num_params.is_none()) {
      throw std::invalid_argument("fixed_weights and num_params go with params");
    }
    return;
  }
  const auto p = py::array_t<long long, py::array::c_style | py::array::forcecast>::ensure(
      array_of(params, "params"));
  if (!p || p.ndim() != 1) {
    throw std::invalid_argument("params must be a 1-D sequence of ints (one per edge, -1: fixed)");
  }
  spec.edge_params.assign(p.data(), p.data() + p.size());
  for (auto& k : spec.edge_params) {
    k = k < 0 ? kFixedEdge : k;
  }
  if (fixed_weights.is_none()) {
    spec.fixed_weights.assign(spec.edge_params.size(), 1.0);
  } else {
    const auto w = vector_argument<double>(fixed_weights, "fixed_weights");
    spec.fixed_weights.assign(w.data(), w.data() + w.size());
  }
  if (num_params.is_none()) {
    Index d = 0;
    for (const Index k : spec.edge_params) {
      d = std::max(d, k + 1);
    }
    spec.num_params = d;
  } else {
    spec.num_params = num_params.cast<Index>();
  }
}

Network make_network(const py::object& edges, const py::object& nodes, const py::object& outputs,
                     const py::object& bias, const py::object& activations,
                     const py::object& weights, const py::object& params,
                     const py::object& fixed_weights, const py::object& num_params) {
  NetworkSpec spec;
  read_parameters(params, fixed_weights, num_params, spec);
  std::vector<std::pair<py::object, py::object>> edge_refs;
  std::vector<py::object> all_refs;
  // Fast path: an integer array of shape (d, 2) holds node indices.
  const bool array_edges = py::isinstance<py::array>(edges);
  if (array_edges) {
    const auto arr = py::reinterpret_borrow<py::array>(edges);
    if (arr.ndim() != 2 || arr.shape(1) != 2 ||
        (arr.dtype().kind() != 'i' && arr.dtype().kind() != 'u')) {
      throw std::invalid_argument("edges as an array must be integers of shape (d, 2)");
    }
    const auto idx = py::array_t<long long, py::array::c_style | py::array::forcecast>::ensure(arr);
    if (!idx) {
      throw std::invalid_argument("edges: cannot read the array as integers");
    }
    const long long* v = idx.data();
    long long max_index = -1;
    for (py::ssize_t k = 0; k < idx.shape(0); ++k) {
      const long long a = v[2 * k];
      const long long b = v[2 * k + 1];
      for (const long long x : {a, b}) {
        if (x < std::numeric_limits<NodeId>::min() || x > std::numeric_limits<NodeId>::max()) {
          throw std::invalid_argument(fmt::format("edge {}: node index {} is out of range", k, x));
        }
      }
      spec.edges.emplace_back(static_cast<NodeId>(a), static_cast<NodeId>(b));
      max_index = std::max({max_index, a, b});
    }
    if (max_index >= 0) {
      all_refs.push_back(py::int_(max_index));
    }
  } else {
    for (const auto& e : as_list(edges, "edges")) {
      const auto pair = py::isinstance<py::str>(e)
                            ? std::vector<py::object>{}
                            : as_list(py::reinterpret_borrow<py::object>(e), "an edge");
      if (pair.size() != 2) {
        throw std::invalid_argument(fmt::format(
            "edge {}: an edge is a pair (source, target), got {}", edge_refs.size(), repr_of(e)));
      }
      edge_refs.emplace_back(pair[0], pair[1]);
      all_refs.push_back(pair[0]);
      all_refs.push_back(pair[1]);
    }
  }
  const auto output_refs = as_list(outputs, "outputs");
  const auto bias_refs = as_list(bias, "bias");
  std::vector<std::pair<py::object, py::object>> activation_refs;
  if (!activations.is_none()) {
    if (!py::isinstance<py::dict>(activations)) {
      throw std::invalid_argument(
          "activations must be a dict {node: 'relu' | 'identity' | 'leaky_relu:<slope>'}");
    }
    for (const auto item : py::reinterpret_borrow<py::dict>(activations)) {
      activation_refs.emplace_back(py::reinterpret_borrow<py::object>(item.first),
                                   py::reinterpret_borrow<py::object>(item.second));
    }
  }
  all_refs.insert(all_refs.end(), output_refs.begin(), output_refs.end());
  all_refs.insert(all_refs.end(), bias_refs.begin(), bias_refs.end());
  for (const auto& a : activation_refs) {
    all_refs.push_back(a.first);
  }

  NodeResolver resolver(nodes, all_refs, array_edges ? spec.edges.size() : edge_refs.size());
  for (std::size_t k = 0; !array_edges && k < edge_refs.size(); ++k) {
    const auto where = [k] { return fmt::format("edge {}", k); };
    spec.edges.emplace_back(resolver.resolve(edge_refs[k].first, where),
                            resolver.resolve(edge_refs[k].second, where));
  }
  for (std::size_t i = 0; i < output_refs.size(); ++i) {
    spec.outputs.push_back(
        resolver.resolve(output_refs[i], [i] { return fmt::format("outputs[{}]", i); }));
  }
  for (std::size_t i = 0; i < bias_refs.size(); ++i) {
    spec.bias.push_back(resolver.resolve(bias_refs[i], [i] { return fmt::format("bias[{}]", i); }));
  }
  for (const auto& [ref, act] : activation_refs) {
    const NodeId v = resolver.resolve(ref, [] { return std::string("activations"); });
    if (!py::isinstance<py::str>(act)) {
      throw std::invalid_argument(
          fmt::format("activations: the activation of a node is a str such as 'relu', "
                      "'identity' or 'leaky_relu:0.01' (got {})",
                      repr_of(act)));
    }
    spec.activations.emplace_back(v, Activation::parse(act.cast<std::string>()));
  }
  if (!weights.is_none()) {
    const auto w = vector_argument<double>(weights, "weights");
    spec.weights = std::vector<double>(w.data(), w.data() + w.size());
  }
  spec.node_names = resolver.take_names();
  py::gil_scoped_release release;
  return Network(std::move(spec));
}

py::dict spec_dict(const Network& net) {
  const NetworkSpec s = net.spec();
  const auto& names = s.node_names;
  py::dict d;
  d["nodes"] = py::cast(names);
  py::list edges;
  for (const auto& [a, b] : s.edges) {
    edges.append(
        py::make_tuple(names[static_cast<std::size_t>(a)], names[static_cast<std::size_t>(b)]));
  }
  d["edges"] = edges;
  py::list outputs;
  for (const NodeId v : s.outputs) {
    outputs.append(names[static_cast<std::size_t>(v)]);
  }
  d["outputs"] = outputs;
  py::list bias;
  for (const NodeId v : s.bias) {
    bias.append(names[static_cast<std::size_t>(v)]);
  }
  d["bias"] = bias;
  py::dict acts;
  for (const auto& [v, a] : s.activations) {
    acts[py::str(names[static_cast<std::size_t>(v)])] = a.name();
  }
  d["activations"] = acts;
  if (s.weights) {
    d["weights"] = py::cast(*s.weights);
  } else {
    d["weights"] = py::none();
  }
  if (!s.edge_params.empty()) {
    d["params"] = py::cast(s.edge_params);
    d["fixed_weights"] = py::cast(s.fixed_weights);
    d["num_params"] = s.num_params;
  }
  return d;
}

template <class F>
auto node_view(F get) {
  return [get](const py::object& self) {
    const auto& net = self.cast<const Network&>();
    return view_array<NodeId>(get(net), self);
  };
}

void bind_network_structure(py::class_<Network, std::shared_ptr<Network>>& cls) {
  cls.def_property_readonly(
         "nodes", [](const Network& n) { return n.node_names(); }, "Node names, in node order.")
      .def_property_readonly("num_nodes", &Network::num_nodes, "m, the number of nodes.")
      .def_property_readonly("d", &Network::num_params,
                             "d, the number of parameters (theta's length; = num_edges with one "
                             "parameter per edge).")
      .def_property_readonly("num_params", &Network::num_params, "d (same as `d`).")
      .def_property_readonly("num_edges", &Network::num_edges, "The number of edges.")
      .def_property_readonly("one_parameter_per_edge", &Network::one_parameter_per_edge,
                             "True when edge k carries theta[k] for every k (file version 1).")
      .def_property_readonly(
          "params",
          [](const Network& n) {
            py::array_t<long long> out(static_cast<py::ssize_t>(n.num_edges()));
            auto w = out.mutable_unchecked<1>();
            for (EdgeId e = 0; e < n.num_edges(); ++e) {
              w(e) = n.edge_param(e);
            }
            return out;
          },
          "int64 array: the parameter each edge carries, -1 for a fixed edge (a copy).")
      .def_property_readonly(
          "fixed_weights",
          [](const Network& n) {
            py::array_t<double> out(static_cast<py::ssize_t>(n.num_edges()));
            auto w = out.mutable_unchecked<1>();
            for (EdgeId e = 0; e < n.num_edges(); ++e) {
              w(e) = n.fixed_weight(e);
            }
            return out;
          },
          "float64 array: the weight of each fixed edge, 0 for parameter edges (a copy).")
      .def_property_readonly("h", &Network::num_hidden, "h, the number of hidden nodes.")
      .def_property_readonly("num_hidden", &Network::num_hidden, "h (same as `h`).")
      .def_property_readonly(
          "edges",
          [](const Network& n) {
            const auto d = static_cast<py::ssize_t>(n.num_edges());
            py::array_t<NodeId> out({d, py::ssize_t{2}});
            auto w = out.mutable_unchecked<2>();
            for (py::ssize_t k = 0; k < d; ++k) {
              w(k, 0) = n.sources()[static_cast<std::size_t>(k)];
              w(k, 1) = n.targets()[static_cast<std::size_t>(k)];
            }
            return out;
          },
          "(d, 2) int32 array: row k = (source, target) node indices of edge k (a copy).")
      .def_property_readonly("sources", node_view([](const Network& n) { return n.sources(); }),
                             "int32 array (read-only view): the source node of each edge.")
      .def_property_readonly("targets", node_view([](const Network& n) { return n.targets(); }),
                             "int32 array (read-only view): the target node of each edge.")
      .def_property_readonly(
          "inputs", node_view([](const Network& n) { return n.inputs(); }),
          "int32 array: all input nodes (bias included), in node order; where paths start.")
      .def_property_readonly(
          "data_inputs", node_view([](const Network& n) { return n.data_inputs(); }),
          "int32 array: input nodes that are not bias nodes, in node order (columns of X).")
      .def_property_readonly("bias", node_view([](const Network& n) { return n.bias_nodes(); }),
                             "int32 array: the bias nodes (inputs of value 1), in node order.")
      .def_property_readonly("outputs", node_view([](const Network& n) { return n.outputs(); }),
                             "int32 array: output nodes in node order (columns of f(X)).")
      .def_property_readonly("hidden", node_view([](const Network& n) { return n.hidden(); }),
                             "int32 array: hidden nodes in node order.")
      .def_property_readonly(
          "topological_order", node_view([](const Network& n) { return n.topological_order(); }),
          "int32 array: a topological order (inputs first, then Kahn's algorithm taking the "
          "smallest node index first). Deterministic.")
      .def_property_readonly(
          "roles",
          [](const Network& n) {
            py::list out;
            for (NodeId v = 0; v < n.num_nodes(); ++v) {
              out.append(role_name(n.role(v)));
            }
            return out;
          },
          "Role of each node: 'input', 'hidden' or 'output'.")
      .def_property_readonly(
          "activations",
          [](const Network& n) {
            py::list out;
            for (NodeId v = 0; v < n.num_nodes(); ++v) {
              out.append(n.activation(v).name());
            }
            return out;
          },
          "Activation of each node: 'identity', 'relu' or 'leaky_relu:<slope>'.")
      .def_property_readonly(
          "weights",
          [](const py::object& self) -> py::object {
            const auto& n = self.cast<const Network&>();
            if (!n.has_weights()) {
              return py::none();
            }
            return view_array<double>(n.weights(), self);
          },
          "The stored theta (float64, read-only view), or None.")
      .def_property_readonly("has_weights", &Network::has_weights,
                             "True when the network stores weights.")
      .def_property_readonly("edges_increase_along_paths", &Network::edges_increase_along_paths,
                             "True when edge indices increase along every path (feed-forward "
                             "networks in PyTorch order): B then shares the path arrays.");
}

void bind_network_queries(py::class_<Network, std::shared_ptr<Network>>& cls) {
  cls.def(
         "role", [](const Network& n, NodeId v) { return role_name(n.role(v)); }, py::arg("v"),
         "Role of node v: 'input', 'hidden' or 'output'. IndexError for a bad index.")
      .def(
          "activation", [](const Network& n, NodeId v) { return n.activation(v).name(); },
          py::arg("v"), "Activation of node v.")
      .def("is_bias", &Network::is_bias, py::arg("v"), "True when node v is a bias input.")
      .def("is_designated_output", &Network::is_designated_output, py::arg("v"),
           "True when node v was designated as an output (sinks are outputs anyway).")
      .def("node_name", &Network::node_name, py::arg("v"), "Name of node v.")
      .def(
          "node_index",
          [](const Network& n, const std::string& name) {
            const auto v = n.find_node(name);
            if (!v) {
              throw py::key_error(fmt::format("no node named '{}'", name));
            }
            return *v;
          },
          py::arg("name"), "Index of the node with this name; KeyError if there is none.")
      .def("edge_label", &Network::edge_label, py::arg("k"), "'a -> d' for edge k.")
      .def(
          "in_edges",
          [](const py::object& self, NodeId v) {
            return view_array<EdgeId>(self.cast<const Network&>().in_edges(v), self);
          },
          py::arg("v"), "int32 array: incoming edges of v by increasing edge index.")
      .def(
          "out_edges",
          [](const py::object& self, NodeId v) {
            return view_array<EdgeId>(self.cast<const Network&>().out_edges(v), self);
          },
          py::arg("v"), "int32 array: outgoing edges of v by increasing edge index.")
      .def(
          "with_weights",
          [](const Network& n, const py::object& weights) {
            if (weights.is_none()) {
              return n.with_weights(std::nullopt);
            }
            const auto w = vector_argument<double>(weights, "weights");
            return n.with_weights(std::vector<double>(w.data(), w.data() + w.size()));
          },
          py::arg("weights"),
          "A copy of this network storing other weights (validated: d finite values), or none "
          "(None).")
      .def("spec", &spec_dict,
           "The spec the network was built from, as a dict with keys nodes, edges (pairs of "
           "names), outputs (designated), bias, activations (overrides), weights: "
           "Network(**net.spec()) rebuilds it.")
      .def(
          "to_json", [](const Network& n, int indent) { return network_to_json(n, indent); },
          py::arg("indent") = -1,
          "The network as pathlift-network v1 JSON (one line when indent < 0).")
      .def("__repr__",
           [](const Network& n) {
             return fmt::format(
                 "<pathlift.Network: {} nodes ({} inputs, {} hidden, {} output{}), {} edges{}{}>",
                 n.num_nodes(), n.inputs().size(), n.num_hidden(), n.outputs().size(),
                 n.outputs().size() == 1 ? "" : "s", n.num_edges(),
                 n.one_parameter_per_edge() ? std::string()
                                            : fmt::format(", {} parameters", n.num_params()),
                 n.has_weights() ? ", with weights" : "");
           })
      .def(py::pickle([](const Network& n) { return network_to_json(n); },
                      [](const std::string& text) { return parse_network(text); }));
}

}  // namespace

void bind_network(py::module_& m) {
  // A shared_ptr holder: a LayerNetwork hands out its cached DAG without a copy.
  py::class_<Network, std::shared_ptr<Network>> cls(m, "Network", R"doc(
An immutable, validated DAG ReLU network (docs/conventions.md#network): named nodes, edges in
parameter order (edge k carries theta[k]; parallel edges allowed), inputs (nodes without
incoming edge; bias inputs have value 1), outputs (sinks plus designated nodes), hidden nodes
(the rest), one activation per node (defaults: hidden ReLU, inputs and outputs identity).

Network(edges, nodes=None, *, outputs=None, bias=None, activations=None, weights=None)

- edges: a sequence of (source, target) pairs, or an int array of shape (d, 2). A node is a
  name (str) or a 0-based index (int).
- nodes: the node names in node order, or a node count n (names "0".."n-1"). When omitted:
  the names in order of first appearance (str references) or max index + 1 (int references).
- outputs: designated output nodes (sinks are outputs anyway; an output may feed others).
- bias: input nodes whose value is 1.
- activations: {node: "relu" | "identity" | "leaky_relu:<slope>"} overriding the defaults.
- weights: theta stored with the network (one per parameter), used when theta is omitted.
- params: parameters distinct from edges (file format version 2): one int per edge, the
  parameter it carries (several edges may share one), or -1 for a fixed edge whose weight is
  fixed_weights[k] (default 1). num_params: d (default: the largest parameter + 1). Without
  params, edge k carries theta[k].

Raises NetworkError (a ValueError) naming the culprits for a cycle, an isolated node, a
designated output without incoming edge, ... Complexity: O(m + d).

Example::

    net = pathlift.Network([("a", "d"), ("a", "f"), ("c", "d"), ("c", "f"),
                            ("d", "h"), ("f", "h"), ("g", "h")],
                           nodes=["a", "c", "g", "d", "f", "h"], bias=["g"])
)doc");
  cls.def(py::init(&make_network), py::arg("edges"), py::arg("nodes") = py::none(), py::kw_only(),
          py::arg("outputs") = py::none(), py::arg("bias") = py::none(),
          py::arg("activations") = py::none(), py::arg("weights") = py::none(),
          py::arg("params") = py::none(), py::arg("fixed_weights") = py::none(),
          py::arg("num_params") = py::none(),
          "Builds and validates a network (see the class docstring).");

  bind_network_structure(cls);
  bind_network_queries(cls);
}

}  // namespace pathlift::python
