#pragma once
// Deterministic random layer graphs for the differential tests (layer graph against its unrolled
// DAG): random_layer_graph(seed) builds, with GraphBuilder, a small graph (the unrolled DAG has
// at most a few thousand edges) from every layer kind and option chosen at random: Conv1d and
// Conv2d (kernel, stride, padding up to windows that read only padding when there is a bias,
// dilation, groups, bias on or off), ConvTranspose (stride, padding, output_padding, dilation,
// groups, bias), max and average pools (padding, ceil_mode, count_include_pad), adaptive average
// pools, batch norms with and without bias, ReLU / leaky ReLU / identity (ReLU after ReLU, ReLU
// after a concat of ReLU outputs), add and sub (residual branches, skips to older tensors),
// concat, gathers (channel subsets with repeats, reflect / replicate / nearest / crop index
// lists), k-max pools, GroupSort (MaxMin and its maxima), linear / bilinear interpolation,
// scale (0 too, rarely), flatten then linear (bias on or off), several outputs; MLPs on
// {F} inputs; and, in some graphs, a layer applied a second time (weights shared between two
// layers, on parallel branches or in sequence). Every choice that layer_shapes refuses is
// resampled, and so is a graph whose unrolled DAG would be too large.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pathlift/error.hpp"
#include "pathlift/layers.hpp"
#include "src/core/random.hpp"
#include "tests/layers_builder.hpp"

namespace pathlift::testing {

namespace random_graph_detail {

/// Limits of the generated graphs: per tensor, and of the unrolled DAG.
constexpr Index k_max_channels = 6;
constexpr Index k_max_spatial = 9;
constexpr Index k_max_features = 48;
constexpr Index k_max_edges = 5000;
constexpr Index k_max_nodes = 1500;

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : m_rng(seed) {}
  /// Uniform in lo..hi (both included).
  Index in(Index lo, Index hi) {
    return lo + static_cast<Index>(m_rng.below(static_cast<std::uint64_t>(hi - lo + 1)));
  }
  /// True with probability p.
  bool chance(double p) { return m_rng.uniform() < p; }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[static_cast<std::size_t>(in(0, static_cast<Index>(v.size()) - 1))];
  }

 private:
  detail::SplitMix64 m_rng;
};

/// The parameter blocks (offset, size) of layer l of g: weight first, then bias (size 0 when
/// absent), from the shapes of g.
inline std::pair<Index, Index> block_sizes(const LayerGraph& g,
                                           const std::vector<std::vector<Index>>& shapes,
                                           std::size_t l) {
  const Layer& ly = g.layers[l];
  const auto in = [&]() -> const std::vector<Index>& {
    return shapes[static_cast<std::size_t>(ly.inputs[0])];
  };
  Index taps = 1;
  for (const Index k : ly.kernel) {
    taps *= k;
  }
  const bool bias = ly.bias_offset >= 0;
  switch (ly.kind) {
    case LayerKind::linear:
      return {ly.out_features * in()[0], bias ? ly.out_features : 0};
    case LayerKind::conv:
      return {ly.out_channels * (in()[0] / ly.groups) * taps, bias ? ly.out_channels : 0};
    case LayerKind::conv_transpose:
      return {in()[0] * (ly.out_channels / ly.groups) * taps, bias ? ly.out_channels : 0};
    case LayerKind::batch_norm:
      return {in()[0], bias ? in()[0] : 0};
    default:
      return {0, 0};
  }
}

