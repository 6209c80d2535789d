#include "pathlift/layers.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <mutex>
#include <unordered_map>

#include "pathlift/error.hpp"
#include "src/detail/enum_names.hpp"
#include "src/detail/layers_geometry.hpp"

namespace pathlift {

namespace {

constexpr std::array k_kind_names{
    detail::EnumName<LayerKind>{LayerKind::input, "input"},
    detail::EnumName<LayerKind>{LayerKind::linear, "linear"},
    detail::EnumName<LayerKind>{LayerKind::conv, "conv"},
    detail::EnumName<LayerKind>{LayerKind::max_pool, "max_pool"},
    detail::EnumName<LayerKind>{LayerKind::avg_pool, "avg_pool"},
    detail::EnumName<LayerKind>{LayerKind::adaptive_avg_pool, "adaptive_avg_pool"},
    detail::EnumName<LayerKind>{LayerKind::batch_norm, "batch_norm"},
    detail::EnumName<LayerKind>{LayerKind::activation, "activation"},
    detail::EnumName<LayerKind>{LayerKind::add, "add"},
    detail::EnumName<LayerKind>{LayerKind::sub, "sub"},
    detail::EnumName<LayerKind>{LayerKind::concat, "concat"},
    detail::EnumName<LayerKind>{LayerKind::flatten, "flatten"}};

// Every size, stride, padding and dilation is at most this, so that no window arithmetic
// (products of two of them) can overflow 64 bits.
constexpr Index k_max_dim = std::numeric_limits<std::int32_t>::max();

std::string shape_text(const std::vector<Index>& shape) {
  return fmt::format("{{{}}}", fmt::join(shape, ", "));
}

/// Validates one layer and returns its output shape. `shapes` holds the earlier layers'.
class LayerChecker {
 public:
  LayerChecker(const LayerGraph& graph, const std::vector<std::vector<Index>>& shapes,
               std::size_t index)
      : m_graph(graph), m_shapes(shapes), m_layer(graph.layers[index]), m_index(index) {}

  std::vector<Index> check() {
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
      case LayerKind::batch_norm: {
        const Index channels = in(0)[0];
        check_block("weight (a)", m_layer.weight_offset, channels, true);
        check_block("bias (b)", m_layer.bias_offset, channels, false);
        return in(0);
      }
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
      case LayerKind::flatten: {
        Index n = 1;
        for (const Index x : in(0)) {
          n *= x;
        }
        return {n};
      }
    }
    fail("unknown layer kind");
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw NetworkError(fmt::format("layer {} '{}' ({}): {}", m_index, m_layer.name,
                                   to_string(m_layer.kind), what));
  }

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
      if (ref < 0 || std::cmp_greater_equal(ref, m_index)) {
        fail(fmt::format("input {} refers to layer {}, not an earlier layer (0..{})", k, ref,
                         m_index - 1));
      }
    }
  }

  /// The parameter block [offset, offset + size) must lie in [0, num_params); offset -1 means
  /// "none", allowed only when the block is optional.
  void check_block(const char* what, Index offset, Index size, bool required) const {
    if (offset == -1 && !required) {
      return;
    }
    if (offset < 0) {
      fail(fmt::format("{} offset {} is negative{}", what, offset,
                       required ? "" : " (-1 means no bias)"));
    }
    if (offset > m_graph.num_params || size > m_graph.num_params - offset) {
      fail(fmt::format("{} block [{}, {}) ({} parameters) is outside theta (num_params = {})", what,
                       offset, offset + size, size, m_graph.num_params));
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
    check_block("weight", m_layer.weight_offset, m_layer.out_features * x[0], true);
    check_block("bias", m_layer.bias_offset, m_layer.out_features, false);
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
      if (per_out > k_max_dim) {
        fail(fmt::format("{} weights per output channel is too many", per_out));
      }
      check_block("weight", m_layer.weight_offset, m_layer.out_channels * per_out, true);
      check_block("bias", m_layer.bias_offset, m_layer.out_channels, false);
    }
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
      out[axis] += s[axis];
    }
    return out;
  }

  const LayerGraph& m_graph;
  const std::vector<std::vector<Index>>& m_shapes;
  const Layer& m_layer;
  std::size_t m_index;
};

/// The number of entries of `shape`, checked to fit a node index.
Index checked_entries(const std::vector<Index>& shape, const std::string& where) {
  Index n = 1;
  for (const Index x : shape) {
    if (x < 1 || x > k_max_dim || __builtin_mul_overflow(n, x, &n) ||
        n > std::numeric_limits<NodeId>::max()) {
      throw NetworkError(fmt::format("{}: shape {} is empty or has more than {} entries", where,
                                     shape_text(shape), std::numeric_limits<NodeId>::max()));
    }
  }
  return n;
}

}  // namespace

