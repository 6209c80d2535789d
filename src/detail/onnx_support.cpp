// The ONNX importer's first pass and bookkeeping (onnx_import.hpp): reading tensors and
// attributes, the data input, which operations are supported, and the layout of theta.

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "pathlift/error.hpp"
#include "src/detail/huge_pages.hpp"
#include "src/detail/onnx_import.hpp"

namespace pathlift::detail {

/// The attribute `name` of node n, or null.
const onnx::AttributeProto* attribute(const NodeProto& n, const char* name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) {
      return &a;
    }
  }
  return nullptr;
}
std::int64_t int_attr(const NodeProto& n, const char* name, std::int64_t fallback) {
  const auto* a = attribute(n, name);
  return a != nullptr ? a->i() : fallback;
}
double float_attr(const NodeProto& n, const char* name, double fallback) {
  const auto* a = attribute(n, name);
  return a != nullptr ? static_cast<double>(a->f()) : fallback;
}
std::vector<Index> ints_attr(const NodeProto& n, const char* name) {
  const auto* a = attribute(n, name);
  return a != nullptr ? std::vector<Index>(a->ints().begin(), a->ints().end())
                      : std::vector<Index>{};
}
std::string string_attr(const NodeProto& n, const char* name, const char* fallback) {
  const auto* a = attribute(n, name);
  return a != nullptr ? a->s() : fallback;
}

/// The number of entries of t's shape.
Index tensor_size(const TensorProto& t) {
  Index n = 1;
  for (const auto d : t.dims()) {
    n *= d;
  }
  return n;
}

/// Appends the values of a float, double, int32 or int64 tensor to `out`, as doubles.
void append_values(const TensorProto& t, std::vector<double>& out) {
  if (t.data_location() == TensorProto::EXTERNAL) {
    throw FormatError(fmt::format(
        "tensor '{}' is stored in an external data file, which pathlift does not read", t.name()));
  }
  const auto n = static_cast<std::size_t>(tensor_size(t));
  out.reserve(out.size() + n);
  const auto read_raw = [&](auto sample) {
    using T = decltype(sample);
    const std::string& raw = t.raw_data();
    if (raw.size() != n * sizeof(T)) {
      throw FormatError(
          fmt::format("tensor '{}' has {} bytes of data for {} entries", t.name(), raw.size(), n));
    }
    for (std::size_t i = 0; i < n; ++i) {
      T x;
      std::memcpy(&x, raw.data() + i * sizeof(T), sizeof(T));
      out.push_back(static_cast<double>(x));
    }
  };
  const auto read_list = [&](const auto& list) {
    if (static_cast<std::size_t>(list.size()) != n) {
      throw FormatError(
          fmt::format("tensor '{}' has {} values for {} entries", t.name(), list.size(), n));
    }
    for (const auto x : list) {
      out.push_back(static_cast<double>(x));
    }
  };
  const bool raw = t.has_raw_data();
  switch (t.data_type()) {
    case TensorProto::FLOAT:
      raw ? read_raw(float{}) : read_list(t.float_data());
      break;
    case TensorProto::DOUBLE:
      raw ? read_raw(double{}) : read_list(t.double_data());
      break;
    case TensorProto::INT64:
      raw ? read_raw(std::int64_t{}) : read_list(t.int64_data());
      break;
    case TensorProto::INT32:
      raw ? read_raw(std::int32_t{}) : read_list(t.int32_data());
      break;
    default:
      throw FormatError(fmt::format("tensor '{}' has data type {}, not float, double or integer",
                                    t.name(), t.data_type()));
  }
}

std::vector<double> tensor_values(const TensorProto& t) {
  std::vector<double> out;
  append_values(t, out);
  return out;
}

std::string shape_text(const std::vector<Index>& shape) {
  std::string out = "{";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    out += (i > 0 ? ", " : "") + std::to_string(shape[i]);
  }
  return out + "}";
}