/// g without the parameters no layer's block holds (offsets renumbered, num_params reduced).
inline void compact_parameters(LayerGraph& g) {
  const auto shapes = layer_shapes(g);
  std::vector<std::uint8_t> used(static_cast<std::size_t>(g.num_params), 0);
  for (std::size_t l = 1; l < g.layers.size(); ++l) {
    const auto [w, b] = block_sizes(g, shapes, l);
    std::fill_n(used.begin() + (w > 0 ? g.layers[l].weight_offset : 0), w, 1);
    std::fill_n(used.begin() + (b > 0 ? g.layers[l].bias_offset : 0), b, 1);
  }
  std::vector<Index> index(used.size() + 1, 0);  // new index of each old one
  for (std::size_t k = 0; k < used.size(); ++k) {
    index[k + 1] = index[k] + used[k];
  }
  for (Layer& ly : g.layers) {
    if (ly.weight_offset >= 0) {
      ly.weight_offset = index[static_cast<std::size_t>(ly.weight_offset)];
    }
    if (ly.bias_offset >= 0) {
      ly.bias_offset = index[static_cast<std::size_t>(ly.bias_offset)];
    }
  }
  g.num_params = index.back();
}

/// One attempt at a random graph; build() is nullopt when the attempt came out too large.
class Generator {
 public:
  explicit Generator(std::uint64_t seed) : m_rng(seed), m_b(input_shape()) {}

  std::optional<LayerGraph> build() {
    std::vector<Index> outputs;
    Index x = 0;
    if (m_vector) {
      x = vector_body(x, m_rng.in(2, 4), outputs);
    } else {
      const Index steps = m_rng.in(2, 5);
      for (Index s = 0; s < steps; ++s) {
        x = spatial_step(x);
      }
      if (m_rng.chance(0.15)) {
        outputs.push_back(x);  // a feature map as an output
      }
      if (m_rng.chance(0.9)) {  // else the feature map is the only output
        x = m_b.op(LayerKind::flatten, name("flat"), {x});
        x = vector_body(x, m_rng.in(1, 2), outputs);
      }
    }
    if (outputs.empty() || outputs.back() != x) {
      outputs.push_back(x);
    }
    if (m_rng.chance(0.15) && m_tensors.size() > 2) {
      outputs.insert(outputs.begin(), m_rng.pick(m_tensors));  // an earlier tensor as well
    }
    std::sort(outputs.begin(), outputs.end());
    outputs.erase(std::unique(outputs.begin(), outputs.end()), outputs.end());
    if (m_rng.chance(0.5)) {
      std::reverse(outputs.begin(), outputs.end());
    }
    LayerGraph g = m_b.graph(outputs);
    for (const Index l : m_no_bias) {
      g.layers[static_cast<std::size_t>(l)].bias_offset = -1;  // a batch norm without bias
    }
    if (m_rng.chance(0.15)) {
      share(g);
    }
    if (!m_no_bias.empty() && m_rng.chance(0.8)) {
      compact_parameters(g);  // else: parameters no edge carries (free directions)
    }
    try {
      const UnrolledSize size = unrolled_size(g);
      if (size.edges > k_max_edges || size.nodes > k_max_nodes) {
        return std::nullopt;
      }
    } catch (const NetworkError&) {
      return std::nullopt;
    }
    return g;
  }

 private:
  std::vector<Index> input_shape() {
    const Index mode = m_rng.in(0, 9);
    if (mode < 2) {
      m_vector = true;
      return {m_rng.in(3, 6)};
    }
    if (mode < 4) {
      return m_rng.chance(0.5) ? std::vector<Index>{2, 9}
                               : std::vector<Index>{m_rng.in(1, 3), m_rng.in(4, 9)};
    }
    return {m_rng.in(2, 3), m_rng.in(4, 7), m_rng.in(4, 7)};
  }

  std::string name(const char* what) { return fmt_name(what, m_names++); }
  static std::string fmt_name(const char* what, int n) {
    return std::string(what) + "_" + std::to_string(n);
  }

  /// Applies `make` to a copy of the builder and keeps the result when layer_shapes accepts it
  /// and its shape is within the limits; nullopt (the builder unchanged) otherwise.
  template <class F>
  std::optional<Index> attempt(F&& make) {
    GraphBuilder trial = m_b;
    try {
      const Index l = make(trial);
      const std::vector<Index> s = trial.shape(l);
      if (s[0] > (s.size() == 1 ? k_max_features : k_max_channels)) {
        return std::nullopt;
      }
      for (std::size_t i = 1; i < s.size(); ++i) {
        if (s[i] > k_max_spatial) {
          return std::nullopt;
        }
      }
    } catch (const NetworkError&) {
      return std::nullopt;
    }
    m_b = std::move(trial);
    const auto l = static_cast<Index>(m_b.graph({}).layers.size()) - 1;
    m_tensors.push_back(l);
    return l;
  }

