// The ONNX importer's constants (onnx_import.hpp): what an exporter computes from constants and
// from shapes is evaluated at import, as onnx-simplifier would: Constant, Shape (of a tensor
// computed from the data: its per-sample shape is known, the batch size stays symbolic), Gather,
// Cast, ConstantOfShape, Concat, Unsqueeze, Squeeze, Identity, and Add, Sub, Mul, Div; Slice,
// Reshape, Transpose and Floor in onnx_fold_tensors.cpp. torch.onnx.export writes such subgraphs
// for x.view(x.size(0), -1) (Reshape then sees (batch, -1)), for the pads of a reflect or
// replicate padding, the sizes of an interpolation, the split points of x.chunk(2, dim=1).

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "pathlift/error.hpp"
#include "src/core/checked.hpp"
#include "src/layers/detail/onnx_import.hpp"

namespace pathlift::detail {

namespace {

std::shared_ptr<const Constant> make(Constant c) {
  return std::make_shared<const Constant>(std::move(c));
}

}  // namespace

void Importer::set_constant(const std::string& name, Constant c) {
  Tensor t;
  t.kind = Kind::constant;
  t.value = make(std::move(c));
  set(name, std::move(t));
}

std::shared_ptr<const Constant> Importer::constant_input(int i, int k) {
  const std::string& name = m_g.node(i).input(k);
  const Tensor& t = state(name);
  switch (t.kind) {
    case Kind::failed:
      return nullptr;
    case Kind::constant:
    case Kind::initializer: {
      if (t.value) {
        return t.value;
      }
      Index n = -1;
      try {
        n = tensor_entries(*t.tensor);
        if (n <= k_max_constant_entries) {
          return make(constant_of(m_model, *t.tensor));
        }
      } catch (const FormatError& e) {
        throw FormatError(
            fmt::format("ONNX node {}, input '{}': {}", label(i), printable(name), e.what()));
      }
      unsupported(i, fmt::format("its input '{}' has {} entries: pathlift evaluates constants of "
                                 "up to {}",
                                 printable(name), n, k_max_constant_entries));
      return nullptr;
    }
    case Kind::data:
    case Kind::transposed:
    case Kind::pad:
    case Kind::view:
      unsupported(
          i, fmt::format(
                 "its input '{}' is {}not a constant", printable(name),
                 t.kind == Kind::data || t.kind == Kind::view ? "computed from the data, " : ""));
      return nullptr;
  }
  return nullptr;
}

bool Importer::slice_args(int i, SliceArgs& out) {
  std::optional<std::vector<std::int64_t>> starts;
  std::optional<std::vector<std::int64_t>> ends;
  std::optional<std::vector<std::int64_t>> axes;
  std::optional<std::vector<std::int64_t>> steps;
  if (!ints_input(i, 1, "starts", starts) || !ints_input(i, 2, "ends", ends) ||
      !ints_input(i, 3, "axes", axes) || !ints_input(i, 4, nullptr, steps)) {
    return false;
  }
  if (!starts || !ends) {
    invalid(i, "starts and ends are required");
    return false;
  }
  const std::size_t count = starts->size();
  const auto sized = [&](const auto& v) { return !v || v->size() == count; };
  if (ends->size() != count || !sized(axes) || !sized(steps)) {
    invalid(i, "starts, ends, axes and steps must have one entry per sliced axis");
    return false;
  }
  out.starts = std::move(*starts);
  out.ends = std::move(*ends);
  if (axes) {
    out.axes = std::move(*axes);
  } else {
    for (std::size_t k = 0; k < count; ++k) {
      out.axes.push_back(static_cast<std::int64_t>(k));
    }
  }
  out.steps = steps ? std::move(*steps) : std::vector<std::int64_t>(count, 1);
  return true;
}

bool Importer::ints_input(int i, int k, const char* attr,
                          std::optional<std::vector<std::int64_t>>& out) {
  const NodeProto& n = m_g.node(i);
  out.reset();
  if (k < n.input_size() && !n.input(k).empty()) {
    const auto c = constant_input(i, k);
    if (!c) {
      return false;
    }
    std::vector<std::int64_t> v;
    for (std::size_t e = 0; e < c->values.size(); ++e) {
      const Scalar& s = c->values[e];
      if (s.batch) {
        unsupported(i, fmt::format("input '{}' holds the batch size", printable(n.input(k))));
        return false;
      }
      v.push_back(c->real ? checked_integer(s.f, fmt::format("ONNX node {}: entry {} of input '{}'",
                                                             label(i), e, printable(n.input(k))))
                          : s.i);
    }
    out = std::move(v);
  } else if (attr != nullptr) {
    if (const auto a = ints_attr(n, attr)) {
      out.emplace(a->begin(), a->end());
    }
  }
  return true;
}

bool Importer::fold(int i) {
  const NodeProto& n = m_g.node(i);
  const Operator& op = *operator_of(n);
  const auto constant = [&](const std::string& s) {
    const Kind k = s.empty() ? Kind::constant : state(s).kind;
    return k == Kind::initializer || k == Kind::constant;
  };
  bool folds = false;
  switch (op.fold_when) {
    case FoldWhen::never:
      break;
    case FoldWhen::always:
      folds = true;
      break;
    case FoldWhen::of_constant:
      // Gather, Slice, Reshape, Transpose and Floor of a tensor computed from the data are
      // layers (onnx_views.cpp); of a constant, constants.
      folds = n.input_size() == 0 || constant(n.input(0));
      break;
    case FoldWhen::all_constant:
      // An Add of data is a layer.
      folds = std::all_of(n.input().begin(), n.input().end(), constant);
      break;
  }
  if (folds) {
    (this->*op.fold)(i);
  }
  return folds;
}

void Importer::fold_identity(int i) {
  const NodeProto& n = m_g.node(i);
  Tensor t = state(n.input(0));
  if (t.kind == Kind::initializer) {
    t.param = n.output(0);  // an alias: a parameter of its own
  }
  set(n.output(0), std::move(t));
}

void Importer::fold_constant_node(int i) {
  const NodeProto& n = m_g.node(i);
  Tensor t;
  t.kind = Kind::constant;
  Constant c;
  if (const auto* a = attribute(n, "value")) {
    try {
      tensor_dims(a->t());  // negative or overflowing dims
    } catch (const FormatError& e) {
      throw FormatError(fmt::format("ONNX node {}: {}", label(i), e.what()));
    }
    t.tensor = &a->t();  // read when used, within k_max_constant_entries
  } else if (const auto* f = attribute(n, "value_float")) {
    c.real = true;
    c.values.push_back({.f = static_cast<double>(f->f())});
    t.value = make(std::move(c));
  } else if (const auto* fs = attribute(n, "value_floats")) {
    c.real = true;
    c.dims = {fs->floats_size()};
    for (const float x : fs->floats()) {
      c.values.push_back({.f = static_cast<double>(x)});
    }
    t.value = make(std::move(c));
  } else if (const auto* v = attribute(n, "value_int")) {
    c.values.push_back({.i = v->i()});
    t.value = make(std::move(c));
  } else if (const auto* vs = attribute(n, "value_ints")) {
    c.dims = {vs->ints_size()};
    for (const std::int64_t x : vs->ints()) {
      c.values.push_back({.i = x});
    }
    t.value = make(std::move(c));
  } else if (attribute(n, "sparse_value") != nullptr || attribute(n, "value_string") != nullptr ||
             attribute(n, "value_strings") != nullptr) {
    unsupported(i, "a sparse or string constant");
    return;
  } else {
    invalid(i, "a Constant without a value attribute");
    return;
  }
  set(n.output(0), std::move(t));
}

void Importer::fold_shape(int i) {
  const NodeProto& n = m_g.node(i);
  const Tensor& x = state(n.input(0));
  Constant c;
  if (x.kind == Kind::data || x.kind == Kind::view) {
    c.values.push_back({.batch = true});
    for (const Index d : x.kind == Kind::view ? x.view->shape() : m_builder->shape(x.layer)) {
      c.values.push_back({.i = d});
    }
  } else if (x.kind == Kind::initializer || x.kind == Kind::constant) {
    std::vector<Index> dims;
    try {
      dims = x.value ? x.value->dims : tensor_dims(*x.tensor);
    } catch (const FormatError& e) {
      throw FormatError(fmt::format("ONNX node {}: {}", label(i), e.what()));
    }
    for (const Index d : dims) {
      c.values.push_back({.i = d});
    }
  } else {
    unsupported(i, "the shape of a pending Pad or a transposed weight");
    return;
  }
  // Opset 15: the entries [start, end), negative from the end, clamped.
  const auto rank = static_cast<Index>(c.values.size());
  const auto clamp = [&](Index v) { return std::clamp<Index>(v < 0 ? v + rank : v, 0, rank); };
  const Index start = clamp(int_attr(n, "start", 0));
  const Index end = attribute(n, "end") != nullptr ? clamp(int_attr(n, "end", rank)) : rank;
  c.values = end > start ? std::vector<Scalar>(c.values.begin() + start, c.values.begin() + end)
                         : std::vector<Scalar>{};
  c.dims = {static_cast<Index>(c.values.size())};
  set_constant(n.output(0), std::move(c));
}

void Importer::fold_gather(int i) {
  const NodeProto& n = m_g.node(i);
  const auto data = constant_input(i, 0);
  const auto idx = data ? constant_input(i, 1) : nullptr;
  if (!idx) {
    return;
  }
  if (data->dims.size() != 1) {
    unsupported(i, fmt::format("a Gather from a constant of shape {} (pathlift evaluates "
                               "Gather from vectors)",
                               shape_text(data->dims)));
    return;
  }
  const Index axis = int_attr(n, "axis", 0);
  if (axis != 0 && axis != -1) {
    invalid(i, fmt::format("axis {} is out of range for a vector", axis));
    return;
  }
  if (idx->real) {
    invalid(i, "its indices are not integers");
    return;
  }
  const auto size = static_cast<std::int64_t>(data->values.size());
  Constant c;
  c.dims = idx->dims;
  c.real = data->real;
  for (const Scalar& s : idx->values) {
    if (s.batch || s.i < -size || s.i >= size) {
      invalid(i, fmt::format("index {} is out of range for a vector of {} entries",
                             s.batch ? "batch" : std::to_string(s.i), size));
      return;
    }
    c.values.push_back(data->values[static_cast<std::size_t>(s.i < 0 ? s.i + size : s.i)]);
  }
  set_constant(n.output(0), std::move(c));
}

void Importer::fold_cast(int i) {
  const NodeProto& n = m_g.node(i);
  const auto v = constant_input(i, 0);
  if (!v) {
    return;
  }
  const auto to = static_cast<int>(int_attr(n, "to", 0));
  Constant c = *v;
  const bool to_real = to == TensorProto::FLOAT || to == TensorProto::DOUBLE ||
                       to == TensorProto::FLOAT16 || to == TensorProto::BFLOAT16;
  std::int64_t lo = std::numeric_limits<std::int64_t>::min();
  std::int64_t hi = std::numeric_limits<std::int64_t>::max();
  switch (to) {
    case TensorProto::INT32:
      lo = std::numeric_limits<std::int32_t>::min();
      hi = std::numeric_limits<std::int32_t>::max();
      break;
    case TensorProto::INT16:
      lo = std::numeric_limits<std::int16_t>::min();
      hi = std::numeric_limits<std::int16_t>::max();
      break;
    case TensorProto::INT8:
      lo = std::numeric_limits<std::int8_t>::min();
      hi = std::numeric_limits<std::int8_t>::max();
      break;
    case TensorProto::UINT8:
    case TensorProto::UINT16:
    case TensorProto::UINT32:
    case TensorProto::UINT64:
      lo = 0;
      break;
    case TensorProto::INT64:
    case TensorProto::BOOL:
      break;
    default:
      if (!to_real) {
        unsupported(i, fmt::format("a cast to {}", type_name(to)));
        return;
      }
  }
  c.real = to_real;
  for (std::size_t k = 0; k < c.values.size(); ++k) {
    Scalar& s = c.values[k];
    if (s.batch) {
      continue;  // still the batch size
    }
    if (to_real) {
      s.f = v->real ? s.f : static_cast<double>(s.i);
      continue;
    }
    if (v->real) {  // truncated toward zero, as the operator does
      s.i = to == TensorProto::BOOL
                ? (s.f != 0 ? 1 : 0)
                : checked_integer(std::trunc(s.f),
                                  fmt::format("ONNX node {}: entry {}", label(i), k));
    } else if (to == TensorProto::BOOL) {
      s.i = s.i != 0 ? 1 : 0;
    }
    if (s.i < lo || s.i > hi) {
      invalid(i, fmt::format("entry {} ({}) does not fit in {}", k, s.i, type_name(to)));
      return;
    }
  }
  set_constant(n.output(0), std::move(c));
}

void Importer::fold_constant_of_shape(int i) {
  const NodeProto& n = m_g.node(i);
  const auto shape = constant_input(i, 0);
  if (!shape) {
    return;
  }
  Constant c;
  for (const Scalar& s : shape->values) {
    if (s.batch) {
      unsupported(i, "a tensor as large as the batch");
      return;
    }
    if (shape->real) {
      invalid(i, "its shape is not integers");
      return;
    }
    c.dims.push_back(s.i);
  }
  const Index entries = entries_of(c.dims);
  if (entries < 0 || entries > k_max_constant_entries) {
    unsupported(i, fmt::format("a constant of shape {}: pathlift evaluates constants of up to {} "
                               "entries",
                               shape_text(c.dims), k_max_constant_entries));
    return;
  }
  Scalar fill{};
  c.real = true;  // the default: a float 0
  if (const auto* a = attribute(n, "value")) {
    Constant v;
    try {
      if (tensor_entries(a->t()) != 1) {
        invalid(i, "its value is not one entry");
        return;
      }
      v = constant_of(m_model, a->t());
    } catch (const FormatError& e) {
      throw FormatError(fmt::format("ONNX node {}: {}", label(i), e.what()));
    }
    fill = v.values[0];
    c.real = v.real;
  }
  c.values.assign(static_cast<std::size_t>(entries), fill);
  set_constant(n.output(0), std::move(c));
}

void Importer::fold_concat(int i) {
  const NodeProto& n = m_g.node(i);
  Constant c;
  c.dims = {0};
  for (int k = 0; k < n.input_size(); ++k) {
    const auto v = constant_input(i, k);
    if (!v) {
      return;
    }
    if (v->dims.size() != 1) {
      unsupported(i, fmt::format("a Concat of constants of shape {} (pathlift evaluates vectors)",
                                 shape_text(v->dims)));
      return;
    }
    if (k > 0 && v->real != c.real) {
      invalid(i, "its inputs have different types");
      return;
    }
    c.real = v->real;
    c.values.insert(c.values.end(), v->values.begin(), v->values.end());
    if (std::cmp_greater(c.values.size(), k_max_constant_entries)) {
      unsupported(i, fmt::format("more than {} entries", k_max_constant_entries));
      return;
    }
  }
  const Index axis = int_attr(n, "axis", 0);
  if (attribute(n, "axis") == nullptr || (axis != 0 && axis != -1)) {
    invalid(i, fmt::format("axis {} of vectors",
                           attribute(n, "axis") ? std::to_string(axis) : std::string("missing")));
    return;
  }
  c.dims = {static_cast<Index>(c.values.size())};
  set_constant(n.output(0), std::move(c));
}

void Importer::fold_unsqueeze(int i) {
  const NodeProto& n = m_g.node(i);
  const bool squeeze = n.op_type() == "Squeeze";
  const auto v = constant_input(i, 0);
  std::optional<std::vector<std::int64_t>> axes;
  if (!v || !ints_input(i, 1, "axes", axes)) {
    return;
  }
  Constant c = *v;
  const auto in_rank = static_cast<std::int64_t>(v->dims.size());
  if (squeeze) {
    std::vector<bool> drop(v->dims.size(), false);
    if (!axes) {
      for (std::size_t d = 0; d < v->dims.size(); ++d) {
        drop[d] = v->dims[d] == 1;
      }
    }
    for (const std::int64_t a : axes.value_or(std::vector<std::int64_t>{})) {
      const std::int64_t axis = a < 0 ? a + in_rank : a;
      if (axis < 0 || axis >= in_rank || v->dims[static_cast<std::size_t>(axis)] != 1) {
        invalid(i, fmt::format("axis {} is not a dimension of size 1 of shape {}", a,
                               shape_text(v->dims)));
        return;
      }
      drop[static_cast<std::size_t>(axis)] = true;
    }
    c.dims.clear();
    for (std::size_t d = 0; d < v->dims.size(); ++d) {
      if (!drop[d]) {
        c.dims.push_back(v->dims[d]);
      }
    }
  } else {
    if (!axes) {
      invalid(i, "its axes are missing");
      return;
    }
    const auto rank = in_rank + static_cast<std::int64_t>(axes->size());
    std::vector<bool> inserted(static_cast<std::size_t>(rank), false);
    for (const std::int64_t a : *axes) {
      const std::int64_t axis = a < 0 ? a + rank : a;
      if (axis < 0 || axis >= rank || inserted[static_cast<std::size_t>(axis)]) {
        invalid(i, fmt::format("axes [{}] are not distinct axes of the rank-{} result",
                               fmt::join(*axes, ", "), rank));
        return;
      }
      inserted[static_cast<std::size_t>(axis)] = true;
    }
    c.dims.clear();
    std::size_t next = 0;
    for (std::int64_t d = 0; d < rank; ++d) {
      c.dims.push_back(inserted[static_cast<std::size_t>(d)] ? 1 : v->dims[next++]);
    }
  }
  set_constant(n.output(0), std::move(c));
}

void Importer::fold_arithmetic(int i) {
  const NodeProto& n = m_g.node(i);
  const std::string& op = n.op_type();
  const auto a = constant_input(i, 0);
  const auto b = a ? constant_input(i, 1) : nullptr;
  if (!b) {
    return;
  }
  if (a->real != b->real) {
    invalid(i, "its operands have different types");
    return;
  }
  // Equal shapes, or one operand a single value (broadcast).
  Constant c;
  c.real = a->real;
  const bool a_one = a->values.size() == 1;
  const bool b_one = b->values.size() == 1;
  if (a->dims == b->dims) {
    c.dims = a->dims;
  } else if (a_one || b_one) {
    const Constant& big = a_one ? *b : *a;
    const Constant& small = a_one ? *a : *b;
    c.dims = big.dims;
    if (small.dims.size() > big.dims.size()) {
      c.dims.insert(c.dims.begin(), small.dims.size() - big.dims.size(), 1);
    }
  } else {
    unsupported(i, fmt::format("broadcasting constants of shapes {} and {}", shape_text(a->dims),
                               shape_text(b->dims)));
    return;
  }
  const std::size_t count = std::max(a->values.size(), b->values.size());
  for (std::size_t k = 0; k < count; ++k) {
    const Scalar& x = a->values[a_one ? 0 : k];
    const Scalar& y = b->values[b_one ? 0 : k];
    Scalar r;
    if (x.batch || y.batch) {
      // The batch size times 1, plus 0, minus 0, divided by 1 is still the batch size.
      const Scalar& other = x.batch ? y : x;
      const bool keep =
          !c.real && !other.batch &&
          ((op == "Mul" && other.i == 1) || (op == "Add" && other.i == 0) ||
           (op == "Sub" && x.batch && y.i == 0) || (op == "Div" && x.batch && y.i == 1));
      if (!keep) {
        unsupported(i, "arithmetic on the batch size");
        return;
      }
      r.batch = true;
    } else if (c.real) {
      r.f = op == "Add" ? x.f + y.f : op == "Sub" ? x.f - y.f : op == "Mul" ? x.f * y.f : x.f / y.f;
    } else {
      bool overflow = false;
      if (op == "Add") {
        overflow = add_overflows(x.i, y.i, r.i);
      } else if (op == "Sub") {
        overflow = __builtin_sub_overflow(x.i, y.i, &r.i);
      } else if (op == "Mul") {
        overflow = mul_overflows(x.i, y.i, r.i);
      } else if (y.i == 0) {
        invalid(i, fmt::format("an integer division of {} by 0", x.i));
        return;
      } else {
        overflow = x.i == std::numeric_limits<std::int64_t>::min() && y.i == -1;
        r.i = overflow ? 0 : x.i / y.i;  // truncated toward zero
      }
      if (overflow) {
        invalid(i, fmt::format("{} of {} and {} overflows int64", op, x.i, y.i));
        return;
      }
    }
    c.values.push_back(r);
  }
  set_constant(n.output(0), std::move(c));
}

}  // namespace pathlift::detail
