// LayerGraphBuilder (layer_graph_builder.hpp): the rules every layer graph follows, checked one
// layer at a time, and layer_shapes(), which replays a whole graph through them.

#include "pathlift/layer_graph_builder.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <limits>
#include <tuple>
#include <utility>

#include "pathlift/error.hpp"
#include "src/layers/detail/layers_geometry.hpp"

namespace pathlift {

namespace {

// Every size, stride, padding and dilation is at most this, and so is every entry count, so
// that no window arithmetic (products of two of them) can overflow 64 bits and every entry is
// a node index.
constexpr Index k_max_dim = std::numeric_limits<std::int32_t>::max();

std::string shape_text(const std::vector<Index>& shape) {
  return fmt::format("{{{}}}", fmt::join(shape, ", "));
}

/// A rule one layer breaks: the builder records it.
struct LayerProblem {
  std::string what;
};

/// The number of entries of `shape`, or a problem naming `what` when a dimension is out of
/// 1..2^31 - 1 or the product exceeds it.
Index checked_entries(const std::vector<Index>& shape, std::string_view what) {
  Index n = 1;
  for (const Index x : shape) {
    if (x < 1 || x > k_max_dim || __builtin_mul_overflow(n, x, &n) || n > k_max_dim) {
      throw LayerProblem{fmt::format("{} {} is empty or has more than {} entries", what,
                                     shape_text(shape), k_max_dim)};
    }
  }
  return n;
}

/// The parameter blocks a layer reads from theta: its weight (batch_norm: a) and bias (b)
/// sizes, and the shape of the tensor each is read as.
struct Blocks {
  Index weight = 0;
  Index bias = 0;
  std::vector<Index> weight_shape;
};

/// Validates one layer against the output shapes of the layers before it and returns its
/// output shape.
class LayerChecker {
 public:
  LayerChecker(const Layer& layer, Index index, const std::vector<std::vector<Index>>& shapes)
      : m_layer(layer), m_index(index), m_shapes(shapes) {}

  std::vector<Index> check() const {
    check_inputs();
    switch (m_layer.kind) {
      case LayerKind::input:
        fail("only layer 0 may be the input");
      case LayerKind::linear:
        return linear();
      case LayerKind::conv:
      case LayerKind::max_pool:
      case LayerKind::avg_pool:
      case LayerKind::adaptive_avg_pool:
        return window();
      case LayerKind::conv_transpose:
        return transposed_window();
      case LayerKind::batch_norm:
        return in(0);
      case LayerKind::scale:
        if (!std::isfinite(m_layer.factor)) {
          fail(fmt::format("factor {} is not finite", m_layer.factor));
        }
        return in(0);
      case LayerKind::gather:
        return gather();
      case LayerKind::activation:
        if (m_layer.activation.kind == ActivationKind::max) {
          fail("activation 'max' is not an entry-wise activation (use a max_pool layer)");
        }
        if (!std::isfinite(m_layer.activation.negative_slope)) {
          fail(fmt::format("negative slope {} is not finite", m_layer.activation.negative_slope));
        }
        return in(0);
      case LayerKind::add:
      case LayerKind::sub:
        for (std::size_t k = 1; k < m_layer.inputs.size(); ++k) {
          if (in(k) != in(0)) {
            fail(fmt::format("input {} has shape {} but input 0 has shape {}", k, shape_text(in(k)),
                             shape_text(in(0))));
          }
        }
        return in(0);
      case LayerKind::concat:
        return concat();
      case LayerKind::flatten:
        return {checked_entries(in(0), "the input of shape")};
    }
    fail("unknown layer kind");
  }