/// Symmetric padding per spatial dimension from ONNX's [begin..., end...], or nullopt.
std::optional<std::vector<Index>> symmetric(const std::vector<Index>& pads) {
  const std::size_t dims = pads.size() / 2;
  std::vector<Index> out(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(dims));
  for (std::size_t i = 0; i < dims; ++i) {
    if (pads[i] != pads[i + dims] || pads[i] < 0) {
      return std::nullopt;
    }
  }
  return out;
}

Importer::Importer(const onnx::GraphProto& g, const std::vector<Index>& input_shape) : m_g(g) {
  for (const auto& t : g.initializer()) {
    m_init.emplace(t.name(), &t);
  }
  for (int i = 0; i < g.node_size(); ++i) {
    const NodeProto& n = g.node(i);
    if (n.op_type() == "Constant" && attribute(n, "value") != nullptr && n.output_size() == 1) {
      m_const.emplace(n.output(0), &attribute(n, "value")->t());
    }
    // torch.onnx.export keeps one initializer of parameters equal in value and names the
    // others by Identity nodes of it: each such alias is a parameter of its own.
    if (n.op_type() == "Identity" && n.input_size() == 1 && n.output_size() == 1 &&
        m_init.count(n.input(0)) != 0) {
      m_init.emplace(n.output(0), m_init.at(n.input(0)));
      m_aliases.push_back(n.output(0));
      ++m_consumers[n.input(0)];
      continue;  // not a use of the parameter: its first use decides its place in theta
    }
    for (const auto& in : n.input()) {
      ++m_consumers[in];
      m_first_use.emplace(in, i);
    }
  }
  std::reverse(m_aliases.begin(), m_aliases.end());  // the exporter prepends each alias
  for (const auto& out : g.output()) {
    ++m_consumers[out.name()];
  }
  read_input(input_shape);
}

void Importer::read_input(const std::vector<Index>& input_shape) {
  const onnx::ValueInfoProto* input = nullptr;
  for (const auto& in : m_g.input()) {
    if (m_init.count(in.name()) == 0 && m_const.count(in.name()) == 0) {
      if (input != nullptr) {
        throw UnsupportedModel(
            fmt::format("the model has several data inputs ('{}', '{}'): pathlift reads one",
                        input->name(), in.name()));
      }
      input = &in;
    }
  }
  if (input == nullptr) {
    throw FormatError("the ONNX graph has no data input");
  }
  std::vector<Index> dims;
  std::vector<std::string> symbolic;
  const bool has_shape = input->type().tensor_type().has_shape();
  for (const auto& d : input->type().tensor_type().shape().dim()) {
    dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
    if (!d.has_dim_value() && dims.size() > 1) {
      symbolic.push_back(d.dim_param().empty() ? "?" : d.dim_param());
    }
  }
  std::vector<Index> model_shape(dims.size() > 1 ? dims.begin() + 1 : dims.end(), dims.end());
  if (!input_shape.empty()) {
    if (has_shape && input_shape.size() != model_shape.size()) {
      throw FormatError(fmt::format(
          "the input shape {} has {} dimensions but the model's input '{}' has {} per sample",
          shape_text(input_shape), input_shape.size(), input->name(), model_shape.size()));
    }
    model_shape = input_shape;
  } else if (!has_shape || dims.size() < 2 || !symbolic.empty()) {
    std::string names;
    for (const auto& s : symbolic) {
      names += (names.empty() ? "" : ", ") + s;
    }
    throw FormatError(fmt::format(
        "the model's input '{}' has {}: give the input shape (per sample, without the batch "
        "dimension)",
        input->name(),
        symbolic.empty() ? std::string("no per-sample shape")
                         : "symbolic dimensions (" + names + ")"));
  }
  m_graph.input_shape = model_shape;
  Layer layer;
  layer.name = input->name();
  m_graph.layers.push_back(layer);
  m_names.emplace(layer.name, 1);
  m_layer_of.emplace(input->name(), 0);
  m_shapes.push_back(model_shape);
}

