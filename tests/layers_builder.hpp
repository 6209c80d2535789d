#pragma once
// A small builder of layer graphs for the tests: each call appends a layer, allocates its
// parameter blocks at the end of theta (PyTorch's order: weight, then bias) and returns the
// layer's index.

#include <string>
#include <vector>

#include "pathlift/layers.hpp"

namespace pathlift::testing {

class GraphBuilder {
 public:
  explicit GraphBuilder(std::vector<Index> input_shape) {
    m_graph.input_shape = std::move(input_shape);
    Layer in;
    in.name = "input";
    m_graph.layers.push_back(in);
  }

  /// The output shape of layer l.
  [[nodiscard]] std::vector<Index> shape(Index l) const {
    LayerGraph g = m_graph;
    g.outputs = {l};
    return layer_shapes(g)[static_cast<std::size_t>(l)];
  }

  Index linear(const std::string& name, Index in, Index out, bool bias = true) {
    Layer l = base(LayerKind::linear, name, {in});
    l.out_features = out;
    params(l, out * shape(in)[0], bias ? out : 0);
    return push(std::move(l));
  }

  /// A convolution's fields (its parameters are the caller's).
  static Layer convolution(LayerKind kind, const std::string& name, Index in, Index out,
                           std::vector<Index> kernel, std::vector<Index> stride,
                           std::vector<Index> padding, std::vector<Index> dilation, Index groups) {
    Layer l = window(kind, name, in, std::move(kernel), std::move(stride), std::move(padding),
                     std::move(dilation));
    l.out_channels = out;
    l.groups = groups;
    return l;
  }

  /// The taps of a layer's kernel.
  static Index taps(const Layer& l) {
    Index k = 1;
    for (const Index x : l.kernel) {
      k *= x;
    }
    return k;
  }

  Index conv(const std::string& name, Index in, Index out, std::vector<Index> kernel,
             std::vector<Index> stride = {}, std::vector<Index> padding = {},
             std::vector<Index> dilation = {}, Index groups = 1, bool bias = true) {
    Layer l = convolution(LayerKind::conv, name, in, out, std::move(kernel), std::move(stride),
                          std::move(padding), std::move(dilation), groups);
    params(l, out * (shape(in)[0] / groups) * taps(l), bias ? out : 0);
    return push(std::move(l));
  }

  Index conv_transpose(const std::string& name, Index in, Index out, std::vector<Index> kernel,
                       std::vector<Index> stride = {}, std::vector<Index> padding = {},
                       std::vector<Index> output_padding = {}, std::vector<Index> dilation = {},
                       Index groups = 1, bool bias = true) {
    Layer l = convolution(LayerKind::conv_transpose, name, in, out, std::move(kernel),
                          std::move(stride), std::move(padding), std::move(dilation), groups);
    l.output_padding = std::move(output_padding);
    params(l, shape(in)[0] * (out / groups) * taps(l), bias ? out : 0);
    return push(std::move(l));
  }

  Index gather(const std::string& name, Index in, Index axis, std::vector<Index> indices) {
    Layer l = base(LayerKind::gather, name, {in});
    l.axis = axis;
    l.indices = std::move(indices);
    return push(std::move(l));
  }

  Index scale(const std::string& name, Index in, double factor) {
    Layer l = base(LayerKind::scale, name, {in});
    l.factor = factor;
    return push(std::move(l));
  }

  Index batch_norm(const std::string& name, Index in) {
    Layer l = base(LayerKind::batch_norm, name, {in});
    const Index c = shape(in)[0];
    params(l, c, c);
    return push(std::move(l));
  }

  Index pool(LayerKind kind, const std::string& name, Index in, std::vector<Index> kernel,
             std::vector<Index> stride = {}, std::vector<Index> padding = {},
             std::vector<Index> dilation = {}, bool count_include_pad = true,
             bool ceil_mode = false) {
    Layer l = window(kind, name, in, std::move(kernel), std::move(stride), std::move(padding),
                     std::move(dilation));
    l.ceil_mode = ceil_mode;
    l.count_include_pad = count_include_pad;
    return push(std::move(l));
  }

  /// A k_max_pool: a max pool's window and the k-th largest.
  Index k_max_pool(const std::string& name, Index in, Index k, std::vector<Index> kernel,
                   std::vector<Index> stride = {}, std::vector<Index> padding = {},
                   bool ceil_mode = false) {
    const Index l = pool(LayerKind::k_max_pool, name, in, std::move(kernel), std::move(stride),
                         std::move(padding), {}, true, ceil_mode);
    m_graph.layers[static_cast<std::size_t>(l)].k = k;
    return l;
  }