  /// The blocks of a linear, conv or batch_norm layer whose output check() accepted.
  [[nodiscard]] Blocks blocks() const {
    const std::vector<Index>& x = in(0);
    Blocks b;
    switch (m_layer.kind) {
      case LayerKind::linear:
        b.weight = m_layer.out_features * x[0];
        b.bias = m_layer.out_features;
        b.weight_shape = {m_layer.out_features, x[0]};
        break;
      case LayerKind::conv: {
        b.weight_shape = {m_layer.out_channels, x[0] / m_layer.groups};
        b.weight_shape.insert(b.weight_shape.end(), m_layer.kernel.begin(), m_layer.kernel.end());
        b.weight = 1;
        for (const Index k : b.weight_shape) {
          b.weight *= k;  // below out_channels * 2^31: the per-output product is checked
        }
        b.bias = m_layer.out_channels;
        break;
        case LayerKind::conv_transpose: {
          b.weight_shape = {x[0], m_layer.out_channels / m_layer.groups};
          b.weight_shape.insert(b.weight_shape.end(), m_layer.kernel.begin(), m_layer.kernel.end());
          b.weight = 1;
          for (const Index k : b.weight_shape) {
            b.weight *= k;  // checked in transposed_window
          }
          b.bias = m_layer.out_channels;
          break;
        }
      }
      case LayerKind::batch_norm:
        b.weight = b.bias = x[0];
        b.weight_shape = {x[0]};
        break;
      default:
        break;
    }
    return b;
  }

  [[noreturn]] void fail(const std::string& what) const { throw LayerProblem{what}; }

 private:
  const std::vector<Index>& in(std::size_t k) const {
    return m_shapes[static_cast<std::size_t>(m_layer.inputs[k])];
  }

  void check_inputs() const {
    std::size_t lo = 1;
    std::size_t hi = 1;
    switch (m_layer.kind) {
      case LayerKind::add:
        lo = 2;
        hi = SIZE_MAX;
        break;
      case LayerKind::sub:
        lo = hi = 2;
        break;
      case LayerKind::concat:
        hi = SIZE_MAX;
        break;
      default:
        break;
    }
    const std::size_t n = m_layer.inputs.size();
    if (n < lo || n > hi) {
      fail(fmt::format("takes {} input{} but has {}",
                       lo == hi ? std::to_string(lo) : fmt::format("{} or more", lo),
                       hi == 1 ? "" : "s", n));
    }
    for (std::size_t k = 0; k < n; ++k) {
      const Index ref = m_layer.inputs[k];
      if (ref < 0 || ref >= m_index) {
        fail(fmt::format("input {} refers to layer {}, not an earlier layer (0..{})", k, ref,
                         m_index - 1));
      }
    }
  }

  std::vector<Index> linear() const {
    const std::vector<Index>& x = in(0);
    if (x.size() != 1) {
      fail(fmt::format("a linear layer needs a vector input {{F}}, got shape {} (flatten first)",
                       shape_text(x)));
    }
    if (m_layer.out_features < 1 || m_layer.out_features > k_max_dim) {
      fail(fmt::format("out_features must be in 1..{}, got {}", k_max_dim, m_layer.out_features));
    }
    if (x[0] > k_max_dim / m_layer.out_features) {
      fail(fmt::format("{} x {} weights is too many", m_layer.out_features, x[0]));
    }
    return {m_layer.out_features};
  }

  /// A per-dimension list: empty (the default) or one value per spatial dimension, each >= lo.
  void check_list(const char* what, const std::vector<Index>& v, std::size_t dims, Index lo,
                  bool required) const {
    if (v.empty() && !required) {
      return;
    }
    if (v.size() != dims) {
      fail(fmt::format("{} has {} entries but the input {} has {} spatial dimension{}", what,
                       v.size(), shape_text(in(0)), dims, dims == 1 ? "" : "s"));
    }
    for (const Index x : v) {
      if (x < lo || x > k_max_dim) {
        fail(fmt::format("{} {} must be in {}..{}", what, fmt::join(v, ","), lo, k_max_dim));
      }
    }
  }

