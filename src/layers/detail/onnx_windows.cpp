// The ONNX importer's windows (onnx_import.hpp): Conv, ConvTranspose, MaxPool, AveragePool
// (ceil_mode included) and GlobalAveragePool, their padding from pads or auto_pad, and a zero Pad
// before them merged.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>

#include "pathlift/error.hpp"
#include "src/layers/detail/onnx_import.hpp"

namespace pathlift::detail {

// ---------------------------------------------------------------------------------------------
// Convolutions and pools

namespace {

/// A window layer's kernel, stride, padding and dilation, for every spatial dimension (the
/// stride explicit: pathlift's pools default it to the kernel, ONNX's to 1).
void set_window(Layer& l, const std::vector<Index>& kernel, const std::vector<Index>& stride,
                const std::vector<Index>& padding, const std::vector<Index>& dilation) {
  l.kernel = kernel;
  l.stride = stride;
  l.padding = padding;
  l.dilation = dilation;
}

}  // namespace

bool Importer::window_ints_fit(int i, std::initializer_list<WindowInts> lists,
                               const std::vector<Index>& shape) {
  const std::size_t dims = shape.size() - 1;
  for (const WindowInts& list : lists) {
    const std::vector<Index>& v = *list.values;
    if (v.size() != dims) {
      invalid(i, fmt::format("{} [{}] has {} entries but the input of shape {} has {} spatial "
                             "dimension{}",
                             list.name, fmt::join(v, ", "), v.size(), shape_text(shape), dims,
                             dims == 1 ? "" : "s"));
      return false;
    }
    if (std::any_of(v.begin(), v.end(),
                    [&](Index e) { return e < list.lowest || e > k_max_dim; })) {
      invalid(i, fmt::format("{} [{}] must be in {}..{}", list.name, fmt::join(v, ", "),
                             list.lowest, k_max_dim));
      return false;
    }
  }
  return true;
}

std::optional<std::vector<Index>> Importer::window_padding(int i, const std::vector<Index>& in,
                                                           const std::vector<Index>& kernel,
                                                           const std::vector<Index>& stride,
                                                           const std::vector<Index>& dilation) {
  const NodeProto& n = m_g.node(i);
  const std::string mode = string_attr(n, "auto_pad", "NOTSET");
  const auto pads = ints_attr(n, "pads");
  const std::size_t dims = in.size();
  std::vector<Index> padding(dims, 0);
  if (mode == "NOTSET") {
    if (!pads) {
      return padding;
    }
    if (pads->size() != 2 * dims) {
      invalid(i, fmt::format("pads [{}] has {} entries: {} spatial dimension{} need {} (begins, "
                             "then ends)",
                             fmt::join(*pads, ", "), pads->size(), dims, dims == 1 ? "" : "s",
                             2 * dims));
      return std::nullopt;
    }
    for (std::size_t d = 0; d < dims; ++d) {
      const Index b = (*pads)[d];
      const Index e = (*pads)[d + dims];
      if (b < 0 || e < 0 || b > k_max_dim || e > k_max_dim) {
        invalid(i, fmt::format("pads [{}] must be in 0..{}", fmt::join(*pads, ", "), k_max_dim));
        return std::nullopt;
      }
      if (b != e) {
        unsupported(i, fmt::format("asymmetric padding [{}]", fmt::join(*pads, ", ")));
        return std::nullopt;
      }
      padding[d] = b;
    }
    return padding;
  }
  if (mode != "VALID" && mode != "SAME_UPPER" && mode != "SAME_LOWER") {
    invalid(i, fmt::format("auto_pad '{}' is not NOTSET, VALID, SAME_UPPER or SAME_LOWER",
                           printable(mode)));
    return std::nullopt;
  }
  if (pads) {
    invalid(i, fmt::format("auto_pad {} and pads [{}] are both given (pads goes with auto_pad "
                           "NOTSET only)",
                           mode, fmt::join(*pads, ", ")));
    return std::nullopt;
  }
  if (mode == "VALID") {
    return padding;
  }
  // SAME: the output has ceil(in / stride) entries; the total padding is split evenly, the odd
  // one at the end (SAME_UPPER) or at the beginning (SAME_LOWER). All values are below 2^32.
  for (std::size_t d = 0; d < dims; ++d) {
    const Index out = (in[d] + stride[d] - 1) / stride[d];
    const Index span = (kernel[d] - 1) * dilation[d] + 1;
    const Index total = std::max<Index>(0, (out - 1) * stride[d] + span - in[d]);
    if (total % 2 != 0) {
      unsupported(i, fmt::format("auto_pad {} pads spatial dimension {} by {} in all: an "
                                 "asymmetric padding",
                                 mode, d, total));
      return std::nullopt;
    }
    padding[d] = total / 2;
  }
  return padding;
}

void Importer::conv_or_pool(int i) {
  const NodeProto& n = m_g.node(i);
  const std::string& op = n.op_type();
  const Tensor& source = state(n.input(0));
  Index x = -1;
  std::vector<Index> extra;  // a Pad before it, merged
  if (source.kind == Kind::pad) {
    x = source.layer;
    extra = source.pads;
  } else if (!data_input(i, 0, x)) {
    return;
  }
  const std::vector<Index>& shape = m_builder->shape(x);
  if (shape.size() < 2) {
    invalid(i, fmt::format("its input of shape {} (per sample) has no spatial dimension: {} "
                           "reads {{C, L}} or {{C, H, W}} data",
                           shape_text(shape), op));
    return;
  }
  const std::size_t dims = shape.size() - 1;
  // conv, max_pool, avg_pool or adaptive_avg_pool (the table's kind of the operator).
  Layer l = node_layer(i, {x});
  if (op == "GlobalAveragePool") {
    l.output_size.assign(dims, 1);
    set_data(i, m_builder->add(std::move(l)));
    return;
  }
  const Tensor* w = nullptr;
  const Tensor* b = nullptr;
  std::vector<Index> wd;
  if (op == "Conv") {
    w = parameter(i, 1, "weight");
    b = n.input_size() > 2 && !n.input(2).empty() ? parameter(i, 2, "bias") : nullptr;
    if (w == nullptr || (n.input_size() > 2 && !n.input(2).empty() && b == nullptr)) {
      return;
    }
    wd = tensor_dims(*w->tensor);
    if (wd.size() > 4) {
      unsupported(i, fmt::format("{}-D convolution", wd.size() - 2));
      return;
    }
    if (wd.size() < 3) {
      invalid(i, fmt::format("weight '{}' of shape {} has rank {}: a Conv weight has rank 3 (1-D "
                             "convolution) or 4 (2-D)",
                             printable(n.input(1)), shape_text(wd), wd.size()));
      return;
    }
    if (wd.size() != dims + 2) {
      invalid(i, fmt::format("weight '{}' of shape {} is a {}-D convolution's, but the input of "
                             "shape {} has {} spatial dimension{}",
                             printable(n.input(1)), shape_text(wd), wd.size() - 2,
                             shape_text(shape), dims, dims == 1 ? "" : "s"));
      return;
    }
    if (b != nullptr && tensor_dims(*b->tensor).size() != 1) {
      invalid(i, fmt::format("bias '{}' has shape {}: a Conv bias has one entry per output "
                             "channel, shape {{{}}}",
                             printable(n.input(2)), shape_text(tensor_dims(*b->tensor)), wd[0]));
      return;
    }
  }
  std::vector<Index> kernel;
  if (const auto k = ints_attr(n, "kernel_shape")) {
    kernel = *k;
  } else if (w != nullptr) {
    kernel.assign(wd.begin() + 2, wd.end());
  } else {
    invalid(i, "kernel_shape is required");
    return;
  }
  const std::vector<Index> stride = ints_attr(n, "strides").value_or(std::vector<Index>(dims, 1));
  const std::vector<Index> dilation =
      ints_attr(n, "dilations").value_or(std::vector<Index>(dims, 1));
  if (!window_ints_fit(
          i, {{"kernel_shape", &kernel}, {"strides", &stride}, {"dilations", &dilation}}, shape)) {
    return;
  }
  std::vector<Index> in(shape.begin() + 1, shape.end());
  for (std::size_t d = 0; d < extra.size() && d < dims; ++d) {
    in[d] += 2 * extra[d];
  }
  auto padding = window_padding(i, in, kernel, stride, dilation);
  if (!padding) {
    return;
  }
  if (!extra.empty()) {
    if (extra.size() != dims) {
      invalid(i, fmt::format("the Pad before it pads {} spatial dimensions of {}", extra.size(),
                             shape_text(shape)));
      return;
    }
    if (op == "AveragePool") {
      const bool own = std::any_of(padding->begin(), padding->end(), [](Index p) { return p > 0; });
      if (own && int_attr(n, "count_include_pad", 0) == 0) {
        unsupported(i, "count_include_pad 0 with padding of its own after a Pad");
        return;
      }
    }
    for (std::size_t d = 0; d < dims; ++d) {
      (*padding)[d] += extra[d];
    }
  }
  set_window(l, kernel, stride, *padding, dilation);
  l.ceil_mode = op != "Conv" && int_attr(n, "ceil_mode", 0) != 0;
  if (l.ceil_mode) {
    // ONNX's output size is ceil((in + pads - span) / stride) + 1, PyTorch's (pathlift's) the
    // same less a last window that starts in the right padding (a merged Pad's zeros count as
    // padding): they must agree.
    for (std::size_t d = 0; d < dims; ++d) {
      const Index span = (kernel[d] - 1) * dilation[d] + 1;
      const Index padded = shape[d + 1] + 2 * (*padding)[d];
      if (padded < span) {
        break;  // the builder says why
      }
      const Index last = (padded - span + stride[d] - 1) / stride[d] * stride[d];
      if (last >= shape[d + 1] + (*padding)[d]) {
        unsupported(i, fmt::format("ceil_mode 1 with a last window that starts in the right "
                                   "padding{} in spatial dimension {}: ONNX's formula keeps it, "
                                   "PyTorch's rule drops it",
                                   extra.empty() ? "" : " (the zeros of the Pad before it)", d));
        return;
      }
    }
  }
  if (op == "MaxPool") {
    set_data(i, m_builder->add(std::move(l)));
    return;
  }
  if (op == "AveragePool") {
    // The zeros of a merged Pad are entries of the pool's input: counted.
    l.count_include_pad = int_attr(n, "count_include_pad", 0) != 0 || !extra.empty();
    set_data(i, m_builder->add(std::move(l)));
    return;
  }
  l.groups = int_attr(n, "group", 1);
  l.out_channels = wd[0];
  add_convolution(i, std::move(l), *w, wd, b);
}

void Importer::add_convolution(int i, Layer l, const Tensor& w, const std::vector<Index>& wd,
                               const Tensor* b) {
  l.weight_offset = 0;
  l.bias_offset = b != nullptr ? 0 : -1;
  LayerParameters p;
  p.weight = ParameterTensor{w.tensor->name(), wd};
  if (b != nullptr) {
    p.bias = ParameterTensor{b->tensor->name(), tensor_dims(*b->tensor)};
  }
  const LayerOutput y = m_builder->add(std::move(l), p);
  if (y.ok) {
    use(y.layer, false, w, false);
    if (b != nullptr) {
      use(y.layer, true, *b, false);
    }
  }
  set_data(i, y);
}

void Importer::transposed_conv(int i) {
  const NodeProto& n = m_g.node(i);
  Index x = -1;
  if (!data_input(i, 0, x)) {
    return;
  }
  const std::vector<Index> shape = m_builder->shape(x);
  const Tensor* w = parameter(i, 1, "weight");
  const bool has_bias = n.input_size() > 2 && !n.input(2).empty();
  const Tensor* b = has_bias ? parameter(i, 2, "bias") : nullptr;
  if (w == nullptr || (has_bias && b == nullptr)) {
    return;
  }
  // The weight (in_channels, out_channels / group, k...): PyTorch's layout, theta's.
  const std::vector<Index> wd = tensor_dims(*w->tensor);
  if (wd.size() > 4) {
    unsupported(i, fmt::format("{}-D transposed convolution", wd.size() - 2));
    return;
  }
  if (shape.size() < 2 || wd.size() != shape.size() + 1) {
    invalid(i, fmt::format("weight '{}' of shape {} does not fit an input of per-sample shape {}: "
                           "a ConvTranspose weight has rank 3 (1-D) or 4 (2-D), one spatial "
                           "dimension per input's",
                           printable(n.input(1)), shape_text(wd), shape_text(shape)));
    return;
  }
  const std::size_t dims = shape.size() - 1;
  const std::vector<Index> kernel_of_weight(wd.begin() + 2, wd.end());
  const std::vector<Index> kernel = ints_attr(n, "kernel_shape").value_or(kernel_of_weight);
  const std::vector<Index> stride = ints_attr(n, "strides").value_or(std::vector<Index>(dims, 1));
  const std::vector<Index> dilation =
      ints_attr(n, "dilations").value_or(std::vector<Index>(dims, 1));
  const std::vector<Index> output_padding =
      ints_attr(n, "output_padding").value_or(std::vector<Index>(dims, 0));
  if (!window_ints_fit(i,
                       {{"kernel_shape", &kernel},
                        {"strides", &stride},
                        {"dilations", &dilation},
                        {"output_padding", &output_padding, 0}},
                       shape)) {
    return;
  }
  if (kernel != kernel_of_weight) {
    invalid(i, fmt::format("kernel_shape [{}] is not the weight's {}", fmt::join(kernel, ", "),
                           shape_text(wd)));
    return;
  }
  const Index group = int_attr(n, "group", 1);
  if (group < 1 || group > k_max_dim || wd[1] > k_max_dim / group) {
    invalid(i, fmt::format("group {} must be in 1..{}", group, k_max_dim));
    return;
  }
  // The padding: pads (NOTSET), none (VALID), or what an output size asks (auto_pad SAME_*:
  // in * stride; output_shape): total = stride (in - 1) + output_padding + span - out, split
  // with the odd one at the end for SAME_UPPER, at the beginning otherwise.
  const std::string mode = string_attr(n, "auto_pad", "NOTSET");
  const auto pads = ints_attr(n, "pads");
  auto out_shape = ints_attr(n, "output_shape");
  if (mode != "NOTSET" && mode != "VALID" && mode != "SAME_UPPER" && mode != "SAME_LOWER") {
    invalid(i, fmt::format("auto_pad '{}' is not NOTSET, VALID, SAME_UPPER or SAME_LOWER",
                           printable(mode)));
    return;
  }
  if (out_shape && out_shape->size() == dims + 2) {
    out_shape->erase(out_shape->begin(), out_shape->begin() + 2);  // (N, C, spatial...)
  }
  if (out_shape && out_shape->size() != dims) {
    invalid(
        i, fmt::format("output_shape [{}] has {} entries for {} spatial dimension{}",
                       fmt::join(*out_shape, ", "), out_shape->size(), dims, dims == 1 ? "" : "s"));
    return;
  }
  if (pads && pads->size() != 2 * dims) {
    invalid(
        i, fmt::format("pads [{}] has {} entries: {} spatial dimension{} need {}",
                       fmt::join(*pads, ", "), pads->size(), dims, dims == 1 ? "" : "s", 2 * dims));
    return;
  }
  std::vector<Index> padding(dims, 0);
  for (std::size_t d = 0; d < dims; ++d) {
    Index begin = pads ? (*pads)[d] : 0;
    Index end = pads ? (*pads)[d + dims] : 0;
    if (mode == "VALID") {
      begin = end = 0;
    }
    if (out_shape || mode == "SAME_UPPER" || mode == "SAME_LOWER") {
      const Index out = out_shape ? (*out_shape)[d] : shape[d + 1] * stride[d];
      if (out < 1 || out > k_max_dim) {
        invalid(i, fmt::format("an output size {} in spatial dimension {} is not in 1..{}", out, d,
                               k_max_dim));
        return;
      }
      const Index total = stride[d] * (shape[d + 1] - 1) + output_padding[d] +
                          (kernel[d] - 1) * dilation[d] + 1 - out;
      const Index half = total / 2;  // total >= 0 below, so this rounds down
      const Index first = mode == "SAME_UPPER" ? half : total - half;
      if (out_shape && pads && (first != begin || total - first != end)) {
        unsupported(i, fmt::format("output_shape [{}] and pads [{}] disagree",
                                   fmt::join(*out_shape, ", "), fmt::join(*pads, ", ")));
        return;
      }
      if (total < 0) {
        unsupported(i, fmt::format("an output of {} entries in spatial dimension {}, more than "
                                   "the {} its input gives",
                                   out, d, out + total));
        return;
      }
      begin = first;
      end = total - first;
    }
    if (begin < 0 || end < 0 || begin > k_max_dim || end > k_max_dim) {
      invalid(i, fmt::format("a padding of {} before and {} after in spatial dimension {} is not "
                             "in 0..{}",
                             begin, end, d, k_max_dim));
      return;
    }
    if (begin != end) {
      unsupported(i, fmt::format("asymmetric padding ({} before, {} after) in spatial dimension "
                                 "{}",
                                 begin, end, d));
      return;
    }
    padding[d] = begin;
  }
  Layer l = node_layer(i, {x});
  l.out_channels = wd[1] * group;
  l.groups = group;
  set_window(l, kernel, stride, padding, dilation);
  l.output_padding = output_padding;
  add_convolution(i, std::move(l), *w, wd, b);
}

}  // namespace pathlift::detail
