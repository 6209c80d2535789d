// The ONNX importer's fixed-weight maps (onnx_import.hpp): Clip with min 0 and no max (a ReLU),
// Mul and Div by a constant of one value (a scale layer; the constant is not a parameter), and
// ReduceMean / ReduceSum over every spatial axis (a global average pool, times the number of
// entries for a sum, then a flatten unless keepdims); the order statistics Max and Min of
// several tensors (a group_sort of the inputs interleaved along the channels).

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <limits>

#include "pathlift/error.hpp"
#include "src/layers/detail/onnx_import.hpp"

namespace pathlift::detail {

void Importer::clip(int i) {
  const NodeProto& n = m_g.node(i);
  Index x = -1;
  if (!data_input(i, 0, x)) {
    return;
  }
  // The bounds: inputs 1 and 2 from opset 11, attributes before (their defaults: no bound).
  constexpr double k_lowest = -std::numeric_limits<float>::max();
  constexpr double k_highest = std::numeric_limits<float>::max();
  double bound[2] = {-std::numeric_limits<double>::infinity(),
                     std::numeric_limits<double>::infinity()};
  for (int k = 1; k <= 2; ++k) {
    if (k < n.input_size() && !n.input(k).empty()) {
      const auto c = constant_input(i, k);
      if (!c) {
        return;
      }
      if (c->values.size() != 1 || c->values[0].batch) {
        invalid(i, fmt::format("its {} is not one value", k == 1 ? "min" : "max"));
        return;
      }
      bound[k - 1] = c->real ? c->values[0].f : static_cast<double>(c->values[0].i);
    } else if (m_opset < 11) {
      const double v = float_attr(n, k == 1 ? "min" : "max", k == 1 ? k_lowest : k_highest);
      bound[k - 1] = (k == 1 ? v > k_lowest : v < k_highest) ? v : bound[k - 1];
    }
  }
  const bool no_max = bound[1] == std::numeric_limits<double>::infinity();
  if (bound[0] == -std::numeric_limits<double>::infinity() && no_max) {
    set(n.output(0), state(n.input(0)));  // no bound: the same tensor
    return;
  }
  if (bound[0] != 0.0 || !no_max) {
    unsupported(i, fmt::format("{}: a clamp other than min = 0 without max (a ReLU) is not "
                               "positively homogeneous",
                               no_max ? fmt::format("min {}", bound[0])
                                      : fmt::format("min {}, max {}", bound[0], bound[1])));
    return;
  }
  Layer l = node_layer(i, {x});
  l.activation = Activation::relu();
  set_data(i, m_builder->add(std::move(l)));
}

void Importer::mul_div(int i) {
  const NodeProto& n = m_g.node(i);
  const bool div = n.op_type() == "Div";
  const Kind k0 = state(n.input(0)).kind;
  const Kind k1 = state(n.input(1)).kind;
  const auto computed = [](Kind k) { return k == Kind::data || k == Kind::view; };
  if (computed(k0) && computed(k1)) {
    unsupported(i,
                "a product or quotient of two tensors computed from the data: not positively "
                "homogeneous");
    return;
  }
  if (div && !computed(k0)) {
    unsupported(i, "a constant divided by a tensor computed from the data");
    return;
  }
  const int data = computed(k0) ? 0 : 1;
  Index x = -1;
  if (!data_input(i, data, x)) {
    return;
  }
  const auto c = constant_input(i, 1 - data);
  if (!c) {
    return;
  }
  const auto rank = m_builder->shape(x).size() + 1;
  if (c->values.size() != 1 || c->values[0].batch || c->dims.size() > rank) {
    unsupported(i, fmt::format("its constant '{}' of shape {} is not one value (an entry-wise "
                               "weight would be a parameter)",
                               printable(n.input(1 - data)), shape_text(c->dims)));
    return;
  }
  const double v = c->real ? c->values[0].f : static_cast<double>(c->values[0].i);
  const double factor = div ? 1.0 / v : v;
  if (!std::isfinite(factor)) {
    unsupported(i, fmt::format("{} by {}: the factor is not finite",
                               div ? "a division"
                                   : "a "
                                     "product",
                               v));
    return;
  }
  Layer l = node_layer(i, {x});
  l.factor = factor;
  set_data(i, m_builder->add(std::move(l)));
}

void Importer::reduce(int i) {
  const NodeProto& n = m_g.node(i);
  const bool sum = n.op_type() == "ReduceSum";
  Index x = -1;
  if (!data_input(i, 0, x)) {
    return;
  }
  std::optional<std::vector<std::int64_t>> axes;
  if (!ints_input(i, 1, "axes", axes)) {
    return;
  }
  const std::vector<Index> shape = m_builder->shape(x);
  const auto rank = static_cast<Index>(shape.size()) + 1;
  if (!axes || axes->empty()) {
    if (int_attr(n, "noop_with_empty_axes", 0) != 0) {
      set(n.output(0), state(n.input(0)));
      return;
    }
    unsupported(i, "a reduction over every dimension, the batch's included");
    return;
  }
  // Every spatial dimension (ONNX's axes 2, ...), each once: a global average pool.
  std::vector<bool> seen(static_cast<std::size_t>(rank), false);
  bool spatial = rank >= 3;
  for (const std::int64_t a : *axes) {
    const Index axis = onnx_axis(i, a, rank, "axis");
    if (axis < 0) {
      return;
    }
    spatial = spatial && axis >= 2 && !seen[static_cast<std::size_t>(axis)];
    seen[static_cast<std::size_t>(axis)] = true;
  }
  spatial = spatial && std::cmp_equal(axes->size(), rank - 2);
  if (!spatial) {
    unsupported(i, fmt::format("over axes [{}] of an input of per-sample shape {}: pathlift "
                               "reduces over every spatial dimension (axes 2, ...)",
                               fmt::join(*axes, ", "), shape_text(shape)));
    return;
  }
  Layer pool = make_layer(LayerKind::adaptive_avg_pool, node_name(i), {x});
  pool.output_size.assign(shape.size() - 1, 1);
  LayerOutput y = m_builder->add(std::move(pool));
  if (y.ok && sum) {
    Index count = 1;
    for (std::size_t d = 1; d < shape.size(); ++d) {
      count *= shape[d];
    }
    Layer scale = make_layer(LayerKind::scale, node_name(i), {y.layer});
    scale.factor = static_cast<double>(count);
    y = m_builder->add(std::move(scale));
  }
  if (y.ok && int_attr(n, "keepdims", 1) == 0) {
    y = m_builder->add(make_layer(LayerKind::flatten, node_name(i), {y.layer}));
  }
  set_data(i, y);
}

void Importer::max_min(int i) {
  const NodeProto& n = m_g.node(i);
  std::vector<Index> in;
  for (int k = 0; k < n.input_size(); ++k) {
    Index x = -1;
    if (!data_input(i, k, x)) {
      return;
    }
    if (!in.empty() && m_builder->shape(x) != m_builder->shape(in[0])) {
      unsupported(
          i, fmt::format("operands of per-sample shapes {} and {}: broadcasting",
                         shape_text(m_builder->shape(in[0])), shape_text(m_builder->shape(x))));
      return;
    }
    in.push_back(x);
  }
  Index x = in[0];
  if (in.size() > 1) {
    const auto g = static_cast<Index>(in.size());
    const Index channels = m_builder->shape(x)[0];
    if (const auto found = m_sorted.find(in); found != m_sorted.end()) {
      x = found->second;
    } else {
      // Input k's channel c at k C + c, interleaved to c g + k: groups of one entry per input.
      Layer cat = make_layer(LayerKind::concat, node_name(i), in);
      const LayerOutput stacked = m_builder->add(std::move(cat));
      x = stacked.layer;
      std::vector<Index> interleave;
      for (Index c = 0; c < channels; ++c) {
        for (Index k = 0; k < g; ++k) {
          interleave.push_back(k * channels + c);
        }
      }
      if (!stacked.ok || !gather_along(i, x, 0, std::move(interleave))) {
        return;
      }
      Layer sort = make_layer(LayerKind::group_sort, node_name(i), {x});
      sort.group_size = g;
      sort.descending = true;
      const LayerOutput sorted = m_builder->add(std::move(sort));
      if (!sorted.ok) {
        return;
      }
      x = sorted.layer;
      m_sorted.emplace(in, x);
    }
    std::vector<Index> pick;
    for (Index c = 0; c < channels; ++c) {
      pick.push_back(c * g + (n.op_type() == "Max" ? 0 : g - 1));
    }
    if (!gather_along(i, x, 0, std::move(pick))) {
      return;
    }
  }
  set_output(i, 0, x);
}

std::string Importer::top_k_problem(int) const {
  return "TopK (the k largest entries along an axis) is not a layer pathlift imports from ONNX";
}

}  // namespace pathlift::detail
