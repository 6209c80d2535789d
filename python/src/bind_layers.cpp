// layers.hpp: the layer graph (Layer, LayerGraph), its shapes, the unroller, the ONNX reader and
// LayerNetwork (a network known by its layer graph, unrolled on demand).
// Weights are numpy float64 arrays. A layer's kind is its LayerKind's JSON name ("conv",
// "linear", ...: layer_kinds()) and its activation its name ("relu", "leaky_relu:0.1",
// "identity"), as activations are in Network(activations=...): strings, not enum classes,
// which scripts/stubgen.py and the stub tests do not model.

#include <pybind11/operators.h>
#include <pybind11/stl.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#ifdef __linux__
#include <sys/mman.h>
#endif

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common.hpp"
#include "pathlift/layers.hpp"
#include "pathlift/onnx.hpp"
#include "results.hpp"

namespace pathlift::python {

namespace {

using IndexList = std::vector<Index>;

std::string index_list(const IndexList& v) {
  return fmt::format("[{}]", fmt::join(v, ", "));
}

/// Layer(kind='conv', name='conv1', inputs=[0], ...): the fields that differ from the defaults.
std::string layer_repr(const Layer& l) {
  const Layer d;
  const auto number = [](Index value, Index fallback) {
    return value == fallback ? std::string() : std::to_string(value);
  };
  const auto list = [](const IndexList& v) { return v.empty() ? std::string() : index_list(v); };
  const std::pair<const char*, std::string> fields[] = {
      {"out_features", number(l.out_features, d.out_features)},
      {"out_channels", number(l.out_channels, d.out_channels)},
      {"groups", number(l.groups, d.groups)},
      {"kernel", list(l.kernel)},
      {"stride", list(l.stride)},
      {"padding", list(l.padding)},
      {"dilation", list(l.dilation)},
      {"output_padding", list(l.output_padding)},
      {"ceil_mode", l.ceil_mode == d.ceil_mode ? "" : "True"},
      {"count_include_pad", l.count_include_pad == d.count_include_pad ? "" : "False"},
      {"output_size", list(l.output_size)},
      {"axis", number(l.axis, d.axis)},
      {"indices", list(l.indices)},
      {"factor", l.factor == d.factor ? "" : fmt::format("{}", l.factor)},
      {"k", number(l.k, d.k)},
      {"group_size", number(l.group_size, d.group_size)},
      {"descending", l.descending == d.descending ? "" : "True"},
      {"align_corners", l.align_corners == d.align_corners ? "" : "True"},
      {"scales", l.scales.empty() ? "" : fmt::format("[{}]", fmt::join(l.scales, ", "))},
      {"activation", l.activation == d.activation ? "" : "'" + l.activation.name() + "'"},
      {"weight_offset", number(l.weight_offset, d.weight_offset)},
      {"bias_offset", number(l.bias_offset, d.bias_offset)},
  };
  std::string out = fmt::format("Layer(kind='{}', name='{}', inputs={}", to_string(l.kind), l.name,
                                index_list(l.inputs));
  for (const auto& [name, value] : fields) {
    if (!value.empty()) {
      out += fmt::format(", {}={}", name, value);
    }
  }
  return out + ")";
}

/// A per-sample shape argument: None (the model's own) or a sequence of sizes.
IndexList shape_argument(const py::object& shape) {
  return shape.is_none() ? IndexList{} : shape.cast<IndexList>();
}

/// A copy of `n` doubles in a std::vector advised to use transparent huge pages before its
/// first touch: the weights of a 10 M-parameter model fault 20,000 4 KiB pages otherwise, 10x
/// the copy itself (the unroller's resize_huge does the same for the edge arrays).
std::vector<double> huge_copy(const double* data, std::size_t n) {
  std::vector<double> v;
  v.reserve(n);
#ifdef __linux__
  constexpr std::uintptr_t huge = std::uintptr_t{2} << 20;
  const auto begin = reinterpret_cast<std::uintptr_t>(v.data());
  const std::uintptr_t end = begin + n * sizeof(double);
  const std::uintptr_t first = (begin + huge - 1) & ~(huge - 1);
  if (end > first + huge) {
    // Advice only: it fails harmlessly where huge pages are off.
    (void)madvise(reinterpret_cast<void*>(first), (end - first) & ~(huge - 1), MADV_HUGEPAGE);
  }
#endif
  v.assign(data, data + n);
  return v;
}

std::optional<std::vector<double>> weights_argument(const py::object& weights) {
  if (weights.is_none()) {
    return std::nullopt;
  }
  const auto w = vector_argument<double>(weights, "weights");
  return huge_copy(w.data(), static_cast<std::size_t>(w.size()));
}

std::optional<py::array_t<double>> weights_array(const LayerGraph& g) {
  if (!g.weights) {
    return std::nullopt;
  }
  return owning_array(huge_copy(g.weights->data(), g.weights->size()));
}

/// Python's Layer docstring: the kinds, each described in one line (describe()).
const char* layer_doc() {
  static const std::string doc = [] {
    std::string out = R"doc(
One layer of a LayerGraph (layers.hpp): kind is one of layer_kinds(). Only the fields of its
kind are read; the others keep their defaults. Shapes are per sample ({F}, {C, L} or
{C, H, W}); parameter blocks start at weight_offset / bias_offset in theta (-1: none),
row-major. The kinds:
)doc";
    for (const LayerKind k : layer_kinds()) {
      out += fmt::format("  {:<18}{}\n", to_string(k), describe(k));
    }
    out += R"doc(
Layer(kind, name, inputs=(), *, out_features=0, out_channels=0, groups=1, kernel=(),
      stride=(), padding=(), dilation=(), output_padding=(), ceil_mode=False,
      count_include_pad=True, output_size=(), axis=0, indices=(), factor=1.0,
      activation="identity", weight_offset=-1, bias_offset=-1, k=1, group_size=0,
      descending=False, align_corners=False, scales=())

Example::

    pathlift.Layer("conv", "conv1", [0], out_channels=6, kernel=[5, 5], weight_offset=0,
                   bias_offset=150)
)doc";
    return out;
  }();
  return doc.c_str();
}