  Index group_sort(const std::string& name, Index in, Index group_size, bool descending) {
    Layer l = base(LayerKind::group_sort, name, {in});
    l.group_size = group_size;
    l.descending = descending;
    return push(std::move(l));
  }

  Index interpolate(const std::string& name, Index in, std::vector<Index> size, bool align_corners,
                    std::vector<double> scales = {}) {
    Layer l = base(LayerKind::interpolate, name, {in});
    l.output_size = std::move(size);
    l.align_corners = align_corners;
    l.scales = std::move(scales);
    return push(std::move(l));
  }

  Index adaptive(const std::string& name, Index in, std::vector<Index> size) {
    Layer l = base(LayerKind::adaptive_avg_pool, name, {in});
    l.output_size = std::move(size);
    return push(std::move(l));
  }

  Index act(const std::string& name, Index in, Activation a = Activation::relu()) {
    Layer l = base(LayerKind::activation, name, {in});
    l.activation = a;
    return push(std::move(l));
  }

  Index op(LayerKind kind, const std::string& name, std::vector<Index> inputs, Index axis = 0) {
    Layer l = base(kind, name, std::move(inputs));
    l.axis = axis;
    return push(std::move(l));
  }

  /// The graph with these output layers.
  [[nodiscard]] LayerGraph graph(std::vector<Index> outputs) const {
    LayerGraph g = m_graph;
    g.outputs = std::move(outputs);
    return g;
  }

 private:
  static Layer base(LayerKind kind, const std::string& name, std::vector<Index> inputs) {
    Layer l;
    l.kind = kind;
    l.name = name;
    l.inputs = std::move(inputs);
    return l;
  }
  /// A window layer's fields (a convolution's or a pool's) on layer `in`.
  static Layer window(LayerKind kind, const std::string& name, Index in, std::vector<Index> kernel,
                      std::vector<Index> stride, std::vector<Index> padding,
                      std::vector<Index> dilation) {
    Layer l = base(kind, name, {in});
    l.kernel = std::move(kernel);
    l.stride = std::move(stride);
    l.padding = std::move(padding);
    l.dilation = std::move(dilation);
    return l;
  }
  void params(Layer& l, Index weights, Index biases) {
    l.weight_offset = m_graph.num_params;
    m_graph.num_params += weights;
    if (biases > 0) {
      l.bias_offset = m_graph.num_params;
      m_graph.num_params += biases;
    }
  }
  Index push(Layer l) {
    m_graph.layers.push_back(std::move(l));
    return static_cast<Index>(m_graph.layers.size()) - 1;
  }

  LayerGraph m_graph;
};

/// torchvision's resnet18 (BasicBlocks [2, 2, 2, 2], no conv bias, eval-mode batch norms) on a
/// {3, size, size} input, `classes` outputs, stage widths width x (1, 2, 4, 8) (torchvision:
/// 64): the graph of the timing test.
inline LayerGraph resnet18(Index size, Index classes = 1000, Index width = 64) {
  GraphBuilder b({3, size, size});
  Index x = b.conv("conv1", 0, width, {7, 7}, {2, 2}, {3, 3}, {}, 1, false);
  x = b.act("relu", b.batch_norm("bn1", x));
  x = b.pool(LayerKind::max_pool, "maxpool", x, {3, 3}, {2, 2}, {1, 1});
  Index channels = width;
  for (int stage = 1; stage <= 4; ++stage) {
    const Index out = width << (stage - 1);
    for (int block = 0; block < 2; ++block) {
      const std::string p = "layer" + std::to_string(stage) + "." + std::to_string(block) + ".";
      const Index s = (stage > 1 && block == 0) ? 2 : 1;
      Index y = b.conv(p + "conv1", x, out, {3, 3}, {s, s}, {1, 1}, {}, 1, false);
      y = b.act(p + "relu1", b.batch_norm(p + "bn1", y));
      y = b.batch_norm(p + "bn2",
                       b.conv(p + "conv2", y, out, {3, 3}, {1, 1}, {1, 1}, {}, 1, false));
      Index skip = x;
      if (s != 1 || channels != out) {
        skip = b.batch_norm(p + "downsample.1",
                            b.conv(p + "downsample.0", x, out, {1, 1}, {s, s}, {}, {}, 1, false));
      }
      x = b.act(p + "relu2", b.op(LayerKind::add, p + "add", {y, skip}));
      channels = out;
    }
  }
  x = b.op(LayerKind::flatten, "flatten", {b.adaptive("avgpool", x, {1, 1})});
  return b.graph({b.linear("fc", x, classes)});
}

}  // namespace pathlift::testing