  /// Tries `make` up to 20 times (each try draws afresh); x when none is accepted.
  template <class F>
  Index retry(Index x, F&& make) {
    for (int i = 0; i < 20; ++i) {
      if (const auto l = attempt(make)) {
        return *l;
      }
    }
    return x;
  }

  std::vector<Index> per_dim(std::size_t dims, Index lo, Index hi) {
    std::vector<Index> v;
    for (std::size_t i = 0; i < dims; ++i) {
      v.push_back(m_rng.in(lo, hi));
    }
    return v;
  }

  /// A divisor of both a and b (1 most often).
  Index groups(Index a, Index b) {
    std::vector<Index> div;
    for (Index g = 1; g <= std::min(a, b); ++g) {
      if (a % g == 0 && b % g == 0) {
        div.push_back(g);
      }
    }
    return m_rng.chance(0.6) ? 1 : m_rng.pick(div);
  }

  Activation activation() {
    const Index k = m_rng.in(0, 5);
    if (k == 0) {
      return Activation::identity();
    }
    if (k == 1) {
      return Activation::leaky_relu(m_rng.pick(std::vector<double>{0.1, 0.25, -0.5}));
    }
    return Activation::relu();
  }

  Index conv(Index x, std::optional<Index> out = std::nullopt, bool same = false) {
    return retry(x, [&](GraphBuilder& b) {
      const std::vector<Index> s = b.shape(x);
      const std::size_t dims = s.size() - 1;
      const Index c = out.value_or(m_rng.in(1, 4));
      std::vector<Index> kernel = per_dim(dims, 1, 3);
      std::vector<Index> stride;
      std::vector<Index> padding;
      std::vector<Index> dilation;
      if (same) {  // odd kernel, stride 1, padding keeping the size
        for (Index& k : kernel) {
          k = m_rng.chance(0.5) ? 1 : 3;
        }
        dilation = m_rng.chance(0.7) ? std::vector<Index>{} : per_dim(dims, 1, 2);
        for (std::size_t i = 0; i < dims; ++i) {
          padding.push_back((dilation.empty() ? 1 : dilation[i]) * (kernel[i] - 1) / 2);
        }
      } else {
        if (m_rng.chance(0.6)) {
          stride = per_dim(dims, 1, 2);
        }
        if (m_rng.chance(0.6)) {
          padding = per_dim(dims, 0, 3);  // 2, 3: border windows read few taps, or none
        }
        if (m_rng.chance(0.3)) {
          dilation = per_dim(dims, 1, 2);
        }
      }
      const bool bias = m_rng.chance(0.6);
      return b.conv(name("conv"), x, c, kernel, stride, padding, dilation, groups(s[0], c), bias);
    });
  }

  Index conv_transpose(Index x) {
    return retry(x, [&](GraphBuilder& b) {
      const std::vector<Index> s = b.shape(x);
      const std::size_t dims = s.size() - 1;
      const Index c = m_rng.in(1, 4);
      const std::vector<Index> kernel = per_dim(dims, 1, 3);
      const std::vector<Index> stride =
          m_rng.chance(0.7) ? per_dim(dims, 1, 2) : std::vector<Index>{};
      const std::vector<Index> padding =
          m_rng.chance(0.6) ? per_dim(dims, 0, 2) : std::vector<Index>{};
      const std::vector<Index> dilation =
          m_rng.chance(0.3) ? per_dim(dims, 1, 2) : std::vector<Index>{};
      const std::vector<Index> output_padding =
          m_rng.chance(0.4) ? per_dim(dims, 0, 1) : std::vector<Index>{};
      return b.conv_transpose(name("convT"), x, c, kernel, stride, padding, output_padding,
                              dilation, groups(s[0], c), m_rng.chance(0.5));
    });
  }