bool Importer::is_const(const std::string& t) const {
  return m_init.count(t) != 0 || m_const.count(t) != 0;
}

const TensorProto* Importer::constant(const std::string& t) const {
  if (const auto it = m_init.find(t); it != m_init.end()) {
    return it->second;
  }
  const auto it = m_const.find(t);
  return it != m_const.end() ? it->second : nullptr;
}

bool Importer::used(const NodeProto& n, int output) const {
  return output < n.output_size() && !n.output(output).empty() &&
         m_consumers.count(n.output(output)) != 0;
}

const NodeProto* Importer::producer(const std::string& t) const {
  for (const auto& n : m_g.node()) {
    if (std::find(n.output().begin(), n.output().end(), t) != n.output().end()) {
      return &n;
    }
  }
  return nullptr;
}

void Importer::check_arity(const NodeProto& n, int index) const {
  static const std::unordered_map<std::string, int> k_inputs{{"Gemm", 2},
                                                             {"MatMul", 2},
                                                             {"Add", 2},
                                                             {"Sub", 2},
                                                             {"Conv", 2},
                                                             {"MaxPool", 1},
                                                             {"AveragePool", 1},
                                                             {"Relu", 1},
                                                             {"LeakyRelu", 1},
                                                             {"Identity", 1},
                                                             {"Dropout", 1},
                                                             {"Flatten", 1},
                                                             {"Reshape", 2},
                                                             {"Pad", 1},
                                                             {"Concat", 1},
                                                             {"GlobalAveragePool", 1},
                                                             {"BatchNormalization", 5}};
  const auto it = k_inputs.find(n.op_type());
  const int inputs = it != k_inputs.end() ? it->second : 0;
  if (n.input_size() < inputs || n.output_size() < 1 ||
      std::any_of(n.input().begin(), n.input().begin() + inputs,
                  [](const std::string& s) { return s.empty(); })) {
    throw FormatError(
        fmt::format("ONNX node '{}' ({}) has {} inputs and {} outputs: it needs {} "
                    "inputs and an output",
                    node_name(n, index), n.op_type(), n.input_size(), n.output_size(), inputs));
  }
}

std::string Importer::window_problem(const NodeProto& n) {
  const std::string pad = string_attr(n, "auto_pad", "NOTSET");
  if (pad != "NOTSET" && pad != "VALID") {
    return "auto_pad " + pad;
  }
  if (int_attr(n, "ceil_mode", 0) != 0) {
    return "ceil_mode 1";
  }
  if (!symmetric(ints_attr(n, "pads"))) {
    return "asymmetric padding";
  }
  return {};
}