  std::vector<Index> window() const {
    const std::vector<Index>& x = in(0);
    const bool conv = m_layer.kind == LayerKind::conv;
    if (x.size() != 2 && x.size() != 3) {
      fail(fmt::format("needs a {{C, L}} or {{C, H, W}} input, got shape {}", shape_text(x)));
    }
    const std::size_t dims = x.size() - 1;
    if (m_layer.kind == LayerKind::adaptive_avg_pool) {
      check_list("output_size", m_layer.output_size, dims, 1, true);
    } else {
      check_list("kernel", m_layer.kernel, dims, 1, true);
      check_list("stride", m_layer.stride, dims, 1, false);
      check_list("padding", m_layer.padding, dims, 0, false);
      check_list("dilation", m_layer.dilation, dims, 1, false);
    }
    if (conv) {
      if (m_layer.out_channels < 1 || m_layer.out_channels > k_max_dim) {
        fail(fmt::format("out_channels must be in 1..{}, got {}", k_max_dim, m_layer.out_channels));
      }
      if (m_layer.groups < 1 || x[0] % m_layer.groups != 0 ||
          m_layer.out_channels % m_layer.groups != 0) {
        fail(fmt::format("groups {} must divide the input channels {} and out_channels {}",
                         m_layer.groups, x[0], m_layer.out_channels));
      }
    }
    if (m_layer.ceil_mode && m_layer.kind != LayerKind::max_pool &&
        m_layer.kind != LayerKind::avg_pool) {
      fail("ceil_mode applies to max_pool and avg_pool only");
    }
    const detail::Window win = detail::window_of(m_layer, x);
    std::vector<Index> out{win.channels_out};
    for (std::size_t i = 0; i < dims; ++i) {
      const detail::Axis& a = (dims == 2 && i == 0) ? win.h : win.w;
      if (a.out < 1) {
        fail(fmt::format(
            "kernel {} (dilation {}, span {}) is larger than the padded input {} + 2 x {} in "
            "spatial dimension {} (input shape {})",
            a.kernel, a.dilation, a.dilation * (a.kernel - 1) + 1, a.in, a.padding, i,
            shape_text(x)));
      }
      // A window entirely in the padding would be a constant: a max over nothing, a mean of
      // zeros, a convolution without a term. pathlift has no constant nodes.
      if (!a.adaptive && !(conv && m_layer.bias_offset >= 0)) {
        for (Index o = 0; o < a.out; ++o) {
          if (a.taps(o) == 0) {
            fail(fmt::format(
                "output position {} of spatial dimension {} sees only padding (kernel {}, "
                "stride {}, padding {}, dilation {}, input {}): its value would be a constant",
                o, i, a.kernel, a.stride, a.padding, a.dilation, a.in));
          }
        }
      }
      out.push_back(a.out);
    }
    if (conv) {
      const Index per_out = (x[0] / m_layer.groups) * win.h.kernel * win.w.kernel;
      if (per_out > k_max_dim || m_layer.out_channels > k_max_dim / per_out) {
        fail(fmt::format("{} weights per output channel is too many", per_out));
      }
    }
    return out;
  }