/// The docstring of Layer's property `key`: the kinds that have the field, and what it means.
const char* field_doc(std::string_view key) {
  static const std::vector<std::pair<std::string, std::string>> docs = [] {
    std::vector<std::pair<std::string, std::string>> out;
    for (const LayerField& f : layer_fields()) {
      std::vector<std::string> kinds;
      for (const LayerKind k : f.kinds) {
        kinds.push_back(to_string(k));
      }
      out.emplace_back(f.key, fmt::format("{}: {}.", fmt::join(kinds, ", "), f.doc));
    }
    return out;
  }();
  for (const auto& [k, doc] : docs) {
    if (k == key) {
      return doc.c_str();
    }
  }
  throw std::logic_error(fmt::format("Layer has no field {}", key));
}

void bind_layer(py::module_& m) {
  const Layer defaults;  // the keywords' defaults are Layer's own
  py::class_<Layer> cls(m, "Layer", layer_doc());
  cls.def(
      py::init([](const std::string& kind, std::string name, IndexList inputs, Index out_features,
                  Index out_channels, Index groups, IndexList kernel, IndexList stride,
                  IndexList padding, IndexList dilation, IndexList output_padding, bool ceil_mode,
                  bool count_include_pad, IndexList output_size, Index axis, IndexList indices,
                  double factor, const std::string& activation, Index weight_offset,
                  Index bias_offset, Index k, Index group_size, bool descending, bool align_corners,
                  std::vector<double> scales) {
        Layer l;
        l.kind = parse_layer_kind(kind);
        l.name = std::move(name);
        l.inputs = std::move(inputs);
        l.out_features = out_features;
        l.out_channels = out_channels;
        l.groups = groups;
        l.kernel = std::move(kernel);
        l.stride = std::move(stride);
        l.padding = std::move(padding);
        l.dilation = std::move(dilation);
        l.output_padding = std::move(output_padding);
        l.ceil_mode = ceil_mode;
        l.count_include_pad = count_include_pad;
        l.output_size = std::move(output_size);
        l.axis = axis;
        l.indices = std::move(indices);
        l.factor = factor;
        l.activation = Activation::parse(activation);
        l.weight_offset = weight_offset;
        l.bias_offset = bias_offset;
        l.k = k;
        l.group_size = group_size;
        l.descending = descending;
        l.align_corners = align_corners;
        l.scales = std::move(scales);
        return l;
      }),
      py::arg("kind"), py::arg("name"), py::arg("inputs") = IndexList{}, py::kw_only(),
      py::arg("out_features") = defaults.out_features,
      py::arg("out_channels") = defaults.out_channels, py::arg("groups") = defaults.groups,
      py::arg("kernel") = IndexList{}, py::arg("stride") = IndexList{},
      py::arg("padding") = IndexList{}, py::arg("dilation") = IndexList{},
      py::arg("output_padding") = IndexList{}, py::arg("ceil_mode") = defaults.ceil_mode,
      py::arg("count_include_pad") = defaults.count_include_pad,
      py::arg("output_size") = IndexList{}, py::arg("axis") = defaults.axis,
      py::arg("indices") = IndexList{}, py::arg("factor") = defaults.factor,
      py::arg("activation") = defaults.activation.name(),
      py::arg("weight_offset") = defaults.weight_offset,
      py::arg("bias_offset") = defaults.bias_offset, py::arg("k") = defaults.k,
      py::arg("group_size") = defaults.group_size, py::arg("descending") = defaults.descending,
      py::arg("align_corners") = defaults.align_corners, py::arg("scales") = std::vector<double>{},
      "A layer (see the class docstring); activation is 'identity', 'relu' or "
      "'leaky_relu:<slope>'.");
  cls.def_property(
         "kind", [](const Layer& l) { return to_string(l.kind); },
         [](Layer& l, const std::string& kind) { l.kind = parse_layer_kind(kind); },
         "The kind's name: one of layer_kinds() (FormatError listing them otherwise).")
      .def_readwrite("name", &Layer::name,
                     "Unique, non-empty: names the layer's nodes <name>[c,h,w].")
      .def_readwrite("inputs", &Layer::inputs, "Indices of earlier layers (a list; a copy).")
      .def_readwrite("out_features", &Layer::out_features, field_doc("out_features"))
      .def_readwrite("out_channels", &Layer::out_channels, field_doc("out_channels"))
      .def_readwrite("groups", &Layer::groups, field_doc("groups"))
      .def_readwrite("kernel", &Layer::kernel, field_doc("kernel"))
      .def_readwrite("stride", &Layer::stride, field_doc("stride"))
      .def_readwrite("padding", &Layer::padding, field_doc("padding"))
      .def_readwrite("dilation", &Layer::dilation, field_doc("dilation"))
      .def_readwrite("output_padding", &Layer::output_padding, field_doc("output_padding"))
      .def_readwrite("ceil_mode", &Layer::ceil_mode, field_doc("ceil_mode"))
      .def_readwrite("count_include_pad", &Layer::count_include_pad, field_doc("count_include_pad"))
      .def_readwrite("output_size", &Layer::output_size, field_doc("output_size"))
      .def_readwrite("axis", &Layer::axis, field_doc("axis"))
      .def_readwrite("indices", &Layer::indices, field_doc("indices"))
      .def_readwrite("factor", &Layer::factor, field_doc("factor"))
      .def_readwrite("k", &Layer::k, field_doc("k"))
      .def_readwrite("group_size", &Layer::group_size, field_doc("group_size"))
      .def_readwrite("descending", &Layer::descending, field_doc("descending"))
      .def_readwrite("align_corners", &Layer::align_corners, field_doc("align_corners"))
      .def_readwrite("scales", &Layer::scales, field_doc("scales"))
      .def_property(
          "activation", [](const Layer& l) { return l.activation.name(); },
          [](Layer& l, const std::string& name) { l.activation = Activation::parse(name); },
          field_doc("activation"))
      .def_readwrite("weight_offset", &Layer::weight_offset, field_doc("weight_offset"))
      .def_readwrite("bias_offset", &Layer::bias_offset, field_doc("bias_offset"))
      .def(py::self == py::self)  // NOLINT(misc-redundant-expression)
      .def("__repr__", &layer_repr)
      .def("__copy__", [](const Layer& l) { return l; })
      .def(
          "__deepcopy__", [](const Layer& l, const py::dict&) { return l; }, py::arg("memo"));
}

