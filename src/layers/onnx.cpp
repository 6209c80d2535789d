// read_onnx() and parse_onnx() of layers.hpp: an ONNX model as a layer graph (docs/layers.md,
// "ONNX"). The importer's second pass: the nodes in order, each tensor given a state (a layer
// of the LayerGraphBuilder, an initializer, a constant, a pending Pad, or failed), every problem
// recorded and reported at once. The first pass is detail/onnx_support.cpp, the constants
// detail/onnx_fold.cpp, theta detail/onnx_theta.cpp.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <limits>

#include "pathlift/error.hpp"
#include "pathlift/io.hpp"
#include "pathlift/layers.hpp"
#include "pathlift/onnx.hpp"
#include "src/layers/detail/onnx_import.hpp"
#include "src/network/input_file.hpp"

namespace pathlift {
namespace detail {

std::string Importer::node_name(int i) const {
  const NodeProto& n = m_g.node(i);
  if (!n.name().empty()) {
    return n.name();
  }
  return n.output_size() > 0 && !n.output(0).empty() ? n.output(0)
                                                     : fmt::format("{}_{}", n.op_type(), i);
}

std::string Importer::label(int i) const {
  return fmt::format("'{}' ({})", printable(node_name(i)), printable(m_g.node(i).op_type()));
}

void Importer::unsupported(int i, const std::string& why) {
  m_unsupported.push_back(fmt::format("{} at '{}'{}", printable(m_g.node(i).op_type()),
                                      printable(node_name(i)),
                                      why.empty() ? "" : " (" + why + ")"));
}

void Importer::invalid(int i, const std::string& what) {
  m_invalid.push_back(fmt::format("ONNX node {}: {}", label(i), what));
}

void Importer::set(const std::string& name, Tensor t) {
  m_tensors.insert_or_assign(name, std::move(t));
}

void Importer::set_data(int i, const LayerOutput& out) {
  if (!out.ok) {
    return;  // the builder recorded why; the output stays failed
  }
  Tensor t;
  t.kind = Kind::data;
  t.layer = out.layer;
  set(m_g.node(i).output(0), std::move(t));
  m_layer_node.resize(static_cast<std::size_t>(out.layer) + 1, -1);
  m_layer_node[static_cast<std::size_t>(out.layer)] = i;
}

const Importer::Tensor& Importer::state(const std::string& name) const {
  static const Tensor k_failed;
  const auto it = m_tensors.find(name);
  return it == m_tensors.end() ? k_failed : it->second;
}

bool Importer::used(int i, int slot) const {
  const NodeProto& n = m_g.node(i);
  if (slot >= n.output_size() || n.output(slot).empty()) {
    return false;
  }
  return m_readers.count(n.output(slot)) != 0 || m_graph_outputs.count(n.output(slot)) != 0;
}

bool Importer::data_input(int i, int k, Index& layer) {
  const std::string& name = m_g.node(i).input(k);
  const Tensor& t = state(name);
  if (t.kind == Kind::data) {
    layer = t.layer;
    return true;
  }
  if (t.kind == Kind::view) {
    refuse_view(*t.view, label(i));
  } else if (t.kind != Kind::failed) {
    unsupported(i, fmt::format("its input '{}' is a constant, not computed from the data input",
                               printable(name)));
  }
  return false;
}

const Importer::Tensor* Importer::parameter(int i, int k, const char* what) {
  const std::string& name = m_g.node(i).input(k);
  const Tensor& t = state(name);
  if (t.kind == Kind::failed) {
    return nullptr;
  }
  const bool matrix = std::string_view(what) == "weight" &&
                      (m_g.node(i).op_type() == "Gemm" || m_g.node(i).op_type() == "MatMul");
  if (t.kind != Kind::initializer && !(t.kind == Kind::transposed && matrix)) {
    unsupported(i, fmt::format("its {} '{}' must be an initializer", what, printable(name)));
    return nullptr;
  }
  if (!is_floating(t.tensor->data_type())) {
    invalid(i, fmt::format("{} '{}' has data type {}: weights must be floating point (FLOAT or "
                           "DOUBLE)",
                           what, printable(name), type_name(t.tensor->data_type())));
    return nullptr;
  }
  check_tensor_data(m_model, *t.tensor);
  return &t;
}

void Importer::use(Index layer, bool bias, const Tensor& t, bool transpose) {
  m_uses.push_back({layer, bias, t.param, t.tensor, transpose, nullptr});
}

// ---------------------------------------------------------------------------------------------
// The walk

std::string Importer::gemm_problem(int i) const {
  const NodeProto& n = m_g.node(i);
  if (int_attr(n, "transA", 0) != 0 || float_attr(n, "alpha", 1.0) != 1.0 ||
      float_attr(n, "beta", 1.0) != 1.0) {
    return "transA, alpha or beta other than PyTorch's Linear";
  }
  return {};
}

std::string Importer::max_pool_problem(int i) const {
  return used(i, 1) ? "its indices output is used" : "";
}

std::string Importer::batch_norm_problem(int i) const {
  const NodeProto& n = m_g.node(i);
  if (int_attr(n, "training_mode", 0) != 0 || used(i, 1) || used(i, 2) || used(i, 3) ||
      used(i, 4) || int_attr(n, "spatial", 1) != 1) {
    return "training mode";
  }
  return {};
}

std::string Importer::dropout_problem(int i) const {
  return used(i, 1) ? "its mask output is used" : "";
}

std::string Importer::pad_problem(int i) const {
  const std::string mode = string_attr(m_g.node(i), "mode", "constant");
  if (mode == "wrap") {
    return "mode wrap (opset 19, newer than pathlift reads)";
  }
  if (mode != "constant" && mode != "reflect" && mode != "edge") {
    return "mode " + printable(mode);
  }
  return {};
}

std::string Importer::resize_problem(int i) const {
  const NodeProto& n = m_g.node(i);
  const std::string mode = string_attr(n, "mode", "nearest");
  if (mode == "nearest") {
    return {};
  }
  if (mode == "linear" && n.op_type() == "Resize" && m_opset >= 11) {
    return int_attr(n, "antialias", 0) != 0 ? "antialias 1 (a filter pathlift does not write)" : "";
  }
  return "mode " + printable(mode) +
         ": pathlift reads mode nearest (a copy of entries) and, in Resize from opset 11, mode "
         "linear (PyTorch's linear and bilinear interpolation)";
}

void Importer::activation(int i) {
  const NodeProto& n = m_g.node(i);
  Index x = -1;
  if (data_input(i, 0, x)) {
    Layer l = node_layer(i, {x});
    l.activation = n.op_type() == "Relu" ? Activation::relu()
                                         : Activation::leaky_relu(float_attr(n, "alpha", 0.01));
    set_data(i, m_builder->add(std::move(l)));
  }
}

void Importer::identity(int i) {
  const NodeProto& n = m_g.node(i);
  Tensor t = state(n.input(0));
  if (n.op_type() == "Dropout" && n.input_size() > 2 && !n.input(2).empty()) {
    const auto mode = constant_input(i, 2);
    if (!mode) {
      t.kind = Kind::failed;
    } else if (mode->values.size() != 1 || mode->values[0].batch || mode->values[0].i != 0 ||
               mode->values[0].f != 0) {
      unsupported(i, "training mode");
      t.kind = Kind::failed;
    }
  }
  if (t.kind == Kind::initializer) {
    t.param = n.output(0);  // an alias: a parameter of its own
  }
  if (t.kind != Kind::failed) {
    set(n.output(0), std::move(t));
  }
}

void Importer::data_operand(int i) {
  unsupported(i, "an operand computed from the data");  // Floor, Cast, Shape of a pad, ...
}

void Importer::build(int i) {
  const NodeProto& n = m_g.node(i);
  const Operator* op = operator_of(n);
  std::string why;
  if (!n.domain().empty() && n.domain() != "ai.onnx") {
    why = "domain " + printable(n.domain());
  } else if (op == nullptr) {
    why = known_refusal(n.op_type());
  } else if (op->problem != nullptr) {
    why = (this->*op->problem)(i);
  }
  // Every unsupported operation is listed, even after a failed one.
  const bool inputs_ok = std::all_of(n.input().begin(), n.input().end(), [&](const std::string& s) {
    return s.empty() || state(s).kind != Kind::failed;
  });
  if (op == nullptr || !why.empty()) {
    unsupported(i, why);
    if (op == nullptr) {
      m_unknown_op = true;
    }
  } else if (inputs_ok && !fold(i)) {
    (this->*op->build)(i);
  }
  for (const std::string& out : n.output()) {
    if (!out.empty()) {
      m_tensors.try_emplace(out);  // failed unless set
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The whole graph

LayerGraph Importer::run() {
  for (const auto& t : m_g.initializer()) {
    Tensor s;
    s.kind = Kind::initializer;
    s.tensor = &t;
    s.param = t.name();
    m_tensors.emplace(t.name(), std::move(s));
  }
  for (int i = 0; i < m_g.node_size(); ++i) {
    build(i);
  }
  for (const auto& out : m_g.output()) {
    const Tensor& t = state(out.name());
    if (t.kind == Kind::data) {
      m_builder->output(t.layer);
    } else if (t.kind == Kind::view) {
      refuse_view(*t.view, fmt::format("the graph output '{}'", printable(out.name())));
    } else if (t.kind != Kind::failed) {
      m_unsupported.push_back(
          fmt::format("the graph output '{}' is a constant, not computed from the data input",
                      printable(out.name())));
    }
  }
  // The builder lists every problem; theta cannot be laid out on a graph that has one.
  if (!m_unsupported.empty()) {
    m_builder->problem(fmt::format(
        "unsupported operations: {}{}", fmt::join(m_unsupported, ", "),
        m_unknown_op ? fmt::format(" (the ONNX operators pathlift reads: {})", operator_names())
                     : ""));
  }
  for (std::string& what : m_invalid) {
    m_builder->problem(std::move(what), LayerGraphBuilder::Problem::invalid);
  }
  m_builder->throw_problems();
  std::vector<double> theta = lay_out_theta();
  std::vector<std::string> warnings = exporter_warnings();
  const auto d = static_cast<Index>(theta.size());
  LayerGraph graph = m_builder->finish(d, std::move(theta));
  graph.warnings = std::move(warnings);
  return graph;
}

}  // namespace detail

namespace {

LayerGraph import(const detail::OnnxModel& model, const std::vector<Index>& input_shape,
                  const EngineOptions& options) {
  if (!model.proto().has_graph() || model.proto().graph().node_size() == 0) {
    throw FormatError("not an ONNX model (no graph, or a graph without nodes)");
  }
  return detail::Importer(model, input_shape, options.max_memory).run();
}

}  // namespace

LayerGraph parse_onnx(std::string_view bytes, const std::vector<Index>& input_shape,
                      const EngineOptions& options) {
  return import(detail::OnnxModel(bytes), input_shape, options);
}

LayerGraph read_onnx(const std::string& path, const std::vector<Index>& input_shape,
                     const EngineOptions& options) {
  detail::InputFile file = detail::open_input_file(
      path, max_input_bytes(InputKind::binary, options.max_memory), "ONNX file");
  try {
    if (file.regular()) {
      // Read in place: the weights go from the file to theta, the file's bytes never held.
      return import(detail::OnnxModel(std::move(file)), input_shape, options);
    }
    // A pipe or a device cannot be read by ranges: its bytes, within the bound.
    const std::string bytes = file.read_all(StreamFormat::onnx);
    return import(detail::OnnxModel(bytes), input_shape, options);
  } catch (const InputShapeError& e) {
    throw InputShapeError(fmt::format("{}: {}", printable(path, 200), e.what()), e.needed());
  } catch (const FormatError& e) {
    throw FormatError(fmt::format("{}: {}", printable(path, 200), e.what()));
  } catch (const UnsupportedModel& e) {
    throw UnsupportedModel(fmt::format("{}: {}", printable(path, 200), e.what()));
  } catch (const NetworkError& e) {
    throw NetworkError(fmt::format("{}: {}", printable(path, 200), e.what()));
  }
}

}  // namespace pathlift
