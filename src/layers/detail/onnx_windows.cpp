// The ONNX importer's windows (onnx_import.hpp): Conv, MaxPool, AveragePool and
// GlobalAveragePool, their padding from pads or auto_pad, and a zero Pad before them merged.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>

#include "pathlift/error.hpp"
#include "src/layers/detail/onnx_import.hpp"

namespace pathlift::detail {

namespace {

// The largest size, stride, padding or dilation (the builder's bound).
constexpr Index k_max_dim = std::numeric_limits<std::int32_t>::max();

}  // namespace

// ---------------------------------------------------------------------------------------------
// Convolutions and pools

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
  Layer l = make_layer(LayerKind::conv, node_name(i), {x});
  if (op == "GlobalAveragePool") {
    l.kind = LayerKind::adaptive_avg_pool;
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
  using Named = std::pair<const char*, const std::vector<Index>*>;
  for (const auto& [what, v] :
       {Named{"kernel_shape", &kernel}, Named{"strides", &stride}, Named{"dilations", &dilation}}) {
    if (v->size() != dims) {
      invalid(i, fmt::format("{} [{}] has {} entries but the input of shape {} has {} spatial "
                             "dimension{}",
                             what, fmt::join(*v, ", "), v->size(), shape_text(shape), dims,
                             dims == 1 ? "" : "s"));
      return;
    }
    if (std::any_of(v->begin(), v->end(), [](Index e) { return e < 1 || e > k_max_dim; })) {
      invalid(i, fmt::format("{} [{}] must be in 1..{}", what, fmt::join(*v, ", "), k_max_dim));
      return;
    }
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
  l.kernel = kernel;
  l.stride = stride;  // explicit: pathlift's pools default to the kernel, ONNX's to 1
  l.dilation = dilation;
  l.padding = *padding;
  if (op == "MaxPool") {
    l.kind = LayerKind::max_pool;
    set_data(i, m_builder->add(std::move(l)));
    return;
  }
  if (op == "AveragePool") {
    l.kind = LayerKind::avg_pool;
    // The zeros of a merged Pad are entries of the pool's input: counted.
    l.count_include_pad = int_attr(n, "count_include_pad", 0) != 0 || !extra.empty();
    set_data(i, m_builder->add(std::move(l)));
    return;
  }
  l.kind = LayerKind::conv;
  l.groups = int_attr(n, "group", 1);
  l.out_channels = wd[0];
  l.weight_offset = 0;
  l.bias_offset = b != nullptr ? 0 : -1;
  LayerParameters p;
  p.weight = ParameterTensor{w->tensor->name(), wd};
  if (b != nullptr) {
    p.bias = ParameterTensor{b->tensor->name(), tensor_dims(*b->tensor)};
  }
  const LayerOutput y = m_builder->add(std::move(l), p);
  if (y.ok) {
    use(y.layer, false, *w, false);
    if (b != nullptr) {
      use(y.layer, true, *b, false);
    }
  }
  set_data(i, y);
}

}  // namespace pathlift::detail