void bind_graph(py::module_& m) {
  py::class_<LayerGraph> cls(m, "LayerGraph", R"doc(
A network as layers (layers.hpp): layers[0] is the input (kind 'input'), the others in a
topological order, each naming earlier layers as inputs; outputs are the layers whose entries
are the network's outputs (concatenated); num_params is d, the length of theta; weights is
theta (d numbers) when known. unroll(graph) gives the Network.

LayerGraph(input_shape=(), layers=(), outputs=(), num_params=0, weights=None)

The list fields are copies: assign a whole list (graph.layers = [...]) to change them.
Pickles through its JSON (layer_graph_to_json).
)doc");
  cls.def(py::init([](IndexList input_shape, std::vector<Layer> layers, IndexList outputs,
                      Index num_params, const py::object& weights) {
            LayerGraph g;
            g.input_shape = std::move(input_shape);
            g.layers = std::move(layers);
            g.outputs = std::move(outputs);
            g.num_params = num_params;
            g.weights = weights_argument(weights);
            return g;
          }),
          py::arg("input_shape") = IndexList{}, py::arg("layers") = std::vector<Layer>{},
          py::arg("outputs") = IndexList{}, py::arg("num_params") = 0,
          py::arg("weights") = py::none(), "A layer graph (see the class docstring).");
  cls.def_readwrite("input_shape", &LayerGraph::input_shape, "Per sample, e.g. [3, 32, 32].")
      .def_readwrite("layers", &LayerGraph::layers, "The layers (a list of copies).")
      .def_readwrite("outputs", &LayerGraph::outputs,
                     "The layers whose entries are the outputs, concatenated.")
      .def_readwrite("num_params", &LayerGraph::num_params, "d, the length of theta.")
      .def_readonly("warnings", &LayerGraph::warnings,
                    "What the import noticed that is not an error (an ONNX export that folded "
                    "batch norms into convolutions).")
      .def_property(
          "weights", &weights_array,
          [](LayerGraph& g, const py::object& weights) { g.weights = weights_argument(weights); },
          "theta as a float64 array (a copy), or None.")
      .def(py::self == py::self)  // NOLINT(misc-redundant-expression)
      .def(
          "to_json", [](const LayerGraph& g, int indent) { return layer_graph_to_json(g, indent); },
          py::arg("indent") = -1, "layer_graph_to_json(self, indent).")
      .def("__repr__",
           [](const LayerGraph& g) {
             return fmt::format("<pathlift.LayerGraph: {} layers, input {}, d = {}{}>",
                                g.layers.size(), index_list(g.input_shape), g.num_params,
                                g.weights ? ", with weights" : "");
           })
      .def(py::pickle([](const LayerGraph& g) { return layer_graph_to_json(g); },
                      [](const std::string& text) { return parse_layer_graph(text); }));

  py::class_<UnrolledSize> unrolled(m, "UnrolledSize", "Node and edge counts of unroll(graph).");
  def_fields(unrolled, field("nodes", &UnrolledSize::nodes, "Nodes of the unrolled network."),
             field("edges", &UnrolledSize::edges, "Edges of the unrolled network."));
  unrolled.def("__repr__", [](const UnrolledSize& s) {
    return fmt::format("UnrolledSize(nodes={}, edges={})", s.nodes, s.edges);
  });
}

