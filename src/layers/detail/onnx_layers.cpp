// The ONNX importer's layers (onnx_import.hpp): Gemm and MatMul (+ Add) as linear layers,
// BatchNormalization folded to a and b, Add, Sub, Concat, Flatten, Reshape (a flatten, or a view:
// onnx_views.cpp), and Pad (a zero one merged into the Conv or AveragePool after it,
// onnx_windows.cpp; reflect and edge ones are gathers, onnx_views.cpp). Each reads its inputs'
// states and adds layers to the builder, or records why it cannot.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "pathlift/error.hpp"
#include "src/layers/detail/onnx_import.hpp"

namespace pathlift::detail {

// ---------------------------------------------------------------------------------------------
// Linear layers

// A linear layer of node i on layer x: weight w (stored (out, in) when as_stored, else its
// transpose), bias b or none.
void Importer::add_linear(int i, Index x, const Tensor& w, const Tensor* b, bool as_stored,
                          std::array<Index, 2> out_in) {
  Layer l = node_layer(i, {x});
  l.out_features = out_in[0];
  l.weight_offset = 0;  // placeholders until theta is laid out
  l.bias_offset = b != nullptr ? 0 : -1;
  LayerParameters p;
  p.weight = ParameterTensor{w.tensor->name(), {out_in[0], out_in[1]}};
  if (b != nullptr) {
    p.bias = ParameterTensor{b->tensor->name(), tensor_dims(*b->tensor)};
  }
  const LayerOutput y = m_builder->add(std::move(l), p);
  if (y.ok) {
    use(y.layer, false, w, !as_stored);
    if (b != nullptr) {
      use(y.layer, true, *b, false);
    }
  }
  set_data(i, y);
}

void Importer::gemm(int i) {
  const NodeProto& n = m_g.node(i);
  Index x = -1;
  if (!data_input(i, 0, x)) {
    return;
  }
  const Tensor* w = parameter(i, 1, "weight");
  const Tensor* b = n.input_size() > 2 && !n.input(2).empty() ? parameter(i, 2, "bias") : nullptr;
  if (w == nullptr || (n.input_size() > 2 && !n.input(2).empty() && b == nullptr)) {
    return;
  }
  const std::vector<Index> wd = tensor_dims(*w->tensor);
  if (wd.size() != 2) {
    invalid(i, fmt::format("weight '{}' has shape {}: Gemm's B is a matrix", printable(n.input(1)),
                           shape_text(wd)));
    return;
  }
  // Stored (out, in) (transB = 1, or transB = 0 of a Transpose) is theta's layout.
  const bool as_stored = (int_attr(n, "transB", 0) != 0) != (w->kind == Kind::transposed);
  const Index out = as_stored ? wd[0] : wd[1];
  const Index in = as_stored ? wd[1] : wd[0];
  if (b != nullptr) {
    const std::vector<Index> bd = tensor_dims(*b->tensor);
    if (!(bd == std::vector<Index>{out} || bd == std::vector<Index>{1, out})) {
      unsupported(i, fmt::format("its bias '{}' of shape {} is not one entry per output, shape "
                                 "{{{}}} (broadcasting)",
                                 printable(n.input(2)), shape_text(bd), out));
      return;
    }
  }
  const std::vector<Index>& xs = m_builder->shape(x);
  if (xs.size() == 1 && xs[0] != in) {
    invalid(i, fmt::format("weight '{}' of shape {} takes {} features but the input has shape {}",
                           printable(n.input(1)), shape_text(wd), in, shape_text(xs)));
    return;
  }
  add_linear(i, x, *w, b, as_stored, {out, in});
}

int Importer::bias_add(int i, Index out_features, std::string& bias) const {
  const std::string& y = m_g.node(i).output(0);
  if (m_graph_outputs.count(y) != 0) {
    return -1;
  }
  const auto it = m_readers.find(y);
  if (it == m_readers.end()) {
    return -1;
  }
  int add = -1;
  for (const int r : it->second) {
    if (m_g.node(r).op_type() == "Shape") {
      continue;  // the same shape with or without the bias
    }
    if (add != -1) {
      return -1;  // read twice (or by two nodes)
    }
    add = r;
  }
  if (add < 0) {
    return -1;
  }
  const NodeProto& a = m_g.node(add);
  if (a.op_type() != "Add" || !(a.domain().empty() || a.domain() == "ai.onnx") ||
      a.input_size() != 2 || a.input(0) == a.input(1)) {
    return -1;
  }
  const std::string& other = a.input(0) == y ? a.input(1) : a.input(0);
  const Tensor& t = state(other);
  if (t.kind != Kind::initializer) {
    return -1;
  }
  const std::vector<Index> bd = tensor_dims(*t.tensor);
  if (!(bd == std::vector<Index>{out_features} || bd == std::vector<Index>{1, out_features})) {
    return -1;
  }
  bias = other;
  return add;
}

void Importer::matmul(int i) {
  const NodeProto& n = m_g.node(i);
  Index x = -1;
  if (!data_input(i, 0, x)) {
    return;
  }
  const std::vector<Index>& xs = m_builder->shape(x);
  if (xs.size() != 1) {
    unsupported(i, fmt::format("an input of shape {}: pathlift's linear layer multiplies vectors",
                               shape_text(xs)));
    return;
  }
  const Tensor* w = parameter(i, 1, "weight");
  if (w == nullptr) {
    return;
  }
  const std::vector<Index> wd = tensor_dims(*w->tensor);
  if (wd.size() != 2) {
    unsupported(i, fmt::format("its second operand '{}' has shape {}: pathlift reads a matrix",
                               printable(n.input(1)), shape_text(wd)));
    return;
  }
  // x W with W (in, out); x Transpose(W) with W stored (out, in), theta's layout.
  const bool as_stored = w->kind == Kind::transposed;
  const Index out = as_stored ? wd[0] : wd[1];
  const Index in = as_stored ? wd[1] : wd[0];
  if (xs[0] != in) {
    invalid(i, fmt::format("weight '{}' of shape {} takes {} features but the input has shape {}",
                           printable(n.input(1)), shape_text(wd), in, shape_text(xs)));
    return;
  }
  std::string bias_name;
  const int add = bias_add(i, out, bias_name);
  const Tensor* b = nullptr;
  if (add >= 0) {
    b = &state(bias_name);
    if (!is_floating(b->tensor->data_type())) {
      invalid(add, fmt::format("bias '{}' has data type {}: weights must be floating point (FLOAT "
                               "or DOUBLE)",
                               printable(bias_name), type_name(b->tensor->data_type())));
      return;
    }
    check_tensor_data(m_model, *b->tensor);
    m_absorbed[static_cast<std::size_t>(add)] = 1;
  }
  add_linear(i, x, *w, b, as_stored, {out, in});
}

// ---------------------------------------------------------------------------------------------
// Batch norms, sums, concatenations, flattens, pads

void Importer::batch_norm(int i) {
  const NodeProto& n = m_g.node(i);
  Index x = -1;
  if (!data_input(i, 0, x)) {
    return;
  }
  static constexpr const char* k_what[] = {"", "scale", "bias", "mean", "variance"};
  std::vector<double> p[5];
  const Tensor* t[5] = {};
  const std::vector<Index>& shape = m_builder->shape(x);
  for (int k = 1; k < 5; ++k) {
    t[k] = parameter(i, k, k_what[k]);
    if (t[k] == nullptr) {
      return;
    }
    p[k] = float_values(m_model, *t[k]->tensor);
    if (std::cmp_not_equal(p[k].size(), shape[0])) {
      invalid(i,
              fmt::format("{} '{}' of shape {} has {} entries, but the input of shape {} has {} "
                          "channels",
                          k_what[k], printable(n.input(k)), shape_text(tensor_dims(*t[k]->tensor)),
                          p[k].size(), shape_text(shape), shape[0]));
      return;
    }
    if (k <= 2) {  // the statistics are checked by fold_batch_norm
      for (std::size_t c = 0; c < p[k].size(); ++c) {
        if (!std::isfinite(p[k][c])) {
          invalid(i, fmt::format("initializer '{}' entry {} is not finite: {}",
                                 printable(n.input(k)), c, p[k][c]));
          return;
        }
      }
    }
  }
  // Stored as a float in the file, as PyTorch's exporter writes it.
  const double eps = float_attr(n, "epsilon", 1e-5);
  BatchNormAffine f;
  try {
    f = fold_batch_norm(p[1], p[2], p[3], p[4], eps, fmt::format("ONNX node {}", label(i)));
  } catch (const NetworkError& e) {
    m_invalid.emplace_back(e.what());
    return;
  }
  for (std::size_t c = 0; c < f.a.size(); ++c) {
    if (!std::isfinite(f.a[c]) || !std::isfinite(f.b[c])) {
      invalid(i, fmt::format("channel {} folds to a = {}, b = {}: not finite", c, f.a[c], f.b[c]));
      return;
    }
  }
  Layer l = node_layer(i, {x});
  l.weight_offset = 0;
  l.bias_offset = 0;
  LayerParameters lp;
  lp.weight = ParameterTensor{t[1]->tensor->name(), tensor_dims(*t[1]->tensor)};
  lp.bias = ParameterTensor{t[2]->tensor->name(), tensor_dims(*t[2]->tensor)};
  const LayerOutput y = m_builder->add(std::move(l), lp);
  if (y.ok) {
    m_uses.push_back({y.layer, false, t[1]->param, t[1]->tensor, false,
                      std::make_shared<std::vector<double>>(std::move(f.a))});
    m_uses.push_back({y.layer, true, t[2]->param, t[2]->tensor, false,
                      std::make_shared<std::vector<double>>(std::move(f.b))});
  }
  set_data(i, y);
}

void Importer::add_sub_concat(int i) {
  const NodeProto& n = m_g.node(i);
  const std::string& op = n.op_type();
  if (m_absorbed[static_cast<std::size_t>(i)] != 0) {  // the bias of the MatMul before it
    const bool first = state(n.input(0)).kind == Kind::data;
    set(n.output(0), state(n.input(first ? 0 : 1)));
    return;
  }
  Layer l = node_layer(i, {});  // add, sub or concat
  for (int k = 0; k < n.input_size(); ++k) {
    const Tensor& t = state(n.input(k));
    if (t.kind == Kind::view) {
      refuse_view(*t.view, label(i));
      return;
    }
    if (t.kind != Kind::data) {
      unsupported(i, op == "Add" ? "a constant operand other than a MatMul's bias"
                                 : fmt::format("its input '{}' is a constant, not computed from "
                                               "the data input",
                                               printable(n.input(k))));
      return;
    }
    l.inputs.push_back(t.layer);
  }
  const std::vector<Index>& first = m_builder->shape(l.inputs[0]);
  if (op != "Concat") {
    const std::vector<Index>& second = m_builder->shape(l.inputs[1]);
    if (first != second) {
      unsupported(i, fmt::format("operands of per-sample shapes {} and {}: broadcasting",
                                 shape_text(first), shape_text(second)));
      return;
    }
    set_data(i, m_builder->add(std::move(l)));
    return;
  }
  // ONNX's axis counts the batch: axis 1 is pathlift's 0.
  const auto rank = static_cast<Index>(first.size()) + 1;
  if (attribute(n, "axis") == nullptr) {
    invalid(i, "the attribute axis is required");
    return;
  }
  Index axis = int_attr(n, "axis", 0);
  if (axis < -rank || axis >= rank) {
    invalid(i, fmt::format("axis {} is out of range for inputs of rank {} (the batch, then the "
                           "per-sample shape {})",
                           axis, rank, shape_text(first)));
    return;
  }
  axis = axis < 0 ? axis + rank : axis;
  if (axis == 0) {
    unsupported(i, fmt::format("along the batch dimension (axis {})", int_attr(n, "axis", 0)));
    return;
  }
  for (std::size_t k = 1; k < l.inputs.size(); ++k) {
    const std::vector<Index>& s = m_builder->shape(l.inputs[k]);
    bool ok = s.size() == first.size();
    for (std::size_t d = 0; ok && d < s.size(); ++d) {
      ok = std::cmp_equal(d + 1, axis) || s[d] == first[d];
    }
    if (!ok) {
      invalid(i, fmt::format("input {} has per-sample shape {} but input 0 has {}: only axis {} "
                             "may differ",
                             k, shape_text(s), shape_text(first), axis));
      return;
    }
  }
  l.axis = axis - 1;
  set_data(i, m_builder->add(std::move(l)));
}

void Importer::flatten(int i) {
  const NodeProto& n = m_g.node(i);
  Index x = -1;
  std::shared_ptr<const EntryView> view;
  if (!data_or_view(i, x, &view)) {
    return;
  }
  const std::vector<Index> shape = view ? view->shape() : m_builder->shape(x);
  const auto rank = static_cast<Index>(shape.size()) + 1;
  const Index given = int_attr(n, "axis", 1);
  if (given < -rank || given > rank) {
    invalid(i, fmt::format("axis {} is out of range for an input of rank {} (the batch, then the "
                           "per-sample shape {})",
                           given, rank, shape_text(shape)));
    return;
  }
  if ((given < 0 ? given + rank : given) != 1) {
    unsupported(i, fmt::format("axis {}: pathlift flattens to (batch, features), axis 1", given));
    return;
  }
  if (view) {
    auto v = std::make_shared<EntryView>(*view);
    Index entries = 1;
    for (const Index s : shape) {
      entries *= s;
    }
    reshape_view(*v, {entries});  // one dimension takes every atom
    set_view(i, std::move(v));
    return;
  }
  set_data(i, m_builder->add(node_layer(i, {x})));
}

void Importer::reshape(int i) {
  const NodeProto& n = m_g.node(i);
  Index x = -1;
  std::shared_ptr<const EntryView> view;
  if (!data_or_view(i, x, &view)) {
    return;
  }
  const Kind by = state(n.input(1)).kind;
  if (by == Kind::data || by == Kind::view) {
    unsupported(i, "its shape is computed from the data, not a constant");
    return;
  }
  const auto target = constant_input(i, 1);
  if (!target) {
    return;
  }
  const std::vector<Index> shape = view ? view->shape() : m_builder->shape(x);
  Index entries = 1;
  for (const Index s : shape) {
    entries *= s;  // below 2^31 (the builder's bound)
  }
  std::vector<Scalar> t = target->values;
  for (std::size_t k = 0; k < t.size(); ++k) {
    if (target->real && !t[k].batch) {
      t[k].i =
          checked_integer(t[k].f, fmt::format("ONNX node {}: entry {} of its shape", label(i), k));
    }
  }
  const bool zero_copies = int_attr(n, "allowzero", 0) == 0;
  // The batch as the symbolic batch size, 0 (copied), 1 (exported at batch 1) or -1 (inferred,
  // with every other dimension given).
  const bool batch_inferred = !t.empty() && !t[0].batch && t[0].i == -1;
  const bool batch_kept =
      !t.empty() && (t[0].batch || batch_inferred || t[0].i == 1 || (zero_copies && t[0].i == 0));
  if (t.size() == 2 && !t[1].batch && batch_kept) {
    // (batch, features): a flatten.
    const Index b = t[1].i;
    if (b == entries || (b == -1 && !batch_inferred) ||
        (zero_copies && b == 0 && shape.size() == 1)) {
      if (!view) {
        set_data(i, m_builder->add(make_layer(LayerKind::flatten, node_name(i), {x})));
        return;
      }
      auto v = std::make_shared<EntryView>(*view);
      if (reshape_view(*v, {entries})) {  // always: one dimension takes every atom
        set_view(i, std::move(v));
        return;
      }
    }
  }
  // (batch, d1, ..., dk): 0 copies the input's dimension, one -1 is inferred.
  std::vector<Index> to;
  bool ok = batch_kept && t.size() >= 2;
  Index known = 1;
  int inferred = batch_inferred ? 0 : -1;
  for (std::size_t k = 1; ok && k < t.size(); ++k) {
    Index d = t[k].batch ? -2 : t[k].i;
    if (d == 0 && zero_copies) {
      d = k - 1 < shape.size() ? shape[k - 1] : -2;
    } else if (d == -1 && inferred < 0) {
      inferred = static_cast<int>(k);
      d = 1;
    }
    ok = d >= 1 && d <= entries && known <= entries / d;
    known *= ok ? d : 1;
    to.push_back(d);
  }
  if (ok && inferred > 0) {
    ok = entries % known == 0;
    to[static_cast<std::size_t>(inferred - 1)] = ok ? entries / known : 0;
    known = entries;
  }
  if (!ok || known != entries) {
    unsupported(i, fmt::format("not a flatten of the input of per-sample shape {} to (batch, {}): "
                               "shape {}",
                               shape_text(shape), entries, constant_text(*target)));
    return;
  }
  if (!view && to == shape) {
    set(n.output(0), state(n.input(0)));  // the same tensor
    return;
  }
  auto v = view ? std::make_shared<EntryView>(*view) : identity_view(x, shape, i);
  if (!reshape_view(*v, to)) {
    unsupported(i, fmt::format("not a flatten: a reshape of per-sample shape {} to {} that mixes "
                               "the digits of the entries a transpose reordered",
                               shape_text(shape), shape_text(to)));
    return;
  }
  set_view(i, std::move(v));
}

void Importer::pad(int i) {
  const NodeProto& n = m_g.node(i);
  Index x = -1;
  if (!data_input(i, 0, x)) {
    return;
  }
  const std::vector<Index>& shape = m_builder->shape(x);
  const auto rank = static_cast<Index>(shape.size()) + 1;
  std::optional<std::vector<std::int64_t>> pads;
  std::optional<std::vector<std::int64_t>> axes;
  if (!ints_input(i, 1, "pads", pads) || !ints_input(i, 3, nullptr, axes)) {
    return;
  }
  if (!pads) {
    invalid(i, "the pads are missing (input 1, or the attribute before opset 11)");
    return;
  }
  const std::string mode = string_attr(n, "mode", "constant");
  // The constant: input 2 (opset 11), else the attribute value; only 0.
  double value = float_attr(n, "value", 0.0);
  if (mode == "constant" && n.input_size() > 2 && !n.input(2).empty()) {
    const auto v = constant_input(i, 2);
    if (!v) {
      return;
    }
    if (v->values.size() != 1 || v->values[0].batch) {
      invalid(i, "its constant_value is not one value");
      return;
    }
    value = v->real ? v->values[0].f : static_cast<double>(v->values[0].i);
  }
  if (mode == "constant" && value != 0.0) {
    unsupported(i, fmt::format("padding with {}, not 0", value));
    return;
  }
  std::vector<Index> order;
  if (axes) {
    std::vector<bool> seen(static_cast<std::size_t>(rank), false);
    for (const std::int64_t a : *axes) {
      const Index axis = a < 0 ? a + rank : a;
      if (axis < 0 || axis >= rank || seen[static_cast<std::size_t>(axis)]) {
        invalid(i, fmt::format("axes [{}] are not distinct axes of an input of rank {}",
                               fmt::join(*axes, ", "), rank));
        return;
      }
      seen[static_cast<std::size_t>(axis)] = true;
      order.push_back(axis);
    }
  } else {
    for (Index a = 0; a < rank; ++a) {
      order.push_back(a);
    }
  }
  if (pads->size() != 2 * order.size()) {
    invalid(i, fmt::format("pads [{}] has {} entries for {} axes (begins, then ends)",
                           fmt::join(*pads, ", "), pads->size(), order.size()));
    return;
  }
  if (mode != "constant") {
    copy_pad(i, x, mode, *pads, order);
    return;
  }
  // Spatial padding only (axes 2, ...), the same on both sides, not negative.
  std::vector<Index> spatial(static_cast<std::size_t>(std::max<Index>(rank - 2, 0)), 0);
  bool zero = true;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const std::int64_t b = (*pads)[k];
    const std::int64_t e = (*pads)[k + order.size()];
    if (b == 0 && e == 0) {
      continue;
    }
    zero = false;
    if (order[k] < 2) {
      unsupported(i, fmt::format("pads [{}] pad axis {}, not a spatial one", fmt::join(*pads, ", "),
                                 order[k]));
      return;
    }
    if (b < 0 || e < 0) {
      unsupported(i, fmt::format("negative pads [{}] (cropping)", fmt::join(*pads, ", ")));
      return;
    }
    if (b != e) {
      unsupported(i, fmt::format("asymmetric padding [{}]", fmt::join(*pads, ", ")));
      return;
    }
    if (b > k_max_dim) {
      invalid(i, fmt::format("pads [{}] must be at most {}", fmt::join(*pads, ", "), k_max_dim));
      return;
    }
    spatial[static_cast<std::size_t>(order[k] - 2)] = b;
  }
  if (zero) {
    set(n.output(0), state(n.input(0)));
    return;
  }
  // A zero padding is a Conv's or an AveragePool's own: each reader must be one.
  const std::string& y = n.output(0);
  bool merged = m_graph_outputs.count(y) == 0;
  if (const auto it = m_readers.find(y); merged && it != m_readers.end()) {
    for (const int r : it->second) {
      const NodeProto& m = m_g.node(r);
      merged = merged && (m.domain().empty() || m.domain() == "ai.onnx") &&
               (m.op_type() == "Conv" || m.op_type() == "AveragePool") && m.input(0) == y &&
               std::count(m.input().begin(), m.input().end(), y) == 1;
    }
  }
  if (!merged) {
    unsupported(i, "a padding that is not merged into a Conv or an AveragePool");
    return;
  }
  Tensor t;
  t.kind = Kind::pad;
  t.layer = x;
  t.pads = std::move(spatial);
  set(y, std::move(t));
}

}  // namespace pathlift::detail