std::string Importer::check(const NodeProto& n) const {
  const std::string& op = n.op_type();
  if (!n.domain().empty() && n.domain() != "ai.onnx") {
    return "domain " + n.domain();
  }
  const auto data = [&](int i) { return i < n.input_size() && !is_const(n.input(i)); };
  const auto init = [&](int i) { return i < n.input_size() && m_init.count(n.input(i)) != 0; };
  if (op == "Gemm") {
    if (!data(0) || !init(1) || (n.input_size() > 2 && !n.input(2).empty() && !init(2))) {
      return "its weight and bias must be initializers";
    }
    if (int_attr(n, "transA", 0) != 0 || float_attr(n, "alpha", 1.0) != 1.0 ||
        float_attr(n, "beta", 1.0) != 1.0) {
      return "transA, alpha or beta other than PyTorch's Linear";
    }
    return {};
  }
  if (op == "MatMul") {
    return data(0) && init(1) ? "" : "its second operand must be an initializer";
  }
  if (op == "Add" || op == "Sub") {
    if (n.input_size() == 2 && data(0) && data(1)) {
      return {};
    }
    if (op == "Add" && n.input_size() == 2 && (init(0) || init(1))) {
      const NodeProto* p = producer(n.input(init(0) ? 1 : 0));
      if (p != nullptr && p->op_type() == "MatMul" && m_consumers.at(p->output(0)) == 1) {
        return {};
      }
    }
    return "a constant operand other than a MatMul's bias";
  }
  if (op == "Conv") {
    if (!data(0) || !init(1) || (n.input_size() > 2 && !n.input(2).empty() && !init(2))) {
      return "its weight and bias must be initializers";
    }
    const auto* w = m_init.at(n.input(1));
    if (w->dims_size() != 3 && w->dims_size() != 4) {
      return fmt::format("{}-D convolution", w->dims_size() - 2);
    }
    return window_problem(n);
  }
  if (op == "MaxPool" || op == "AveragePool") {
    if (used(n, 1)) {
      return "its indices output is used";
    }
    if (ints_attr(n, "kernel_shape").size() > 2) {
      return "3-D pooling";
    }
    return window_problem(n);
  }
  if (op == "BatchNormalization") {
    for (int i = 1; i < 5; ++i) {
      if (!init(i)) {
        return "its scale, bias, mean and variance must be initializers";
      }
    }
    if (int_attr(n, "training_mode", 0) != 0 || used(n, 1) || used(n, 2) || used(n, 3) ||
        used(n, 4) || int_attr(n, "spatial", 1) != 1) {
      return "training mode";
    }
    return {};
  }
  if (op == "Dropout") {
    if (used(n, 1)) {
      return "its mask output is used";
    }
    if (n.input_size() > 2 && !n.input(2).empty()) {
      const TensorProto* t = constant(n.input(2));
      if (t == nullptr || tensor_values(*t) != std::vector<double>{0.0}) {
        return "training mode";
      }
    }
    return {};
  }
  if (op == "Reshape") {
    const TensorProto* t = n.input_size() > 1 ? constant(n.input(1)) : nullptr;
    if (t == nullptr || tensor_size(*t) != 2 || int_attr(n, "allowzero", 0) != 0) {
      return "only a reshape to (batch, features) by a constant shape";
    }
    return {};
  }
  if (op == "Pad") {
    return pad_problem(n);
  }
  if (op == "Flatten") {
    const auto axis = int_attr(n, "axis", 1);
    return axis == 1 || axis < 0 ? "" : fmt::format("axis {}", axis);
  }
  if (op == "Concat") {
    return int_attr(n, "axis", 0) == 0 ? "along the batch dimension" : "";
  }
  if (op == "Relu" || op == "LeakyRelu" || op == "Identity" || op == "GlobalAveragePool" ||
      op == "Constant") {
    return {};
  }
  return "-";
}

std::optional<std::vector<Index>> Importer::pad_amounts(const NodeProto& n) const {
  if (string_attr(n, "mode", "constant") != "constant" || n.input_size() > 3) {
    return std::nullopt;
  }
  std::vector<double> pads;
  if (n.input_size() > 1) {
    const TensorProto* t = constant(n.input(1));
    if (t == nullptr) {
      return std::nullopt;
    }
    pads = tensor_values(*t);
  } else {
    const auto p = ints_attr(n, "pads");
    pads.assign(p.begin(), p.end());
  }
  if (n.input_size() > 2 && !n.input(2).empty()) {
    const TensorProto* v = constant(n.input(2));
    if (v == nullptr || tensor_values(*v) != std::vector<double>{0.0}) {
      return std::nullopt;
    }
  }
  if (float_attr(n, "value", 0.0) != 0.0 || pads.size() < 6 || pads.size() % 2 != 0) {
    return std::nullopt;
  }
  // [batch, channel, spatial... begins, then the same ends]: only spatial padding.
  const std::size_t rank = pads.size() / 2;
  std::vector<Index> begins;
  std::vector<Index> ends;
  for (std::size_t i = 0; i < rank; ++i) {
    const auto b = static_cast<Index>(pads[i]);
    const auto e = static_cast<Index>(pads[rank + i]);
    if (i < 2 && (b != 0 || e != 0)) {
      return std::nullopt;
    }
    if (i >= 2) {
      begins.push_back(b);
      ends.push_back(e);
    }
  }
  begins.insert(begins.end(), ends.begin(), ends.end());
  return symmetric(begins);
}