std::string network_repr(const py::object& self) {
  const auto& n = self.cast<const LayerNetworkObject&>();
  std::string sizes;
  try {
    const py::gil_scoped_release release;
    const UnrolledSize size = n.model.size();
    sizes = fmt::format("unrolled {} nodes and {} edges{}", size.nodes, size.edges,
                        n.model.is_unrolled() ? "" : " (not unrolled yet)");
  } catch (const std::exception& e) {  // a graph that does not unroll (an input reaching no output)
    sizes = "does not unroll";
  }
  const LayerGraph& g = *n.model.layer_graph();
  return fmt::format("<pathlift.{}: {} layers, d = {}, {}{}>",
                     py::str(self.get_type().attr("__name__")).cast<std::string>(), g.layers.size(),
                     g.num_params, sizes, g.weights ? ", with weights" : "");
}

LayerNetworkObject make_layer_network(LayerGraph graph, std::size_t max_memory) {
  const py::gil_scoped_release release;
  return {Model(std::move(graph)), max_memory};
}

void bind_layer_network(py::module_& m) {
  py::class_<LayerNetworkObject> cls(m, "LayerNetwork", R"doc(
A network known by its layer graph (model.hpp's Model of a LayerGraph): what from_onnx
returns, and what from_torch's network of a module derives from. d is the number of
parameters, theta's length.

LayerNetwork(graph, *, max_memory=0)

- graph: a LayerGraph, validated (layer_shapes) and copied.
- max_memory: the bytes its unrolled DAG may take when a function that needs edges unrolls it
  without a max_memory of its own (0: half of physical RAM).

The path-free functions -- count_paths, count_paths_total, path_norm, path_norm_gradient,
path_magnitude, kernel_diagonal, kernel_trace, kernel_matvec, kernel_top_eigenvalues -- run on
the layer graph, layer by layer, never unrolling it: a torchvision resnet18 at 3x224x224
(1.7e9 edges once unrolled) is fine. The functions that need edges (paths, path_lifting,
skeleton, jacobian, rank, forward, linearize, kernel, ...) take a LayerNetwork too and unroll
it, once (is_unrolled), within their max_memory (TooLarge, a MemoryError, with the node and
edge counts otherwise). The DAG itself is net.unrolled(): nothing else unrolls, and the
Network's attributes (sources, node_names, h, ...) are read from it. num_nodes and num_edges
are computed without unrolling. Pickles as its graph and max_memory.

Example::

    net = pathlift.from_onnx("resnet18.onnx", input_shape=(3, 224, 224))
    pathlift.path_norm(net, s=2.0).norm            # no edge built
    pathlift.kernel_diagonal(net)                   # d entries, same
    net.is_unrolled                                 # False
)doc");
  cls.def(py::init(&make_layer_network), py::arg("graph"), py::kw_only(), py::arg("max_memory") = 0,
          "Validates the graph (NetworkError naming the layer) and keeps a copy of it.");
  cls.def_property_readonly(
         "layer_graph", [](const LayerNetworkObject& n) { return *n.model.layer_graph(); },
         "The LayerGraph (a copy, weights included).")
      .def_property_readonly(
          "num_layers",
          [](const LayerNetworkObject& n) { return n.model.layer_graph()->layers.size(); },
          "The number of layers, the input included.")
      .def_property_readonly(
          "d", [](const LayerNetworkObject& n) { return n.model.num_params(); },
          "d, the number of parameters (theta's length).")
      .def_property_readonly(
          "num_params", [](const LayerNetworkObject& n) { return n.model.num_params(); },
          "d (same as `d`).")
      .def_property_readonly(
          "weights",
          [](const py::object& self) -> py::object {
            const auto& n = self.cast<const LayerNetworkObject&>();
            if (!n.model.has_weights()) {
              return py::none();
            }
            return view_array<double>(n.model.weights(), self);
          },
          "The stored theta (float64, read-only view), or None. A function given no theta uses "
          "it.")
      .def_property_readonly(
          "has_weights", [](const LayerNetworkObject& n) { return n.model.has_weights(); },
          "True when the graph holds weights.")
      .def_property_readonly(
          "warnings", [](const LayerNetworkObject& n) { return n.model.warnings(); },
          "What the import noticed that is not an error (an ONNX export whose batch norms were "
          "folded into convolutions, so that theta is not the PyTorch model's parameters).")
      .def_property_readonly(
          "unrolled_size",
          [](const LayerNetworkObject& n) {
            const py::gil_scoped_release release;
            return n.model.size();
          },
          "UnrolledSize (nodes, edges) of the unrolled DAG, computed once without unrolling.")
      .def_property_readonly(
          "num_nodes",
          [](const LayerNetworkObject& n) {
            const py::gil_scoped_release release;
            return n.model.size().nodes;
          },
          "m, the number of nodes of the unrolled DAG (without unrolling).")
      .def_property_readonly(
          "num_edges",
          [](const LayerNetworkObject& n) {
            const py::gil_scoped_release release;
            return n.model.size().edges;
          },
          "The number of edges of the unrolled DAG (without unrolling).")
      .def_property_readonly(
          "is_unrolled",
          [](const LayerNetworkObject& n) {
            const py::gil_scoped_release release;
            return n.model.is_unrolled();
          },
          "True once the DAG has been made (by unrolled() or a function that needs edges).")
      .def_property_readonly(
          "max_memory", [](const LayerNetworkObject& n) { return n.max_memory; },
          "The bytes the unrolled DAG may take when a function gives no limit (0: half of "
          "physical RAM).")
      .def(
          "unrolled",
          [](const py::object& self, std::size_t max_memory, int threads,
             const py::object& progress) {
            const auto& n = self.cast<const LayerNetworkObject&>();
            const EngineOptions o = engine_options(
                threads, max_memory != 0 ? max_memory : n.max_memory, progress, "unrolling");
            std::shared_ptr<const Network> dag;
            {
              const py::gil_scoped_release release;
              dag = n.model.unrolled(o);
            }
            return std::const_pointer_cast<Network>(dag);
          },
          py::kw_only(), py::arg("max_memory") = 0, py::arg("threads") = 0,
          py::arg("progress") = py::none(),
          "The unrolled DAG (a Network, shared with this object, not a copy): one node per "
          "tensor entry that needs one, edges carrying parameter indices or fixed weights "
          "(docs/layers.md). Made on the first call, under max_memory bytes (0: the limit given "
          "at construction), and kept. TooLarge (MemoryError) with its nodes and edges when it "
          "would not fit.")
      .def(
          "__getattr__",
          [](const py::object& self, const std::string& name) -> py::object {
            const std::string type = py::str(self.get_type().attr("__name__")).cast<std::string>();
            if (!name.starts_with("_") && py::hasattr(py::type::of<Network>(), name.c_str())) {
              const auto size = self.cast<const LayerNetworkObject&>().model.size();
              throw py::attribute_error(fmt::format(
                  "'{0}' object has no attribute '{1}': '{1}' is an attribute of the unrolled "
                  "DAG, a Network: net.unrolled().{1} (unrolling makes {2} nodes and {3} edges)",
                  type, name, size.nodes, size.edges));
            }
            throw py::attribute_error(fmt::format("'{}' object has no attribute '{}'", type, name));
          },
          py::arg("name"))
      .def("__repr__", &network_repr)
      .def(py::pickle(
          [](const LayerNetworkObject& n) {
            return py::make_tuple(*n.model.layer_graph(), n.max_memory);
          },
          [](const py::tuple& state) {
            if (state.size() != 2) {
              throw std::invalid_argument("LayerNetwork: a bad pickle state");
            }
            return make_layer_network(state[0].cast<LayerGraph>(), state[1].cast<std::size_t>());
          }));
}

}  // namespace