  /// A conv_transpose: its adjoint convolution's window, read backwards.
  std::vector<Index> transposed_window() const {
    const std::vector<Index>& x = in(0);
    if (x.size() != 2 && x.size() != 3) {
      fail(fmt::format("needs a {{C, L}} or {{C, H, W}} input, got shape {}", shape_text(x)));
    }
    const std::size_t dims = x.size() - 1;
    check_list("kernel", m_layer.kernel, dims, 1, true);
    check_list("stride", m_layer.stride, dims, 1, false);
    check_list("padding", m_layer.padding, dims, 0, false);
    check_list("dilation", m_layer.dilation, dims, 1, false);
    check_list("output_padding", m_layer.output_padding, dims, 0, false);
    if (m_layer.ceil_mode) {
      fail("ceil_mode applies to max_pool and avg_pool only");
    }
    if (m_layer.out_channels < 1 || m_layer.out_channels > k_max_dim) {
      fail(fmt::format("out_channels must be in 1..{}, got {}", k_max_dim, m_layer.out_channels));
    }
    if (m_layer.groups < 1 || x[0] % m_layer.groups != 0 ||
        m_layer.out_channels % m_layer.groups != 0) {
      fail(fmt::format("groups {} must divide the input channels {} and out_channels {}",
                       m_layer.groups, x[0], m_layer.out_channels));
    }
    std::vector<Index> out{m_layer.out_channels};
    for (std::size_t i = 0; i < dims; ++i) {
      const auto at = [&](const std::vector<Index>& v, Index fallback) {
        return v.empty() ? fallback : v[i];
      };
      const Index stride = at(m_layer.stride, 1);
      const Index dilation = at(m_layer.dilation, 1);
      const Index output_padding = at(m_layer.output_padding, 0);
      if (output_padding >= std::max(stride, dilation)) {
        fail(
            fmt::format("output_padding {} must be smaller than the stride {} or the dilation {} "
                        "in spatial dimension {}",
                        output_padding, stride, dilation, i));
      }
      // (in - 1) stride - 2 padding + dilation (kernel - 1) + output_padding + 1: every
      // factor is below 2^31, so each product is below 2^62 and no partial sum overflows.
      const Index size = (x[i + 1] - 1) * stride - 2 * at(m_layer.padding, 0) +
                         dilation * (m_layer.kernel[i] - 1) + output_padding + 1;
      if (size < 1 || size > k_max_dim) {
        fail(
            fmt::format("the output size {} of spatial dimension {} (input {}, kernel {}, stride "
                        "{}, padding {}, dilation {}, output_padding {}) is not in 1..{}",
                        size, i, x[i + 1], m_layer.kernel[i], stride, at(m_layer.padding, 0),
                        dilation, output_padding, k_max_dim));
      }
      out.push_back(static_cast<Index>(size));
    }
    const detail::Window win = detail::window_of(m_layer, x);
    // An output position no input reaches would be a constant (without a bias: zero).
    if (m_layer.bias_offset < 0) {
      for (const detail::Axis* a : {&win.h, &win.w}) {
        for (Index o = 0; o < a->in; ++o) {
          Index readers = 0;
          a->readers(o, [&](Index, Index) { ++readers; });
          if (readers == 0) {
            fail(fmt::format(
                "output position {} of a spatial dimension is reached by no input (kernel {}, "
                "stride {}, padding {}, dilation {}, input {}): its value would be the constant 0",
                o, a->kernel, a->stride, a->padding, a->dilation, a->out));
          }
        }
      }
    }
    const Index per_in = (m_layer.out_channels / m_layer.groups) * win.h.kernel * win.w.kernel;
    if (per_in > k_max_dim || x[0] > k_max_dim / per_in) {
      fail(fmt::format("{} weights per input channel is too many", per_in));
    }
    checked_entries(out, "the output of shape");
    return out;
  }

  std::vector<Index> gather() const {
    const std::vector<Index>& x = in(0);
    if (m_layer.axis < 0 || std::cmp_greater_equal(m_layer.axis, x.size())) {
      fail(fmt::format("axis {} is out of range for input shape {}", m_layer.axis, shape_text(x)));
    }
    const auto axis = static_cast<std::size_t>(m_layer.axis);
    if (m_layer.indices.empty()) {
      fail("has no indices");
    }
    for (std::size_t i = 0; i < m_layer.indices.size(); ++i) {
      const Index j = m_layer.indices[i];
      if (j < 0 || j >= x[axis]) {
        fail(
            fmt::format("index {} (entry {} of indices) is out of range 0..{} of dimension {} "
                        "of the input shape {}",
                        j, i, x[axis] - 1, axis, shape_text(x)));
      }
    }
    std::vector<Index> out = x;
    out[axis] = static_cast<Index>(m_layer.indices.size());
    checked_entries(out, "the output of shape");
    return out;
  }