  Index pool(Index x) {
    return retry(x, [&](GraphBuilder& b) {
      const std::size_t dims = b.shape(x).size() - 1;
      const bool max = m_rng.chance(0.5);
      const std::vector<Index> kernel = per_dim(dims, 1, 3);
      std::vector<Index> stride;
      if (m_rng.chance(0.6)) {
        stride = per_dim(dims, 1, 3);
      }
      std::vector<Index> padding;
      if (m_rng.chance(0.5)) {
        for (const Index k : kernel) {
          padding.push_back(m_rng.in(0, k / 2));  // PyTorch: at most half the kernel
        }
      }
      if (max && m_rng.chance(0.3)) {  // k-max pooling: k up to the window
        return b.k_max_pool(name("kmaxpool"), x, m_rng.in(1, 3), kernel, stride, padding,
                            m_rng.chance(0.4));
      }
      const std::vector<Index> dilation =
          max && m_rng.chance(0.3) ? per_dim(dims, 1, 2) : std::vector<Index>{};
      return b.pool(max ? LayerKind::max_pool : LayerKind::avg_pool,
                    name(max ? "maxpool" : "avgpool"), x, kernel, stride, padding, dilation,
                    m_rng.chance(0.6), m_rng.chance(0.4));
    });
  }

  /// GroupSort along axis 0 (g = 2: MaxMin), ascending or descending; sometimes followed by a
  /// gather of the maxima (MaxMin's usual layout, the other entries dead).
  Index group_sort(Index x) {
    Index y = retry(x, [&](GraphBuilder& b) {
      const Index c = b.shape(x)[0];
      std::vector<Index> sizes;
      for (Index g = 1; g <= std::min<Index>(c, 4); ++g) {
        if (c % g == 0) {
          sizes.push_back(g);
        }
      }
      return b.group_sort(name("groupsort"), x, m_rng.pick(sizes), m_rng.chance(0.5));
    });
    if (y != x && m_rng.chance(0.3)) {
      y = retry(y, [&](GraphBuilder& b) {
        const Index c = b.shape(y)[0];
        const Index g = b.graph({}).layers[static_cast<std::size_t>(y)].group_size;
        std::vector<Index> first;
        for (Index i = 0; i < c; i += g) {
          first.push_back(i);
        }
        return b.gather(name("gather"), y, 0, first);
      });
    }
    return y;
  }

  /// Linear / bilinear interpolation to random sizes, align_corners either way, sometimes with
  /// the scale factor that makes the size.
  Index interpolate(Index x) {
    return retry(x, [&](GraphBuilder& b) {
      const std::vector<Index> s = b.shape(x);
      std::vector<Index> size;
      std::vector<double> scales;
      const bool by_scale = m_rng.chance(0.4);
      const Index factor = m_rng.in(2, 3);
      for (std::size_t i = 1; i < s.size(); ++i) {
        size.push_back(by_scale ? s[i] * factor : m_rng.in(1, std::min<Index>(2 * s[i] + 1, 9)));
        if (by_scale) {
          scales.push_back(static_cast<double>(factor));
        }
      }
      return b.interpolate(name("interp"), x, size, m_rng.chance(0.5), scales);
    });
  }

  Index adaptive(Index x) {
    return retry(x, [&](GraphBuilder& b) {
      const std::vector<Index> s = b.shape(x);
      std::vector<Index> size;
      for (std::size_t i = 1; i < s.size(); ++i) {
        size.push_back(m_rng.in(1, s[i] + 1));
      }
      return b.adaptive(name("adaptive"), x, size);
    });
  }

  Index batch_norm(Index x) {
    const auto l = attempt([&](GraphBuilder& b) { return b.batch_norm(name("bn"), x); });
    if (l && m_rng.chance(0.35)) {
      m_no_bias.push_back(*l);
    }
    return l.value_or(x);
  }