void bind_layers(py::module_& m) {
  m.def(
      "layer_kinds",
      [] {
        std::vector<std::string> names;
        for (const LayerKind k : layer_kinds()) {
          names.push_back(to_string(k));
        }
        return names;
      },
      "The names of the layer kinds (LayerKind), in declaration order: a Layer's kind.");
  bind_layer(m);
  bind_graph(m);
  m.def(
      "layer_shapes",
      [](const LayerGraph& g) {
        std::vector<py::tuple> out;
        for (const auto& s : layer_shapes(g)) {
          out.push_back(py::tuple(py::cast(s)));
        }
        return out;
      },
      py::arg("graph"),
      "The output shape of every layer (a tuple per layer, without the batch dimension), "
      "validating the graph. Raises NetworkError (ValueError) naming the layer: a bad input, a "
      "shape mismatch, a kernel larger than its input, a parameter block outside theta, ... "
      "Complexity: O(layers).");
  m.def(
      "unroll",
      [](const LayerGraph& graph, std::size_t max_memory, int threads, const py::object& progress) {
        const EngineOptions o = engine_options(threads, max_memory, progress, "unroll");
        const py::gil_scoped_release release;
        return unroll(graph, o);
      },
      py::arg("graph"), py::kw_only(), py::arg("max_memory") = 0, py::arg("threads") = 0,
      py::arg("progress") = py::none(),
      "The Network of a layer graph: one node per tensor entry that needs one, edges carrying "
      "parameter indices (theta = the graph's parameters, d = num_params) or fixed weights "
      "(skips, average pools, max pools); weights = graph.weights. Input nodes x[c,h,w] are the "
      "data columns in row-major order; outputs y0, y1, ... the model's flattened outputs. "
      "Raises what layer_shapes raises; TooLarge (MemoryError) over max_memory bytes (0: half "
      "of physical RAM). A LayerNetwork unrolls once and keeps the DAG: net.unrolled().");
  m.def(
      "unrolled_size",
      [](const LayerGraph& graph, std::size_t max_memory) {
        return unrolled_size(graph, EngineOptions{.max_memory = max_memory});
      },
      py::arg("graph"), py::kw_only(), py::arg("max_memory") = 0,
      py::call_guard<py::gil_scoped_release>(),
      "Node and edge counts of unroll(graph), computed without unrolling (O(layers + entries) "
      "time, about 12 bytes per tensor entry; TooLarge (MemoryError) before any per-entry work "
      "when that exceeds max_memory bytes, 0: half of physical RAM).");
  m.def(
      "read_onnx",
      [](const py::object& path, const py::object& input_shape) {
        const std::string p = fspath(path);
        const IndexList shape = shape_argument(input_shape);
        py::gil_scoped_release release;
        return read_onnx(p, shape);
      },
      py::arg("path"), py::arg("input_shape") = py::none(),
      "Reads an ONNX model file into a LayerGraph (theta = the initializers in graph order, "
      "BatchNormalization's scale and bias standing for a and b). input_shape (per sample) "
      "overrides the model's, needed when it is symbolic. Raises UnsupportedModelError "
      "(ValueError) listing every unsupported operator, FormatError for a file that is not "
      "ONNX.");
  py::class_<OnnxOperator> op(m, "OnnxOperator",
                              "An ONNX operator (domain ai.onnx) that read_onnx reads: one entry "
                              "of onnx_operators().");
  def_fields(
      op, field("name", &OnnxOperator::name, "Its op_type."),
      field("first_opset", &OnnxOperator::first_opset, "The first opset read."),
      field("last_opset", &OnnxOperator::last_opset, "The last opset read."),
      field("min_inputs", &OnnxOperator::min_inputs, "The fewest inputs."),
      field("max_inputs", &OnnxOperator::max_inputs, "The most inputs; -1: no bound."),
      field("min_outputs", &OnnxOperator::min_outputs, "The fewest outputs."),
      field("max_outputs", &OnnxOperator::max_outputs, "The most outputs; -1: no bound."),
      field("attributes", &OnnxOperator::attributes, "The attributes read, comma-separated."),
      field("becomes", &OnnxOperator::becomes, "What it becomes in the layer graph."),
      field("folds", &OnnxOperator::folds,
            "Whether it is evaluated at import when its inputs are constants."));
  op.def("__repr__",
         [](const OnnxOperator& o) { return "<pathlift.OnnxOperator " + o.name + ">"; });
  m.def("onnx_operators", &onnx_operators,
        "The ONNX operators read_onnx reads, by name (docs/onnx-operators.md): an operator outside "
        "them is refused by name.");
  m.def(
      "parse_onnx",
      [](const py::bytes& data, const py::object& input_shape) {
        const std::string_view bytes = data;
        const IndexList shape = shape_argument(input_shape);
        py::gil_scoped_release release;
        return parse_onnx(bytes, shape);
      },
      py::arg("data"), py::arg("input_shape") = py::none(),
      "read_onnx of a serialized ModelProto (model.SerializeToString()).");
  m.def("layer_graph_to_json", &layer_graph_to_json, py::arg("graph"), py::arg("indent") = -1,
        py::call_guard<py::gil_scoped_release>(),
        "The layer graph as JSON (\"format\": \"pathlift-layers\", \"version\": 1); one line when "
        "indent < 0.");
  m.def(
      "parse_layer_graph", [](const std::string& text) { return parse_layer_graph(text); },
      py::arg("text"), py::call_guard<py::gil_scoped_release>(),
      "Parses pathlift-layers JSON. Raises FormatError (ValueError) naming the key, "
      "NetworkError (ValueError) for an invalid graph.");
  bind_layer_network(m);
}

}  // namespace pathlift::python