  std::vector<Index> concat() const {
    const std::vector<Index>& first = in(0);
    if (m_layer.axis < 0 || std::cmp_greater_equal(m_layer.axis, first.size())) {
      fail(fmt::format("axis {} is out of range for input shape {}", m_layer.axis,
                       shape_text(first)));
    }
    std::vector<Index> out = first;
    const auto axis = static_cast<std::size_t>(m_layer.axis);
    for (std::size_t k = 1; k < m_layer.inputs.size(); ++k) {
      const std::vector<Index>& s = in(k);
      bool ok = s.size() == first.size();
      for (std::size_t i = 0; ok && i < s.size(); ++i) {
        ok = i == axis || s[i] == first[i];
      }
      if (!ok) {
        fail(fmt::format(
            "input {} has shape {} but input 0 has shape {}: only dimension {} may differ", k,
            shape_text(s), shape_text(first), axis));
      }
      if (__builtin_add_overflow(out[axis], s[axis], &out[axis]) || out[axis] > k_max_dim) {
        fail(fmt::format("the concatenated dimension {} exceeds {}", axis, k_max_dim));
      }
    }
    return out;
  }

  const Layer& m_layer;
  Index m_index;
  const std::vector<std::vector<Index>>& m_shapes;
};

bool has_parameters(LayerKind kind) {
  return kind == LayerKind::linear || kind == LayerKind::conv ||
         kind == LayerKind::conv_transpose || kind == LayerKind::batch_norm;
}

Index entries(const std::vector<Index>& shape) {
  Index n = 1;
  for (const Index x : shape) {
    if (x < 0 || (x > 0 && n > std::numeric_limits<Index>::max() / x)) {
      return -1;
    }
    n *= x;
  }
  return n;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The builder

LayerGraphBuilder::LayerGraphBuilder(std::vector<Index> input_shape, std::string input_name,
                                     LayerNames names)
    : m_name_rule(names) {
  if (input_shape.empty() || input_shape.size() > 3) {
    throw NetworkError(
        fmt::format("the input shape {} must have 1 to 3 dimensions", shape_text(input_shape)));
  }
  try {
    checked_entries(input_shape, "the input shape");
  } catch (const LayerProblem& p) {
    throw NetworkError(p.what);
  }
  if (input_name.empty()) {
    throw NetworkError("layer 0 (input) has an empty name");
  }
  m_graph.input_shape = input_shape;
  Layer layer;
  layer.kind = LayerKind::input;
  layer.name = std::move(input_name);
  m_names.emplace(layer.name, 0);
  m_graph.layers.push_back(std::move(layer));
  m_shapes.push_back(std::move(input_shape));
  m_failed.push_back(false);
}

LayerOutput LayerGraphBuilder::input() const {
  return {0, m_shapes[0], true};
}

const std::vector<Index>& LayerGraphBuilder::shape(Index layer) const {
  return m_shapes.at(static_cast<std::size_t>(layer));
}

Index LayerGraphBuilder::find(std::string_view name) const {
  const auto it = m_names.find(std::string(name));
  return it == m_names.end() ? -1 : it->second;
}

void LayerGraphBuilder::fail(Index index, std::string what) {
  const Layer& l = m_graph.layers[static_cast<std::size_t>(index)];
  m_problems.push_back(
      fmt::format("layer {} '{}' ({}): {}", index, printable(l.name), to_string(l.kind), what));
  m_failed[static_cast<std::size_t>(index)] = true;
  m_shapes[static_cast<std::size_t>(index)].clear();
}

void LayerGraphBuilder::problem(std::string what, Problem kind) {
  m_problems.push_back(std::move(what));
  m_unsupported = m_unsupported || kind == Problem::unsupported;
}

void LayerGraphBuilder::throw_problems() const {
  if (m_problems.empty()) {
    return;
  }
  std::string message = m_problems.front();
  if (m_problems.size() > 1) {
    message = fmt::format("{} problems:", m_problems.size());
    for (const std::string& p : m_problems) {
      message += "\n  - " + p;
    }
  }
  if (m_unsupported) {
    throw UnsupportedModel(message);
  }
  throw NetworkError(message);
}

LayerOutput LayerGraphBuilder::add(Layer layer, const LayerParameters& parameters) {
  const auto index = static_cast<Index>(m_graph.layers.size());
  // The name first: every message names the layer.
  std::string problem;
  const bool reserved = layer.name.empty() || layer.name == "x";
  const auto taken = m_names.find(layer.name);
  if ((reserved || taken != m_names.end()) && m_name_rule == LayerNames::unique) {
    const std::string base = layer.name.empty() ? to_string(layer.kind) : layer.name;
    for (Index k = 2;; ++k) {
      std::string candidate = fmt::format("{}_{}", base, k);
      if (!m_names.contains(candidate)) {
        layer.name = std::move(candidate);
        break;
      }
    }
  } else if (layer.name.empty()) {
    problem = fmt::format("layer {} ({}) has an empty name", index, to_string(layer.kind));
  } else if (layer.name == "x") {
    problem = fmt::format("layer {} is named 'x', the name of the input entries' nodes: rename it",
                          index);
  } else if (taken != m_names.end()) {
    problem = fmt::format("duplicate layer name '{}' (layers {} and {})", printable(layer.name),
                          taken->second, index);
  }
  if (problem.empty()) {
    m_names.emplace(layer.name, index);
  }
  m_graph.layers.push_back(std::move(layer));
  m_shapes.emplace_back();
  m_failed.push_back(false);
  const Layer& l = m_graph.layers.back();
  if (!problem.empty()) {
    m_problems.push_back(std::move(problem));
    m_failed.back() = true;
    return {index, {}, false};
  }
  for (const Index ref : l.inputs) {
    if (ref >= 0 && ref < index && m_failed[static_cast<std::size_t>(ref)]) {
      m_failed.back() = true;  // one cause, reported at the layer that broke a rule
      return {index, {}, false};
    }
  }
  try {
    const LayerChecker checker(l, index, m_shapes);
    std::vector<Index> out = checker.check();
    checked_entries(out, "its output of shape");
    m_shapes.back() = std::move(out);
    if (has_parameters(l.kind)) {
      check_blocks(index, &parameters);
    }
  } catch (const LayerProblem& p) {
    fail(index, p.what);
    return {index, {}, false};
  }
  return {index, m_shapes.back(), true};
}

void LayerGraphBuilder::check_blocks(Index index, const LayerParameters* parameters) {
  const Layer& l = m_graph.layers[static_cast<std::size_t>(index)];
  const LayerChecker checker(l, index, m_shapes);
  const Blocks b = checker.blocks();
  const bool bn = l.kind == LayerKind::batch_norm;
  if (parameters != nullptr) {
    const std::vector<Index>& x = m_shapes[static_cast<std::size_t>(l.inputs[0])];
    if (const auto& w = parameters->weight;
        w && (bn ? entries(w->shape) != b.weight : w->shape != b.weight_shape)) {
      checker.fail(
          bn ? fmt::format("scale '{}' of shape {} has {} entries, but the input of shape {} has "
                           "{} channels",
                           printable(w->name), shape_text(w->shape), entries(w->shape),
                           shape_text(x), b.weight)
             : fmt::format("weight '{}' of shape {} does not fit an input of shape {}: the layer "
                           "needs a weight of shape {}",
                           printable(w->name), shape_text(w->shape), shape_text(x),
                           shape_text(b.weight_shape)));
    }
    if (const auto& bias = parameters->bias; bias && entries(bias->shape) != b.bias) {
      checker.fail(fmt::format(
          "bias '{}' of shape {} has {} entries, but the layer has {} output "
          "channels",

          printable(bias->name), shape_text(bias->shape), entries(bias->shape), b.bias));
    }
  }
  if (!m_num_params_known) {
    return;
  }
  const auto block = [&](const char* what, Index offset, Index size, bool required) {
    if (offset == -1 && !required) {
      return;
    }
    if (offset < 0) {
      checker.fail(fmt::format("{} offset {} is negative{}", what, offset,
                               required ? "" : " (-1 means no bias)"));
    }
    if (offset > m_graph.num_params || size > m_graph.num_params - offset) {
      checker.fail(
          fmt::format("{} block [{}, {}) ({} parameters) is outside theta (num_params = "
                      "{})",
                      what, offset, offset + size, size, m_graph.num_params));
    }
  };
  block(bn ? "weight (a)" : "weight", l.weight_offset, b.weight, true);
  block(bn ? "bias (b)" : "bias", l.bias_offset, b.bias, false);
}

void LayerGraphBuilder::output(Index layer) {
  m_graph.outputs.push_back(layer);
}

void LayerGraphBuilder::set_num_params(Index num_params) {
  if (num_params < 0) {
    throw NetworkError(fmt::format("num_params is negative: {}", num_params));
  }
  m_graph.num_params = num_params;
  m_num_params_known = true;
}

void LayerGraphBuilder::set_offsets(Index layer, Index weight_offset, Index bias_offset) {
  Layer& l = m_graph.layers.at(static_cast<std::size_t>(layer));
  l.weight_offset = weight_offset;
  l.bias_offset = bias_offset;
}

std::string LayerGraphBuilder::block_of(Index k) const {
  for (std::size_t i = 1; i < m_graph.layers.size(); ++i) {
    const Layer& l = m_graph.layers[i];
    if (m_failed[i] || !has_parameters(l.kind)) {
      continue;
    }
    const Blocks b = LayerChecker(l, static_cast<Index>(i), m_shapes).blocks();
    const bool bn = l.kind == LayerKind::batch_norm;
    for (const auto& [offset, size, what] :
         {std::tuple{l.weight_offset, b.weight, bn ? "a" : "weight"},
          std::tuple{l.bias_offset, b.bias, bn ? "b" : "bias"}}) {
      if (offset >= 0 && k >= offset && k - offset < size) {
        return fmt::format(" (entry {} of the {} of layer {} '{}')", k - offset, what, i,
                           printable(l.name));
      }
    }
  }
  return {};
}

LayerGraph LayerGraphBuilder::finish(Index num_params, std::optional<std::vector<double>> weights) {
  if (num_params >= 0 || !m_num_params_known) {
    set_num_params(std::max<Index>(num_params, 0));
  }
  // The blocks of the layers added before d was known (and again after a set_offsets()).
  for (std::size_t i = 1; i < m_graph.layers.size(); ++i) {
    if (!m_failed[i] && has_parameters(m_graph.layers[i].kind)) {
      try {
        check_blocks(static_cast<Index>(i), nullptr);
      } catch (const LayerProblem& p) {
        fail(static_cast<Index>(i), p.what);
      }
    }
  }
  if (m_graph.outputs.empty()) {
    m_problems.emplace_back("the layer graph has no output layer");
  }
  for (std::size_t j = 0; j < m_graph.outputs.size(); ++j) {
    const Index o = m_graph.outputs[j];
    if (o < 0 || std::cmp_greater_equal(o, m_graph.layers.size())) {
      m_problems.push_back(fmt::format("outputs[{}] refers to layer {}, not a layer (0..{})", j, o,
                                       m_graph.layers.size() - 1));
    }
  }
  if (weights) {
    check_weights(*weights);
    m_graph.weights = std::move(weights);
  }
  throw_problems();
  return std::move(m_graph);
}

void LayerGraphBuilder::check_weights(std::span<const double> weights) {
  if (std::cmp_not_equal(weights.size(), m_graph.num_params)) {
    m_problems.push_back(fmt::format("the weights have {} entries but num_params is {}",
                                     weights.size(), m_graph.num_params));
    return;
  }
  for (std::size_t k = 0; k < weights.size(); ++k) {
    if (!std::isfinite(weights[k])) {
      m_problems.push_back(fmt::format("weight {} is not finite: {}{}", k, weights[k],
                                       block_of(static_cast<Index>(k))));
      return;
    }
  }
}

}  // namespace pathlift