  Index act(Index x) {
    Index y = retry(x, [&](GraphBuilder& b) { return b.act(name("act"), x, activation()); });
    if (m_rng.chance(0.2)) {  // ReLU after ReLU (or after another activation)
      y = retry(y, [&](GraphBuilder& b) { return b.act(name("act"), y); });
    }
    return y;
  }

  Index scale(Index x) {
    const double factor =
        m_rng.chance(0.05) ? 0.0 : m_rng.pick(std::vector<double>{2.5, -1.0, 0.5, 3.0});
    return retry(x, [&](GraphBuilder& b) { return b.scale(name("scale"), x, factor); });
  }

  /// Channel subsets with repeats, or reflect / replicate / nearest / crop along a spatial axis.
  Index gather(Index x) {
    return retry(x, [&](GraphBuilder& b) {
      const std::vector<Index> s = b.shape(x);
      const Index axis = s.size() == 1 || m_rng.chance(0.4) ? 0 : m_rng.in(1, Index(s.size()) - 1);
      const Index n = s[static_cast<std::size_t>(axis)];
      std::vector<Index> idx;
      const Index kind = axis == 0 ? m_rng.in(0, 1) : m_rng.in(0, 3);
      if (kind == 0) {  // a random subset with repeats, or a shuffle
        const Index count = m_rng.in(1, std::min<Index>(n + 2, axis == 0 ? 6 : 9));
        for (Index i = 0; i < count; ++i) {
          idx.push_back(m_rng.in(0, n - 1));
        }
      } else if (kind == 1) {  // crop, or a permutation for channels
        for (Index i = 0; i < n; ++i) {
          idx.push_back(axis == 0 ? n - 1 - i : i);
        }
        if (axis != 0 && n > 2) {
          idx.erase(idx.begin() + (m_rng.chance(0.5) ? 0 : n - 1));
        }
      } else if (kind == 2) {  // reflect 1 or replicate 1 on both sides
        const bool reflect = m_rng.chance(0.5) && n > 1;
        idx.push_back(reflect ? 1 : 0);
        for (Index i = 0; i < n; ++i) {
          idx.push_back(i);
        }
        idx.push_back(reflect ? n - 2 : n - 1);
      } else {  // nearest upsampling x2
        for (Index i = 0; i < n; ++i) {
          idx.push_back(i);
          idx.push_back(i);
        }
      }
      return b.gather(name("gather"), x, axis, idx);
    });
  }

  /// A shape-preserving op (for residual branches).
  Index same_shape(Index x) {
    switch (m_rng.in(0, 4)) {
      case 0:
        return batch_norm(x);
      case 1:
        return act(x);
      case 2:
        return scale(x);
      default:
        return m_b.shape(x).size() == 1 ? linear(x, m_b.shape(x)[0])
                                        : conv(x, m_b.shape(x)[0], true);
    }
  }

  /// x + f(x), f(x) - x, or x - f(x).
  Index residual(Index x) {
    Index y = same_shape(x);
    if (m_rng.chance(0.5)) {
      y = same_shape(y);
    }
    if (y == x) {
      return x;
    }
    const Index kind = m_rng.in(0, 2);
    const std::vector<Index> in = kind == 2 ? std::vector<Index>{x, y} : std::vector<Index>{y, x};
    return retry(x, [&](GraphBuilder& b) {
      return b.op(kind == 0 ? LayerKind::add : LayerKind::sub, name(kind == 0 ? "add" : "sub"), in);
    });
  }

  /// A skip: x plus (or minus) an older tensor of the same shape.
  Index skip(Index x) {
    std::vector<Index> same;
    for (const Index t : m_tensors) {
      if (t != x && m_b.shape(t) == m_b.shape(x)) {
        same.push_back(t);
      }
    }
    if (same.empty()) {
      return residual(x);
    }
    const Index t = m_rng.pick(same);
    const bool add = m_rng.chance(0.6);
    return retry(x, [&](GraphBuilder& b) {
      return b.op(add ? LayerKind::add : LayerKind::sub, name(add ? "skip_add" : "skip_sub"),
                  {x, t});
    });
  }

