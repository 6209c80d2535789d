// The ONNX importer's first pass (onnx_import.hpp): the opsets, the initializers, the data input,
// every node's arity, and an index of which node writes and which nodes read each tensor. Each
// is one walk over the model; an invalid model is a FormatError naming the node or the tensor.

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <unordered_set>

#include "pathlift/error.hpp"
#include "src/core/utf8.hpp"
#include "src/layers/detail/onnx_import.hpp"

namespace pathlift::detail {

namespace {

constexpr int k_many = Importer::k_many;

std::string range_text(int lo, int hi) {
  if (lo == hi) {
    return std::to_string(lo);
  }
  return hi == k_many ? fmt::format("{} or more", lo) : fmt::format("{} to {}", lo, hi);
}

}  // namespace

Importer::Importer(const OnnxModel& model, const std::vector<Index>& input_shape,
                   std::size_t max_memory)
    : m_model(model), m_g(model.proto().graph()), m_max_memory(max_memory) {
  check_opsets(model.proto());
  check_names();
  index_initializers();
  read_input(input_shape);
  index_nodes();
  index_outputs();
}

void Importer::check_opsets(const onnx::ModelProto& model) {
  bool found = false;
  for (const auto& o : model.opset_import()) {
    if (!o.domain().empty() && o.domain() != "ai.onnx") {
      continue;  // other domains' operators are refused where they are used
    }
    found = true;
    m_opset = std::max<std::int64_t>(m_opset, o.version());
    if (o.version() > k_max_opset) {
      throw UnsupportedModel(
          fmt::format("opset {} of domain ai.onnx is newer than pathlift reads (up to {})",
                      o.version(), k_max_opset));
    }
  }
  if (!found) {
    throw FormatError(
        "the model imports no opset of the default domain ai.onnx (opset_import has no entry "
        "for it)");
  }
}

void Importer::check_names() const {
  // ONNX's strings are UTF-8; pathlift's names end up in JSON, which holds nothing else.
  const auto check = [](const std::string& name, const std::string& what) {
    if (!detail::is_utf8(name)) {
      throw FormatError(
          fmt::format("{} '{}' is not UTF-8 text (ONNX's strings are)", what, printable(name)));
    }
  };
  for (const auto& t : m_g.initializer()) {
    check(t.name(), "the initializer name");
  }
  for (const auto& v : m_g.input()) {
    check(v.name(), "the graph input name");
  }
  for (const auto& v : m_g.output()) {
    check(v.name(), "the graph output name");
  }
  for (int i = 0; i < m_g.node_size(); ++i) {
    const NodeProto& n = m_g.node(i);
    const std::string where = fmt::format("ONNX node {}: the", i);
    check(n.name(), where + " node name");
    check(n.op_type(), where + " operator name");
    for (const auto& x : n.input()) {
      check(x, where + " input name");
    }
    for (const auto& y : n.output()) {
      check(y, where + " output name");
    }
  }
}

void Importer::index_initializers() {
  for (const auto& t : m_g.initializer()) {
    if (t.name().empty()) {
      throw FormatError("an initializer has an empty name");
    }
    if (!m_init.emplace(t.name(), &t).second) {
      throw FormatError(
          fmt::format("two initializers are named '{}' (an ONNX graph names each tensor once)",
                      printable(t.name())));
    }
    tensor_dims(t);  // negative or overflowing dims
    if (is_floating(t.data_type()) || t.data_type() == TensorProto::INT64 ||
        t.data_type() == TensorProto::INT32) {
      check_tensor_data(m_model, t);  // the data matches the dims (others are checked when read)
    }
  }
}

void Importer::read_input(const std::vector<Index>& input_shape) {
  const onnx::ValueInfoProto* input = nullptr;
  for (const auto& in : m_g.input()) {
    if (m_init.count(in.name()) != 0) {
      continue;  // IR version 3 and older list the initializers as inputs too
    }
    if (input != nullptr) {
      throw UnsupportedModel(
          fmt::format("the model has several data inputs ('{}', '{}'): pathlift reads one",
                      printable(input->name()), printable(in.name())));
    }
    input = &in;
  }
  if (input == nullptr) {
    throw FormatError("the ONNX graph has no data input");
  }
  if (input->name().empty()) {
    throw FormatError("the ONNX graph's data input has an empty name");
  }
  m_input = input->name();
  std::vector<Index> dims;
  std::vector<std::string> symbolic;
  const bool has_shape = input->type().tensor_type().has_shape();
  for (const auto& d : input->type().tensor_type().shape().dim()) {
    if (d.has_dim_value() && d.dim_value() < 0) {
      throw FormatError(fmt::format("the model's input '{}' has a negative dimension {}",
                                    printable(m_input), d.dim_value()));
    }
    dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
    if (!d.has_dim_value() && dims.size() > 1) {
      symbolic.push_back(d.dim_param().empty() ? "?" : printable(d.dim_param()));
    }
  }
  std::vector<Index> model_shape(dims.size() > 1 ? dims.begin() + 1 : dims.end(), dims.end());
  if (!input_shape.empty()) {
    if (has_shape && input_shape.size() != model_shape.size()) {
      throw FormatError(fmt::format(
          "the input shape {} has {} dimensions but the model's input '{}' has {} per sample",
          shape_text(input_shape), input_shape.size(), printable(m_input), model_shape.size()));
    }
    model_shape = input_shape;
  } else if (!has_shape || dims.size() < 2 || !symbolic.empty()) {
    throw InputShapeError(
        fmt::format(
            "the model's input '{}' has {}: give the input shape (per sample, without the batch "
            "dimension)",
            printable(m_input),
            symbolic.empty() ? std::string("no per-sample shape")
                             : fmt::format("symbolic dimensions ({})", fmt::join(symbolic, ", "))),
        true);
  }
  if (model_shape.size() > 3) {
    throw UnsupportedModel(
        fmt::format("the model's input '{}' has per-sample shape {}: pathlift reads 1 to 3 "
                    "dimensions (vectors, 1-D and 2-D data)",
                    printable(m_input), shape_text(model_shape)));
  }
  try {
    m_builder.emplace(model_shape, m_input, LayerNames::unique);
  } catch (const NetworkError& e) {
    throw NetworkError(fmt::format("the model's input '{}': {}", printable(m_input), e.what()));
  }
  Tensor t;
  t.kind = Kind::data;
  t.layer = 0;
  m_tensors.emplace(m_input, std::move(t));
  m_layer_node.push_back(-1);
}

void Importer::check_arity(int i) const {
  const NodeProto& n = m_g.node(i);
  const Operator* a = operator_of(n);
  if (a == nullptr) {
    return;  // not an operator pathlift reads: refused by name in the second pass
  }
  // Optional inputs and outputs may be empty names; the required ones may not.
  int inputs = n.input_size();
  while (inputs > 0 && n.input(inputs - 1).empty()) {
    --inputs;
  }
  if (inputs < a->min_in || n.input_size() > a->max_in) {
    throw FormatError(fmt::format("ONNX node {} has {} input{}: {} takes {}", label(i),
                                  n.input_size(), n.input_size() == 1 ? "" : "s", n.op_type(),
                                  range_text(a->min_in, a->max_in)));
  }
  for (int k = 0; k < a->min_in; ++k) {
    if (n.input(k).empty()) {
      throw FormatError(
          fmt::format("ONNX node {}: input {} is required but its name is empty", label(i), k));
    }
  }
  if (n.output_size() < a->min_out || n.output_size() > a->max_out || n.output(0).empty()) {
    throw FormatError(
        fmt::format("ONNX node {} has {} output{}{}: {} has {}", label(i), n.output_size(),
                    n.output_size() == 1 ? "" : "s",
                    n.output_size() > 0 && n.output(0).empty() ? " (output 0 unnamed)" : "",
                    n.op_type(), range_text(a->min_out, a->max_out)));
  }
}

void Importer::index_nodes() {
  const int count = m_g.node_size();
  m_absorbed.assign(static_cast<std::size_t>(count), 0);
  // Who writes each tensor: once, and never an initializer or a graph input.
  for (int i = 0; i < count; ++i) {
    check_arity(i);
    const NodeProto& n = m_g.node(i);
    for (int s = 0; s < n.output_size(); ++s) {
      const std::string& out = n.output(s);
      if (out.empty()) {
        continue;
      }
      if (m_init.count(out) != 0) {
        throw FormatError(fmt::format("ONNX node {} writes tensor '{}', which is an initializer",
                                      label(i), printable(out)));
      }
      if (out == m_input) {
        throw FormatError(fmt::format("ONNX node {} writes tensor '{}', the graph's data input",
                                      label(i), printable(out)));
      }
      const auto [it, fresh] = m_producer.emplace(out, Producer{i, s});
      if (!fresh) {
        throw FormatError(fmt::format("tensor '{}' is written by two nodes, {} and {}",
                                      printable(out), label(it->second.node), label(i)));
      }
    }
  }
  // Who reads each tensor: only tensors defined before (the nodes are topologically sorted).
  std::unordered_set<std::string> aliases;
  for (int i = 0; i < count; ++i) {
    const NodeProto& n = m_g.node(i);
    // An Identity of an initializer names a parameter of its own (torch.onnx.export keeps one
    // initializer of parameters equal in value): not a use of the initializer, whose first use
    // decides its place in theta.
    const bool alias = n.op_type() == "Identity" &&
                       (n.domain().empty() || n.domain() == "ai.onnx") && n.input_size() == 1 &&
                       (m_init.count(n.input(0)) != 0 || aliases.count(n.input(0)) != 0);
    if (alias) {
      m_aliases.push_back(n.output(0));
      aliases.insert(n.output(0));
    }
    for (const std::string& in : n.input()) {
      if (in.empty()) {
        continue;
      }
      if (const auto p = m_producer.find(in); p != m_producer.end()) {
        if (p->second.node >= i) {
          throw FormatError(fmt::format(
              "ONNX node {} reads tensor '{}' before node {} writes it (the nodes must be in "
              "topological order)",
              label(i), printable(in), label(p->second.node)));
        }
      } else if (m_init.count(in) == 0 && in != m_input) {
        throw FormatError(fmt::format(
            "ONNX node {} reads tensor '{}', which no node, initializer or graph input defines",
            label(i), printable(in)));
      }
      m_readers[in].push_back(i);
      if (!alias) {
        m_first_use.emplace(in, i);
      }
    }
  }
  std::reverse(m_aliases.begin(), m_aliases.end());  // the exporter prepends each alias
}

void Importer::index_outputs() {
  if (m_g.output_size() == 0) {
    throw FormatError("the ONNX graph has no output");
  }
  for (int j = 0; j < m_g.output_size(); ++j) {
    const std::string& name = m_g.output(j).name();
    if (m_producer.count(name) == 0 && m_init.count(name) == 0 && name != m_input) {
      throw FormatError(fmt::format(
          "the graph output '{}' is not written by any node (nor an initializer or the input)",
          printable(name)));
    }
    if (!m_graph_outputs.emplace(name, j).second) {
      throw FormatError(fmt::format("the graph output '{}' is listed twice", printable(name)));
    }
  }
}

}  // namespace pathlift::detail
