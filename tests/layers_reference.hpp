#pragma once
// Independent references for the layer graph tests: a naive evaluation of a LayerGraph on one
// sample, written from PyTorch's definitions (every window tap bounds-checked, padding read as
// 0 for sums and skipped for max), and a node-by-node evaluation of an unrolled Network (sums,
// ReLU, leaky ReLU, max nodes), so that unroll() is checked against neither's code.

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include "pathlift/layers.hpp"
#include "pathlift/network.hpp"

namespace pathlift::testing {

/// A tensor of one sample: row-major values of `shape`.
struct Tensor {
  std::vector<Index> shape;
  std::vector<double> v;
};

inline double apply(const Activation& a, double z) {
  return z > 0 ? z : a.negative_slope * z;
}

/// The sizes of a window layer's input {C, L} or {C, H, W} (a 1-D input as height 1).
struct ReferenceDims {
  bool one_d;
  Index c_in, h_in, w_in, kh, kw;
};

inline ReferenceDims reference_dims(const Layer& ly, const Tensor& x) {
  const bool one_d = x.shape.size() == 2;
  return {
      one_d,           x.shape[0], one_d ? 1 : x.shape[1], x.shape.back(), one_d ? 1 : ly.kernel[0],
      ly.kernel.back()};
}

/// The sizes of a resizing layer (adaptive pooling, interpolation): its input {C, L} or
/// {C, H, W} (a 1-D input as height 1) and its output_size.
struct ResizeDims {
  bool one_d;
  Index c, h_in, w_in, h_out, w_out;
};

inline ResizeDims resize_dims(const Layer& ly, const Tensor& x) {
  const bool one_d = x.shape.size() == 2;
  const Index h_in = one_d ? 1 : x.shape[1];
  const Index h_out = one_d ? 1 : ly.output_size[0];
  return {one_d, x.shape[0], h_in, x.shape.back(), h_out, ly.output_size.back()};
}

/// The shape of an output with c channels: {c, w} (1-D) or {c, h, w}.
inline std::vector<Index> reference_shape(bool one_d, Index c, Index h, Index w) {
  return one_d ? std::vector<Index>{c, w} : std::vector<Index>{c, h, w};
}

/// Entry i (0: height, 1: width) of a per-dimension list, `dflt` when it is empty or for the
/// height of a 1-D layer.
inline Index per_axis(const std::vector<Index>& v, std::size_t i, Index dflt, bool one_d) {
  if (v.empty()) {
    return dflt;
  }
  return one_d ? (i == 0 ? dflt : v[0]) : v[i];
}

/// Conv / pools on a {C, L} or {C, H, W} tensor, naively. mode: 0 conv, 1 max, 2 avg.
inline Tensor reference_window(const Layer& ly, const Tensor& x, std::span<const double> theta,
                               int mode) {
  const auto [one_d, c_in, h_in, w_in, kh, kw] = reference_dims(ly, x);
  const auto get = [&, is_1d = one_d](const std::vector<Index>& v, std::size_t i, Index dflt) {
    return per_axis(v, i, dflt, is_1d);  // a copy: clang 14 does not capture a binding
  };
  const Index sh = get(ly.stride, 0, mode == 0 ? 1 : kh);
  const Index sw = get(ly.stride, 1, mode == 0 ? 1 : kw);
  const Index ph = one_d ? 0 : get(ly.padding, 0, 0);
  const Index pw = get(ly.padding, 1, 0);
  const Index dh = one_d ? 1 : get(ly.dilation, 0, 1);
  const Index dw = get(ly.dilation, 1, 1);
  // PyTorch's pooling_output_shape: rounded up in ceil mode, less one when the last window
  // would start at or after in + padding.
  const auto out_size = [&](Index in, Index p, Index d, Index k, Index st) {
    const Index num = in + 2 * p - d * (k - 1) - 1 + (ly.ceil_mode ? st - 1 : 0);
    Index o = num / st + 1;
    if (ly.ceil_mode && (o - 1) * st >= in + p) {
      --o;
    }
    return o;
  };
  const Index h_out = out_size(h_in, ph, dh, kh, sh);
  const Index w_out = out_size(w_in, pw, dw, kw, sw);
  const Index c_out = mode == 0 ? ly.out_channels : c_in;
  const Index groups = mode == 0 ? ly.groups : c_in;
  const Index cg_in = c_in / groups;
  const Index cg_out = c_out / groups;
  Tensor y;
  y.shape = reference_shape(one_d, c_out, h_out, w_out);
  for (Index co = 0; co < c_out; ++co) {
    const Index g = co / cg_out;
    for (Index oh = 0; oh < h_out; ++oh) {
      for (Index ow = 0; ow < w_out; ++ow) {
        double acc = 0.0;
        std::vector<double> seen;  // max: the window's values
        Index inside = 0;
        for (Index ci = 0; ci < (mode == 0 ? cg_in : 1); ++ci) {
          const Index c = mode == 0 ? g * cg_in + ci : co;
          for (Index a = 0; a < kh; ++a) {
            for (Index b = 0; b < kw; ++b) {
              const Index ih = oh * sh - ph + a * dh;
              const Index iw = ow * sw - pw + b * dw;
              if (ih < 0 || ih >= h_in || iw < 0 || iw >= w_in) {
                continue;  // padding: 0 for sums, absent for max
              }
              const double xv = x.v[static_cast<std::size_t>((c * h_in + ih) * w_in + iw)];
              ++inside;
              if (mode == 0) {
                const Index k = ly.weight_offset + ((co * cg_in + ci) * kh + a) * kw + b;
                acc += theta[static_cast<std::size_t>(k)] * xv;
              } else if (mode == 1) {
                seen.push_back(xv);
              } else {
                acc += xv;
              }
            }
          }
        }
        if (mode == 1) {  // the k-th largest (k = 1 for max_pool): sorted, largest first
          std::sort(seen.begin(), seen.end(), std::greater<>());
          acc = seen[static_cast<std::size_t>(ly.kind == LayerKind::k_max_pool ? ly.k - 1 : 0)];
        }
        if (mode == 0 && ly.bias_offset >= 0) {
          acc += theta[static_cast<std::size_t>(ly.bias_offset + co)];
        }
        if (mode == 2) {
          // PyTorch's divisor: the window clipped to the padded input (hend = min(hstart + k,
          // in + pad)), or the entries inside the input.
          const Index hs = oh * sh - ph;
          const Index ws = ow * sw - pw;
          const Index pool =
              (std::min(hs + kh, h_in + ph) - hs) * (std::min(ws + kw, w_in + pw) - ws);
          acc /= static_cast<double>(ly.count_include_pad ? pool : inside);
        }
        y.v.push_back(acc);
      }
    }
  }
  return y;
}

/// ConvTranspose1d/2d from PyTorch's definition: every input entry scatters into the outputs
/// at i stride - padding + k dilation, weight (in channel, out channel in group, tap).
inline Tensor reference_conv_transpose(const Layer& ly, const Tensor& x,
                                       std::span<const double> theta) {
  const auto [one_d, c_in, h_in, w_in, kh, kw] = reference_dims(ly, x);
  const auto get = [&, is_1d = one_d](const std::vector<Index>& v, std::size_t i, Index dflt) {
    return per_axis(v, i, dflt, is_1d);  // a copy: clang 14 does not capture a binding
  };
  const Index sh = get(ly.stride, 0, 1);
  const Index sw = get(ly.stride, 1, 1);
  const Index ph = one_d ? 0 : get(ly.padding, 0, 0);
  const Index pw = get(ly.padding, 1, 0);
  const Index dh = one_d ? 1 : get(ly.dilation, 0, 1);
  const Index dw = get(ly.dilation, 1, 1);
  const Index oph = one_d ? 0 : get(ly.output_padding, 0, 0);
  const Index opw = get(ly.output_padding, 1, 0);
  const Index h_out = (h_in - 1) * sh - 2 * ph + dh * (kh - 1) + oph + 1;
  const Index w_out = (w_in - 1) * sw - 2 * pw + dw * (kw - 1) + opw + 1;
  const Index c_out = ly.out_channels;
  const Index cg_in = c_in / ly.groups;
  const Index cg_out = c_out / ly.groups;
  Tensor y;
  y.shape = reference_shape(one_d, c_out, h_out, w_out);
  y.v.assign(static_cast<std::size_t>(c_out * h_out * w_out), 0.0);
  for (Index ci = 0; ci < c_in; ++ci) {
    const Index g = ci / cg_in;
    for (Index ih = 0; ih < h_in; ++ih) {
      for (Index iw = 0; iw < w_in; ++iw) {
        const double xv = x.v[static_cast<std::size_t>((ci * h_in + ih) * w_in + iw)];
        for (Index co = 0; co < cg_out; ++co) {
          for (Index a = 0; a < kh; ++a) {
            for (Index b = 0; b < kw; ++b) {
              const Index oh = ih * sh - ph + a * dh;
              const Index ow = iw * sw - pw + b * dw;
              if (oh < 0 || oh >= h_out || ow < 0 || ow >= w_out) {
                continue;
              }
              const Index k = ly.weight_offset + ((ci * cg_out + co) * kh + a) * kw + b;
              y.v[static_cast<std::size_t>(((g * cg_out + co) * h_out + oh) * w_out + ow)] +=
                  theta[static_cast<std::size_t>(k)] * xv;
            }
          }
        }
      }
    }
  }
  if (ly.bias_offset >= 0) {
    for (Index co = 0; co < c_out; ++co) {
      for (Index p = 0; p < h_out * w_out; ++p) {
        y.v[static_cast<std::size_t>(co * h_out * w_out + p)] +=
            theta[static_cast<std::size_t>(ly.bias_offset + co)];
      }
    }
  }
  return y;
}

/// PyTorch's adaptive average pooling, naively.
inline Tensor reference_adaptive(const Layer& ly, const Tensor& x) {
  const auto [one_d, c, h_in, w_in, h_out, w_out] = resize_dims(ly, x);
  Tensor y;
  y.shape = reference_shape(one_d, c, h_out, w_out);
  for (Index ch = 0; ch < c; ++ch) {
    for (Index oh = 0; oh < h_out; ++oh) {
      const auto h0 = static_cast<Index>(std::floor(double(oh * h_in) / double(h_out)));
      const auto h1 = static_cast<Index>(std::ceil(double((oh + 1) * h_in) / double(h_out)));
      for (Index ow = 0; ow < w_out; ++ow) {
        const auto w0 = static_cast<Index>(std::floor(double(ow * w_in) / double(w_out)));
        const auto w1 = static_cast<Index>(std::ceil(double((ow + 1) * w_in) / double(w_out)));
        double acc = 0;
        for (Index i = h0; i < h1; ++i) {
          for (Index j = w0; j < w1; ++j) {
            acc += x.v[static_cast<std::size_t>((ch * h_in + i) * w_in + j)];
          }
        }
        y.v.push_back(acc / static_cast<double>((h1 - h0) * (w1 - w0)));
      }
    }
  }
  return y;
}

/// PyTorch's upsample_linear1d / upsample_bilinear2d (aten/src/ATen/native/UpSample.h: the
/// source index scale * (o + 0.5) - 0.5 clamped at 0, or scale * o with align_corners; the
/// neighbours floor(src) and the next one unless at the end; an axis of unchanged size is
/// copied), naively: a sum over the four neighbours of each output.
inline Tensor reference_interpolate(const Layer& ly, const Tensor& x) {
  const auto [one_d, c, h_in, w_in, h_out, w_out] = resize_dims(ly, x);
  // Per axis and output: (index, weight) of the two neighbours.
  const auto neighbours = [&](Index in, Index out, std::size_t axis, Index o) {
    if (in == out) {
      return std::array<std::pair<Index, double>, 2>{{{o, 1.0}, {o, 0.0}}};
    }
    double scale = 0;
    if (ly.align_corners) {
      scale = out > 1 ? double(in - 1) / double(out - 1) : 0.0;
    } else {
      scale = ly.scales.empty() ? double(in) / double(out) : 1.0 / ly.scales[axis];
    }
    double src = ly.align_corners ? scale * double(o) : scale * (double(o) + 0.5) - 0.5;
    src = ly.align_corners ? src : std::max(src, 0.0);
    const auto i0 = static_cast<Index>(src);
    const Index i1 = i0 < in - 1 ? i0 + 1 : i0;
    const double l1 = src - double(i0);
    return std::array<std::pair<Index, double>, 2>{{{i0, 1.0 - l1}, {i1, l1}}};
  };
  Tensor y;
  y.shape = reference_shape(one_d, c, h_out, w_out);
  for (Index ch = 0; ch < c; ++ch) {
    for (Index oh = 0; oh < h_out; ++oh) {
      const auto hs = one_d ? std::array<std::pair<Index, double>, 2>{{{0, 1.0}, {0, 0.0}}}
                            : neighbours(h_in, h_out, 0, oh);
      for (Index ow = 0; ow < w_out; ++ow) {
        const auto ws = neighbours(w_in, w_out, one_d ? 0 : 1, ow);
        double acc = 0;
        for (const auto& [i, a] : hs) {
          for (const auto& [j, b] : ws) {
            acc += a * b * x.v[static_cast<std::size_t>((ch * h_in + i) * w_in + j)];
          }
        }
        y.v.push_back(acc);
      }
    }
  }
  return y;
}

/// torch.sort of each group of group_size consecutive entries along axis 0, naively.
inline Tensor reference_group_sort(const Layer& ly, const Tensor& x) {
  Tensor y = x;
  const Index g = ly.group_size;
  const Index per = static_cast<Index>(x.v.size()) / x.shape[0];
  for (Index c0 = 0; c0 < x.shape[0]; c0 += g) {
    for (Index p = 0; p < per; ++p) {
      std::vector<double> v;
      for (Index j = 0; j < g; ++j) {
        v.push_back(x.v[static_cast<std::size_t>((c0 + j) * per + p)]);
      }
      std::sort(v.begin(), v.end());
      if (ly.descending) {
        std::reverse(v.begin(), v.end());
      }
      for (Index j = 0; j < g; ++j) {
        y.v[static_cast<std::size_t>((c0 + j) * per + p)] = v[static_cast<std::size_t>(j)];
      }
    }
  }
  return y;
}

/// The layer graph's outputs (concatenated) on one sample x (the flattened input).
inline std::vector<double> reference_layers(const LayerGraph& g, std::span<const double> theta,
                                            std::span<const double> x) {
  std::vector<Tensor> t(g.layers.size());
  t[0] = {g.input_shape, std::vector<double>(x.begin(), x.end())};
  for (std::size_t l = 1; l < g.layers.size(); ++l) {
    const Layer& ly = g.layers[l];
    const Tensor& a = t[static_cast<std::size_t>(ly.inputs[0])];
    Tensor& y = t[l];
    y.shape = a.shape;
    switch (ly.kind) {
      case LayerKind::linear: {
        const auto f = static_cast<Index>(a.v.size());
        y.shape = {ly.out_features};
        for (Index i = 0; i < ly.out_features; ++i) {
          double acc =
              ly.bias_offset >= 0 ? theta[static_cast<std::size_t>(ly.bias_offset + i)] : 0.0;
          for (Index j = 0; j < f; ++j) {
            acc += theta[static_cast<std::size_t>(ly.weight_offset + i * f + j)] *
                   a.v[static_cast<std::size_t>(j)];
          }
          y.v.push_back(acc);
        }
        break;
      }
      case LayerKind::conv:
        y = reference_window(ly, a, theta, 0);
        break;
      case LayerKind::max_pool:
      case LayerKind::k_max_pool:
        y = reference_window(ly, a, theta, 1);
        break;
      case LayerKind::group_sort:
        y = reference_group_sort(ly, a);
        break;
      case LayerKind::interpolate:
        y = reference_interpolate(ly, a);
        break;
      case LayerKind::avg_pool:
        y = reference_window(ly, a, theta, 2);
        break;
      case LayerKind::adaptive_avg_pool:
        y = reference_adaptive(ly, a);
        break;
      case LayerKind::batch_norm: {
        const Index per = static_cast<Index>(a.v.size()) / a.shape[0];
        for (std::size_t e = 0; e < a.v.size(); ++e) {
          const Index c = static_cast<Index>(e) / per;
          const double b =
              ly.bias_offset >= 0 ? theta[static_cast<std::size_t>(ly.bias_offset + c)] : 0.0;
          y.v.push_back(theta[static_cast<std::size_t>(ly.weight_offset + c)] * a.v[e] + b);
        }
        break;
      }
      case LayerKind::activation:
        for (const double z : a.v) {
          y.v.push_back(apply(ly.activation, z));
        }
        break;
      case LayerKind::add:
      case LayerKind::sub:
        y.v = a.v;
        for (std::size_t k = 1; k < ly.inputs.size(); ++k) {
          const Tensor& b = t[static_cast<std::size_t>(ly.inputs[k])];
          for (std::size_t e = 0; e < y.v.size(); ++e) {
            y.v[e] += ly.kind == LayerKind::sub ? -b.v[e] : b.v[e];
          }
        }
        break;
      case LayerKind::concat: {
        const auto axis = static_cast<std::size_t>(ly.axis);
        Index outer = 1;
        for (std::size_t i = 0; i < axis; ++i) {
          outer *= a.shape[i];
        }
        y.shape[axis] = 0;
        for (const Index in : ly.inputs) {
          y.shape[axis] += t[static_cast<std::size_t>(in)].shape[axis];
        }
        for (Index o = 0; o < outer; ++o) {
          for (const Index in : ly.inputs) {
            const Tensor& b = t[static_cast<std::size_t>(in)];
            const auto row = static_cast<Index>(b.v.size()) / outer;
            y.v.insert(y.v.end(), b.v.begin() + o * row, b.v.begin() + (o + 1) * row);
          }
        }
        break;
      }
      case LayerKind::flatten:
        y.shape = {static_cast<Index>(a.v.size())};
        y.v = a.v;
        break;
      case LayerKind::conv_transpose:
        y = reference_conv_transpose(ly, a, theta);
        break;
      case LayerKind::scale:
        y = a;
        for (double& v : y.v) {
          v *= ly.factor;
        }
        break;
      case LayerKind::gather: {
        // y[..., i, ...] = a[..., indices[i], ...] along the axis, index by index.
        const auto axis = static_cast<std::size_t>(ly.axis);
        y.shape = a.shape;
        y.shape[axis] = static_cast<Index>(ly.indices.size());
        Index after = 1;
        for (std::size_t i = axis + 1; i < a.shape.size(); ++i) {
          after *= a.shape[i];
        }
        const Index before = static_cast<Index>(a.v.size()) / (after * a.shape[axis]);
        y.v.clear();
        for (Index o = 0; o < before; ++o) {
          for (const Index j : ly.indices) {
            for (Index r = 0; r < after; ++r) {
              y.v.push_back(a.v[static_cast<std::size_t>((o * a.shape[axis] + j) * after + r)]);
            }
          }
        }
        break;
      }
      default:
        break;
    }
  }
  std::vector<double> out;
  for (const Index o : g.outputs) {
    const auto& v = t[static_cast<std::size_t>(o)].v;
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

/// The unrolled network's outputs on one sample, node by node in topological order (max nodes
/// take the largest weighted input).
inline std::vector<double> reference_network(const Network& net, std::span<const double> theta,
                                             std::span<const double> x) {
  std::vector<double> value(static_cast<std::size_t>(net.num_nodes()), 0.0);
  const auto inputs = net.data_inputs();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    value[static_cast<std::size_t>(inputs[i])] = x[i];
  }
  for (const NodeId b : net.bias_nodes()) {
    value[static_cast<std::size_t>(b)] = 1.0;
  }
  for (const NodeId v : net.topological_order()) {
    if (net.is_input(v)) {
      continue;
    }
    const Activation& act = net.activation(v);
    const bool is_max = act.kind == ActivationKind::max;
    double acc = 0.0;
    std::vector<double> terms;  // max nodes: the k-th largest term
    for (const EdgeId e : net.in_edges(v)) {
      const Index k = net.edge_param(e);
      const double w = k == kFixedEdge ? net.fixed_weight(e) : theta[static_cast<std::size_t>(k)];
      const double t = w * value[static_cast<std::size_t>(net.source(e))];
      acc += t;
      terms.push_back(t);
    }
    if (is_max) {
      std::sort(terms.begin(), terms.end(), std::greater<>());
      acc = terms[static_cast<std::size_t>(act.order - 1)];
    }
    value[static_cast<std::size_t>(v)] = is_max ? acc : apply(act, acc);
  }
  std::vector<double> out;
  for (const NodeId o : net.outputs()) {
    out.push_back(value[static_cast<std::size_t>(o)]);
  }
  return out;
}

}  // namespace pathlift::testing