std::string Importer::pad_problem(const NodeProto& n) const {
  const auto pads = pad_amounts(n);
  if (!pads) {
    return "only a constant zero padding of the spatial dimensions, the same on both sides";
  }
  if (std::all_of(pads->begin(), pads->end(), [](Index p) { return p == 0; })) {
    return {};
  }
  for (const auto& m : m_g.node()) {
    if (std::find(m.input().begin(), m.input().end(), n.output(0)) == m.input().end()) {
      continue;
    }
    const bool plain_avg = m.op_type() == "AveragePool" &&
                           (int_attr(m, "count_include_pad", 0) != 0 ||
                            std::all_of(ints_attr(m, "pads").begin(), ints_attr(m, "pads").end(),
                                        [](Index p) { return p == 0; }));
    if (m.op_type() != "Conv" && !plain_avg) {
      return "a padding that is not merged into a Conv or an AveragePool";
    }
  }
  return {};
}

std::vector<std::string> Importer::parameter_order() const {
  const auto is_used = [&](const std::string& name) {
    return std::any_of(m_uses.begin(), m_uses.end(), [&](const Use& u) { return u.init == name; });
  };
  const auto first_use = [&](const std::string& name) {
    const auto it = m_first_use.find(name);
    return it != m_first_use.end() ? it->second : m_g.node_size();
  };
  std::vector<std::string> order;
  for (const auto& t : m_g.initializer()) {
    if (is_used(t.name())) {
      order.push_back(t.name());
    }
  }
  const std::size_t kept = order.size();
  std::vector<bool> is_alias(kept, false);
  for (const auto& alias : m_aliases) {
    if (!is_used(alias)) {
      continue;
    }
    std::size_t at = 0;
    while (at < order.size() && (is_alias[at] || first_use(order[at]) <= first_use(alias))) {
      ++at;
    }
    order.insert(order.begin() + static_cast<std::ptrdiff_t>(at), alias);
    is_alias.insert(is_alias.begin() + static_cast<std::ptrdiff_t>(at), true);
  }
  return order;
}

void Importer::assign_parameters() {
  const std::vector<std::string> order = parameter_order();
  std::size_t total = 0;
  for (const auto& u : m_uses) {
    total +=
        u.tensor != nullptr ? static_cast<std::size_t>(tensor_size(*u.tensor)) : u.values.size();
  }
  std::vector<double> theta;
  detail::reserve_huge(theta, total);
  for (const auto& name : order) {
    Index offset = -1;
    for (auto& u : m_uses) {
      if (u.init != name) {
        continue;
      }
      if (offset < 0) {
        offset = static_cast<Index>(theta.size());
        if (u.tensor != nullptr) {
          append_values(*u.tensor, theta);
        } else {
          theta.insert(theta.end(), u.values.begin(), u.values.end());
        }
      } else if (const std::vector<double> v =
                     u.tensor != nullptr ? tensor_values(*u.tensor) : u.values;
                 !std::equal(v.begin(), v.end(), theta.begin() + offset,
                             theta.begin() + offset + static_cast<Index>(v.size()))) {
        throw UnsupportedModel(fmt::format(
            "initializer '{}' is used by two layers with different values (a shared batch "
            "norm scale, or a weight both transposed and not)",
            name));
      }
      std::vector<double>().swap(u.values);
      Layer& l = m_graph.layers[static_cast<std::size_t>(u.layer)];
      (u.bias ? l.bias_offset : l.weight_offset) = offset;
    }
  }
  m_graph.num_params = static_cast<Index>(theta.size());
  m_graph.weights = std::move(theta);
}

}  // namespace pathlift::detail
