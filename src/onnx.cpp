// read_onnx() and parse_onnx() of layers.hpp: an ONNX model as a layer graph (docs/layers.md,
// "ONNX"). The importer's second pass, which builds the layers; the first pass (the refusal
// of every unsupported operation at once) and theta's layout are in detail/onnx_support.cpp.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "pathlift/error.hpp"
#include "pathlift/io.hpp"
#include "pathlift/layers.hpp"
#include "src/detail/onnx_import.hpp"

namespace pathlift {
namespace detail {

LayerGraph Importer::run() {
  for (int i = 0; i < m_g.node_size(); ++i) {
    check_arity(m_g.node(i), i);
  }
  std::vector<std::string> problems;
  for (int i = 0; i < m_g.node_size(); ++i) {
    const NodeProto& n = m_g.node(i);
    if (const std::string why = check(n); !why.empty()) {
      problems.push_back(fmt::format("{} at '{}'{}", n.op_type(), node_name(n, i),
                                     why == "-" ? "" : " (" + why + ")"));
    }
  }
  if (!problems.empty()) {
    std::string list;
    for (const auto& p : problems) {
      list += (list.empty() ? "" : ", ") + p;
    }
    throw UnsupportedModel("unsupported operations: " + list);
  }
  for (int i = 0; i < m_g.node_size(); ++i) {
    build(m_g.node(i), i);
  }
  m_graph.outputs.clear();
  for (const auto& out : m_g.output()) {
    m_graph.outputs.push_back(layer_of(out.name(), "the graph output"));
  }
  assign_parameters();
  layer_shapes(m_graph);
  return std::move(m_graph);
}

std::string Importer::node_name(const NodeProto& n, int index) {
  if (!n.name().empty()) {
    return n.name();
  }
  return n.output_size() > 0 && !n.output(0).empty() ? n.output(0)
                                                     : fmt::format("{}_{}", n.op_type(), index);
}

Index Importer::layer_of(const std::string& tensor, const std::string& where) const {
  const auto it = m_layer_of.find(tensor);
  if (it == m_layer_of.end()) {
    throw UnsupportedModel(fmt::format(
        "{} reads tensor '{}', which is not computed from the data input", where, tensor));
  }
  return it->second;
}

Index Importer::add(Layer layer, const NodeProto& n, int index) {
  std::string name = node_name(n, index);
  if (name == "x") {
    name = "x_";
  }
  const int copies = m_names[name]++;
  layer.name = copies == 0 ? name : fmt::format("{}#{}", name, copies + 1);
  if (layer.kind == LayerKind::linear || layer.kind == LayerKind::conv ||
      layer.kind == LayerKind::batch_norm) {
    layer.weight_offset = 0;  // placeholders until assign_parameters()
    layer.bias_offset = n.input_size() > 2 && !n.input(2).empty() ? 0 : -1;
  }
  m_graph.layers.push_back(std::move(layer));
  const auto l = static_cast<Index>(m_graph.layers.size()) - 1;
  // Shapes so far: parameter offsets are assigned at the end, so theta is unbounded here.
  m_graph.outputs = {l};
  m_graph.num_params = Index{1} << 60;
  m_shapes.push_back(layer_shapes(m_graph).back());
  m_layer_of[n.output(0)] = l;
  return l;
}

void Importer::use(Index l, bool bias, const std::string& init, std::vector<double> values) {
  m_uses.push_back({l, bias, init, std::move(values), nullptr});
}

void Importer::use(Index l, bool bias, const std::string& init) {
  m_uses.push_back({l, bias, init, {}, m_init.at(init)});
}

[[noreturn]] void Importer::mismatch(const NodeProto& n, int index, const std::string& what) const {
  throw NetworkError(
      fmt::format("ONNX node '{}' ({}): {}", node_name(n, index), n.op_type(), what));
}

void Importer::build(const NodeProto& n, int index) {
  const std::string& op = n.op_type();
  if (op == "Constant" || (op == "Identity" && is_const(n.input(0)))) {
    return;
  }
  const auto in = [&](int i) {
    return layer_of(n.input(i), fmt::format("ONNX node '{}'", node_name(n, index)));
  };
  const auto shape = [&](int i) { return m_shapes[static_cast<std::size_t>(in(i))]; };
  if (op == "Identity" || op == "Dropout" ||
      (op == "Pad" && std::ranges::all_of(*pad_amounts(n), [](Index p) { return p == 0; }))) {
    m_layer_of[n.output(0)] = in(0);
    return;
  }
  if (op == "Pad") {
    m_pads[n.output(0)] = {n.input(0), *pad_amounts(n)};
    return;
  }
  Layer l;
  if (op == "Gemm" || op == "MatMul") {
    const TensorProto& w = *m_init.at(n.input(1));
    if (w.dims_size() != 2) {
      mismatch(n, index, fmt::format("weight '{}' is not a matrix", n.input(1)));
    }
    const bool trans = op == "Gemm" && int_attr(n, "transB", 0) != 0;
    const Index out = trans ? w.dims(0) : w.dims(1);
    const Index features = trans ? w.dims(1) : w.dims(0);
    if (shape(0) != std::vector<Index>{features}) {
      mismatch(n, index,
               fmt::format("weight '{}' takes {} features but the input has shape {}", n.input(1),
                           features, shape_text(shape(0))));
    }
    l.kind = LayerKind::linear;
    l.inputs = {in(0)};
    l.out_features = out;
    const Index layer = add(std::move(l), n, index);
    if (trans) {
      use(layer, false, n.input(1));
    } else {  // (in, out) -> pathlift's (out, in)
      const std::vector<double> values = tensor_values(w);
      std::vector<double> t(values.size());
      for (Index i = 0; i < features; ++i) {
        for (Index o = 0; o < out; ++o) {
          t[static_cast<std::size_t>(o * features + i)] =
              values[static_cast<std::size_t>(i * out + o)];
        }
      }
      use(layer, false, n.input(1), std::move(t));
    }
    if (n.input_size() > 2 && !n.input(2).empty()) {
      bias(n, index, layer, n.input(2), out);
    }
    return;
  }
  if (op == "Add" && (m_init.count(n.input(0)) != 0 || m_init.count(n.input(1)) != 0)) {
    // The bias of the MatMul before it.
    const bool first = m_init.count(n.input(0)) != 0;
    const Index layer = in(first ? 1 : 0);
    bias(n, index, layer, n.input(first ? 0 : 1),
         m_graph.layers[static_cast<std::size_t>(layer)].out_features);
    m_layer_of[n.output(0)] = layer;
    return;
  }
  if (op == "Add" || op == "Sub" || op == "Concat") {
    l.kind = op == "Add" ? LayerKind::add : op == "Sub" ? LayerKind::sub : LayerKind::concat;
    for (int i = 0; i < n.input_size(); ++i) {
      l.inputs.push_back(in(i));
    }
    if (op == "Concat") {
      const auto rank = static_cast<Index>(shape(0).size());
      Index axis = int_attr(n, "axis", 0);
      axis = axis < 0 ? axis + rank + 1 : axis;
      if (axis < 1) {
        throw UnsupportedModel(
            fmt::format("unsupported operations: Concat at '{}' (along the "
                        "batch dimension)",
                        node_name(n, index)));
      }
      l.axis = axis - 1;
    }
    add(std::move(l), n, index);
    return;
  }
  if (op == "Relu" || op == "LeakyRelu") {
    l.kind = LayerKind::activation;
    l.inputs = {in(0)};
    l.activation =
        op == "Relu" ? Activation::relu() : Activation::leaky_relu(float_attr(n, "alpha", 0.01));
    add(std::move(l), n, index);
    return;
  }
  if (op == "Flatten" || op == "Reshape") {
    flatten(n, index, shape(0));
    l.kind = LayerKind::flatten;
    l.inputs = {in(0)};
    add(std::move(l), n, index);
    return;
  }
  if (op == "BatchNormalization") {
    batch_norm(n, index, in(0), shape(0));
    return;
  }
  window(n, index);
}

void Importer::bias(const NodeProto& n, int index, Index layer, const std::string& name,
                    Index out) {
  const TensorProto& b = *m_init.at(name);
  if (tensor_size(b) != out || b.dims_size() > 2) {
    mismatch(n, index, fmt::format("bias '{}' has {} entries, not {}", name, tensor_size(b), out));
  }
  use(layer, true, name);
}

void Importer::flatten(const NodeProto& n, int index, const std::vector<Index>& shape) {
  const auto rank = static_cast<Index>(shape.size());
  Index entries = 1;
  for (const Index x : shape) {
    entries *= x;
  }
  bool ok = true;
  if (n.op_type() == "Flatten") {
    const Index axis = int_attr(n, "axis", 1);
    ok = (axis < 0 ? axis + rank + 1 : axis) == 1;
  } else {
    const std::vector<double> t = tensor_values(*constant(n.input(1)));
    const auto a = static_cast<Index>(t[0]);
    const auto b = static_cast<Index>(t[1]);
    ok = (a == -1 && b == entries) || ((a == 0 || a == 1) && (b == entries || b == -1));
  }
  if (!ok) {
    throw UnsupportedModel(
        fmt::format("unsupported operations: {} at '{}' (not a flatten of the input of shape {})",
                    n.op_type(), node_name(n, index), shape_text(shape)));
  }
}

void Importer::batch_norm(const NodeProto& n, int index, Index input,
                          const std::vector<Index>& shape) {
  std::vector<std::vector<double>> p;
  for (int i = 1; i < 5; ++i) {
    p.push_back(tensor_values(*m_init.at(n.input(i))));
    if (std::cmp_not_equal(p.back().size(), shape[0])) {
      mismatch(n, index,
               fmt::format("'{}' has {} entries for {} channels", n.input(i), p.back().size(),
                           shape[0]));
    }
  }
  // Stored as a float in the file, as PyTorch's exporter writes it.
  const double eps = float_attr(n, "epsilon", 1e-5);
  std::vector<double> a(p[0].size());
  std::vector<double> b(p[0].size());
  for (std::size_t c = 0; c < a.size(); ++c) {
    a[c] = p[0][c] / std::sqrt(p[3][c] + eps);
    b[c] = p[1][c] - a[c] * p[2][c];
  }
  Layer l;
  l.kind = LayerKind::batch_norm;
  l.inputs = {input};
  const Index layer = add(std::move(l), n, index);
  use(layer, false, n.input(1), std::move(a));
  use(layer, true, n.input(2), std::move(b));
}

void Importer::window(const NodeProto& n, int index) {
  const std::string& op = n.op_type();
  std::string source = n.input(0);
  std::vector<Index> extra;  // a Pad before it, merged
  if (const auto it = m_pads.find(source); it != m_pads.end()) {
    source = it->second.source;
    extra = it->second.pads;
  }
  Layer l;
  l.inputs = {layer_of(source, fmt::format("ONNX node '{}'", node_name(n, index)))};
  const std::vector<Index>& shape = m_shapes[static_cast<std::size_t>(l.inputs[0])];
  const std::size_t dims = shape.size() - 1;
  if (shape.size() < 2 || shape.size() > 3) {
    mismatch(
        n, index,
        fmt::format("input of shape {} is not {{C, L}} or {{C, H, W}} data", shape_text(shape)));
  }
  if (op == "GlobalAveragePool") {
    l.kind = LayerKind::adaptive_avg_pool;
    l.output_size.assign(dims, 1);
    add(std::move(l), n, index);
    return;
  }
  const TensorProto* w = op == "Conv" ? m_init.at(n.input(1)) : nullptr;
  l.kernel = ints_attr(n, "kernel_shape");
  if (w != nullptr && l.kernel.empty()) {
    l.kernel.assign(w->dims().begin() + 2, w->dims().end());
  }
  if (l.kernel.size() != dims) {
    mismatch(n, index,
             fmt::format("a {}-D kernel on input of shape {}", l.kernel.size(), shape_text(shape)));
  }
  l.stride = ints_attr(n, "strides");
  if (l.stride.empty()) {
    l.stride.assign(dims, 1);  // ONNX's default; pathlift's pools default to the kernel
  }
  l.dilation = ints_attr(n, "dilations");
  l.padding =
      ints_attr(n, "pads").empty() ? std::vector<Index>(dims, 0) : *symmetric(ints_attr(n, "pads"));
  if (!extra.empty()) {
    if (extra.size() != dims) {
      mismatch(n, index,
               fmt::format("the Pad before it pads {} spatial dimensions of {}", extra.size(),
                           shape_text(shape)));
    }
    for (std::size_t i = 0; i < dims; ++i) {
      l.padding[i] += extra[i];
    }
  }
  if (op == "MaxPool") {
    l.kind = LayerKind::max_pool;
    add(std::move(l), n, index);
    return;
  }
  if (op == "AveragePool") {
    l.kind = LayerKind::avg_pool;
    l.count_include_pad = int_attr(n, "count_include_pad", 0) != 0 || !extra.empty();
    add(std::move(l), n, index);
    return;
  }
  l.kind = LayerKind::conv;
  l.groups = int_attr(n, "group", 1);
  l.out_channels = w->dims(0);
  if (l.groups < 1 || shape[0] % l.groups != 0 || w->dims(1) != shape[0] / l.groups ||
      std::cmp_not_equal(w->dims_size(), dims + 2) ||
      !std::equal(l.kernel.begin(), l.kernel.end(), w->dims().begin() + 2)) {
    std::vector<Index> wd(w->dims().begin(), w->dims().end());
    mismatch(
        n, index,
        fmt::format("weight '{}' of shape {} does not fit an input of shape {} "
                    "with {} groups and kernel {}",
                    n.input(1), shape_text(wd), shape_text(shape), l.groups, shape_text(l.kernel)));
  }
  const Index layer = add(std::move(l), n, index);
  use(layer, false, n.input(1));
  if (n.input_size() > 2 && !n.input(2).empty()) {
    bias(n, index, layer, n.input(2), w->dims(0));
  }
}

}  // namespace detail

LayerGraph parse_onnx(std::string_view bytes, const std::vector<Index>& input_shape) {
  onnx::ModelProto model;
  if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    throw FormatError("not an ONNX model (the bytes do not parse as an ONNX ModelProto)");
  }
  if (!model.has_graph() || model.graph().node_size() == 0) {
    throw FormatError("not an ONNX model (no graph, or a graph without nodes)");
  }
  return detail::Importer(model.graph(), input_shape).run();
}

LayerGraph read_onnx(const std::string& path, const std::vector<Index>& input_shape,
                     std::size_t max_memory) {
  const std::string bytes =
      read_input_file(path, max_input_bytes(InputKind::binary, max_memory), "ONNX file");
  try {
    return parse_onnx(bytes, input_shape);
  } catch (const FormatError& e) {
    throw FormatError(fmt::format("{}: {}", path, e.what()));
  } catch (const UnsupportedModel& e) {
    throw UnsupportedModel(fmt::format("{}: {}", path, e.what()));
  } catch (const NetworkError& e) {
    throw NetworkError(fmt::format("{}: {}", path, e.what()));
  }
}

}  // namespace pathlift