  /// concat of two branches along the channels (spatial: a 'same' conv or a stride-1 pool
  /// beside x or another conv; vectors: linear layers), ReLU outputs and a ReLU after the concat
  /// sometimes.
  Index concat(Index x) {
    const bool vec = m_b.shape(x).size() == 1;
    if (!vec && m_rng.chance(0.5)) {
      return spatial_concat(x);
    }
    const auto branch = [&](Index from) {
      if (vec) {
        return linear(from, m_rng.in(1, 5));
      }
      if (m_rng.chance(0.7)) {
        return conv(from, m_rng.in(1, 3), true);
      }
      return retry(from, [&](GraphBuilder& b) {
        return b.pool(LayerKind::max_pool, name("maxpool"), from,
                      std::vector<Index>(b.shape(from).size() - 1, 3),
                      std::vector<Index>(b.shape(from).size() - 1, 1),
                      std::vector<Index>(b.shape(from).size() - 1, 1));
      });
    };
    const bool relu = m_rng.chance(0.6);
    Index y1 = branch(x);
    Index y2 = m_rng.chance(0.3) ? x : branch(x);
    if (relu) {
      y1 = retry(y1, [&](GraphBuilder& b) { return b.act(name("relu"), y1); });
      y2 = retry(y2, [&](GraphBuilder& b) { return b.act(name("relu"), y2); });
    }
    std::vector<Index> in{y1, y2};
    if (m_rng.chance(0.3)) {
      in.push_back(y1);  // an operand twice
    }
    Index cat = retry(x, [&](GraphBuilder& b) { return b.op(LayerKind::concat, name("cat"), in); });
    if (cat != x && m_rng.chance(0.6)) {
      cat = retry(cat, [&](GraphBuilder& b) { return b.act(name("relu"), cat); });
    }
    return cat;
  }

  /// x and a few rows (or columns) of a branch beside it concatenated along a spatial axis: the
  /// channels then hold entries of two layers.
  Index spatial_concat(Index x) {
    const std::vector<Index> s = m_b.shape(x);
    const Index axis = m_rng.in(1, static_cast<Index>(s.size()) - 1);
    Index y = x;
    switch (m_rng.in(0, 2)) {
      case 0:
        y = conv(x, s[0], true);
        break;
      case 1:
        y = retry(x, [&](GraphBuilder& b) { return b.act(name("relu"), x); });
        break;
      default:
        y = batch_norm(x);
    }
    if (y == x || m_b.shape(y) != s) {
      return x;
    }
    std::vector<Index> idx;
    for (Index i = m_rng.in(1, 3); i > 0; --i) {
      idx.push_back(m_rng.in(0, s[static_cast<std::size_t>(axis)] - 1));
    }
    const Index piece =
        retry(y, [&](GraphBuilder& b) { return b.gather(name("gather"), y, axis, idx); });
    if (piece == y) {
      return x;
    }
    const std::vector<Index> in =
        m_rng.chance(0.5) ? std::vector<Index>{x, piece} : std::vector<Index>{piece, x};
    const Index cat =
        retry(x, [&](GraphBuilder& b) { return b.op(LayerKind::concat, name("cat"), in, axis); });
    switch (cat == x ? 4 : m_rng.in(0, 4)) {  // a window over the mixed channels
      case 0:
        return pool(cat);
      case 1:
        return conv(cat);
      case 2:
        return conv_transpose(cat);
      case 3:
        return adaptive(cat);
      default:
        return cat;
    }
  }

  Index linear(Index x, Index out) {
    return retry(
        x, [&](GraphBuilder& b) { return b.linear(name("linear"), x, out, m_rng.chance(0.6)); });
  }