std::string to_string(LayerKind kind) {
  return std::string(detail::enum_name(k_kind_names, kind));
}

LayerKind parse_layer_kind(std::string_view name) {
  try {
    return detail::parse_enum(k_kind_names, name, "layer kind");
  } catch (const std::invalid_argument& e) {
    throw FormatError(e.what());
  }
}

std::vector<std::vector<Index>> layer_shapes(const LayerGraph& graph) {
  if (graph.num_params < 0) {
    throw NetworkError(fmt::format("num_params is negative: {}", graph.num_params));
  }
  if (graph.input_shape.empty() || graph.input_shape.size() > 3) {
    throw NetworkError(fmt::format("the input shape {} must have 1 to 3 dimensions",
                                   shape_text(graph.input_shape)));
  }
  checked_entries(graph.input_shape, "the input");
  if (graph.layers.empty() || graph.layers[0].kind != LayerKind::input) {
    throw NetworkError("layer 0 must be the input layer (kind input)");
  }
  if (!graph.layers[0].inputs.empty()) {
    throw NetworkError(fmt::format("layer 0 '{}' (input) has inputs", graph.layers[0].name));
  }
  std::unordered_map<std::string_view, std::size_t> names;
  std::vector<std::vector<Index>> shapes;
  shapes.reserve(graph.layers.size());
  for (std::size_t i = 0; i < graph.layers.size(); ++i) {
    const Layer& layer = graph.layers[i];
    if (layer.name.empty()) {
      throw NetworkError(fmt::format("layer {} ({}) has an empty name", i, to_string(layer.kind)));
    }
    if (i > 0 && layer.name == "x") {
      throw NetworkError(
          fmt::format("layer {} is named 'x', the name of the input entries' nodes: rename it", i));
    }
    if (const auto [it, fresh] = names.emplace(layer.name, i); !fresh) {
      throw NetworkError(
          fmt::format("duplicate layer name '{}' (layers {} and {})", layer.name, it->second, i));
    }
    shapes.push_back(i == 0 ? graph.input_shape : LayerChecker(graph, shapes, i).check());
    checked_entries(shapes.back(),
                    fmt::format("layer {} '{}' ({}) output", i, layer.name, to_string(layer.kind)));
  }
  if (graph.outputs.empty()) {
    throw NetworkError("the layer graph has no output layer");
  }
  for (std::size_t j = 0; j < graph.outputs.size(); ++j) {
    const Index o = graph.outputs[j];
    if (o < 0 || std::cmp_greater_equal(o, graph.layers.size())) {
      throw NetworkError(fmt::format("outputs[{}] refers to layer {}, not a layer (0..{})", j, o,
                                     graph.layers.size() - 1));
    }
  }
  if (graph.weights) {
    if (std::cmp_not_equal(graph.weights->size(), graph.num_params)) {
      throw NetworkError(fmt::format("the weights have {} entries but num_params is {}",
                                     graph.weights->size(), graph.num_params));
    }
    for (std::size_t k = 0; k < graph.weights->size(); ++k) {
      if (!std::isfinite((*graph.weights)[k])) {
        throw NetworkError(fmt::format("weight {} is not finite: {}", k, (*graph.weights)[k]));
      }
    }
  }
  return shapes;
}

}  // namespace pathlift

namespace pathlift {

struct LayerNetwork::Cache {
  std::mutex mutex;
  std::optional<UnrolledSize> size;
  std::shared_ptr<const Network> network;
};

LayerNetwork::LayerNetwork(LayerGraph graph)
    : m_graph(std::make_shared<const LayerGraph>(std::move(graph))),
      m_cache(std::make_shared<Cache>()) {
  (void)layer_shapes(*m_graph);
}

std::span<const double> LayerNetwork::weights() const {
  if (!m_graph->weights) {
    throw std::logic_error("LayerNetwork::weights: the layer graph holds no weights");
  }
  return *m_graph->weights;
}

UnrolledSize LayerNetwork::unrolled_size() const {
  const std::lock_guard lock(m_cache->mutex);
  if (!m_cache->size) {
    m_cache->size = m_cache->network
                        ? UnrolledSize{m_cache->network->num_nodes(), m_cache->network->num_edges()}
                        : pathlift::unrolled_size(*m_graph);
  }
  return *m_cache->size;
}

bool LayerNetwork::is_unrolled() const {
  const std::lock_guard lock(m_cache->mutex);
  return m_cache->network != nullptr;
}

std::shared_ptr<const Network> LayerNetwork::network(std::size_t max_memory) const {
  const std::lock_guard lock(m_cache->mutex);
  if (!m_cache->network) {
    m_cache->network = std::make_shared<const Network>(unroll(*m_graph, max_memory));
  }
  return m_cache->network;
}

}  // namespace pathlift