  Index spatial_step(Index x) {
    switch (m_rng.in(0, 15)) {
      case 13:
        return group_sort(x);
      case 14:
        return interpolate(x);
      case 0:
      case 1:
        return act(conv(x));
      case 2:
        return conv(x);
      case 3:
        return conv_transpose(x);
      case 4:
        return pool(x);
      case 5:
        return adaptive(x);
      case 6:
        return act(batch_norm(x));
      case 7:
        return act(x);
      case 8:
        return gather(x);
      case 9:
      case 10:
        return residual(x);
      case 11:
        return skip(x);
      case 12:
        return concat(x);
      default:
        return scale(x);
    }
  }

  /// Linear layers and the rest on a vector x; the last one an output (and the intermediate
  /// linear layers outputs sometimes).
  Index vector_body(Index x, Index steps, std::vector<Index>& outputs) {
    for (Index s = 0; s < steps; ++s) {
      switch (m_rng.in(0, 10)) {
        case 0:
          x = batch_norm(x);
          break;
        case 9:
          x = group_sort(x);
          break;
        case 1:
          x = gather(x);
          break;
        case 2:
          x = residual(x);
          break;
        case 3:
          x = concat(x);
          break;
        case 4:
          x = scale(x);
          break;
        case 5:
          x = skip(x);
          break;
        default:
          x = act(linear(x, m_rng.in(1, 6)));
      }
      if (m_rng.chance(0.1)) {
        outputs.push_back(x);
      }
    }
    return linear(x, m_rng.in(1, 3));
  }

  /// A parameter layer applied again (its parameters shared with the first): on a tensor of the
  /// shape it reads, beside it (added to it, or an output of its own), or after it.
  void share(LayerGraph& g) {
    const auto shapes = layer_shapes(g);
    std::vector<std::size_t> candidates;
    for (std::size_t l = 1; l < g.layers.size(); ++l) {
      if (g.layers[l].weight_offset >= 0) {
        candidates.push_back(l);
      }
    }
    if (candidates.empty()) {
      return;
    }
    const std::size_t l = candidates[static_cast<std::size_t>(
        m_rng.in(0, static_cast<Index>(candidates.size()) - 1))];
    std::vector<Index> readers;  // tensors of the shape l reads
    for (std::size_t t = 0; t < g.layers.size(); ++t) {
      if (shapes[t] == shapes[static_cast<std::size_t>(g.layers[l].inputs[0])]) {
        readers.push_back(static_cast<Index>(t));
      }
    }
    Layer twin = g.layers[l];
    twin.name += "_again";
    twin.inputs = {m_rng.pick(readers)};
    const auto at = static_cast<Index>(g.layers.size());
    g.layers.push_back(twin);
    if (m_rng.chance(0.5)) {
      Layer add;
      add.kind = LayerKind::add;
      add.name = "shared_add";
      add.inputs = {static_cast<Index>(l), at};
      g.layers.push_back(add);
    }
    g.outputs.push_back(static_cast<Index>(g.layers.size()) - 1);
    if (m_rng.chance(0.4) && shapes[l] == shapes[static_cast<std::size_t>(g.layers[l].inputs[0])]) {
      twin.name += "_after";  // in sequence: the parameters twice on a path
      twin.inputs = {static_cast<Index>(g.layers.size()) - 1};
      g.layers.push_back(twin);
      g.outputs.back() = static_cast<Index>(g.layers.size()) - 1;
    }
  }

  Rng m_rng;
  bool m_vector = false;
  GraphBuilder m_b;
  std::vector<Index> m_tensors;  // the layers made so far
  std::vector<Index> m_no_bias;  // batch norms to be left without bias
  int m_names = 0;
};

}  // namespace random_graph_detail

/// The random layer graph number `seed` (deterministic: the same graph on every platform).
inline LayerGraph random_layer_graph(std::uint64_t seed) {
  for (std::uint64_t attempt = 0;; ++attempt) {
    random_graph_detail::Generator gen(seed * 7919 + attempt * 0x9E3779B97F4A7C15ULL + 1);
    if (auto g = gen.build()) {
      return std::move(*g);
    }
  }
}

}  // namespace pathlift::testing
