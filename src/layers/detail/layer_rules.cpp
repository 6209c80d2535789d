// The rules a layer of each kind follows (layer_rules.hpp).

#include "src/layers/detail/layer_rules.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <tuple>
#include <utility>

#include "pathlift/error.hpp"
#include "src/core/checked.hpp"
#include "src/layers/layers_geometry.hpp"
#include "src/layers/param_layout.hpp"

namespace pathlift::detail {

std::string shape_text(const std::vector<Index>& shape) {
  return fmt::format("{{{}}}", fmt::join(shape, ", "));
}

Index checked_entries(const std::vector<Index>& shape, std::string_view what) {
  Index n = 1;
  for (const Index x : shape) {
    if (x < 1 || x > k_max_dim || mul_overflows(n, x, n) || n > k_max_dim) {
      throw LayerProblem{fmt::format("{} {} is empty or has more than {} entries", what,
                                     shape_text(shape), k_max_dim)};
    }
  }
  return n;
}

std::vector<Index> LayerChecker::check() const {
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
    case LayerKind::k_max_pool:
      return k_max_window();
    case LayerKind::group_sort:
      return group_sort();
    case LayerKind::interpolate:
      return interpolate();
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

// The blocks of a parameter layer whose output check() accepted (its products checked there):
// param_layout's rule.
Blocks LayerChecker::blocks() const {
  Blocks b;
  if (const auto p = param_layout(m_layer, in(0))) {
    b.weight = p->weights;
    b.bias = p->out;
    b.weight_shape = p->weight_shape;
  }
  return b;
}

const std::vector<Index>& LayerChecker::in(std::size_t k) const {
  return m_shapes[static_cast<std::size_t>(m_layer.inputs[k])];
}

void LayerChecker::check_inputs() const {
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
    case LayerKind::input:
    case LayerKind::linear:
    case LayerKind::conv:
    case LayerKind::max_pool:
    case LayerKind::avg_pool:
    case LayerKind::adaptive_avg_pool:
    case LayerKind::batch_norm:
    case LayerKind::activation:
    case LayerKind::flatten:
    case LayerKind::gather:
    case LayerKind::conv_transpose:
    case LayerKind::scale:
    case LayerKind::k_max_pool:
    case LayerKind::group_sort:
    case LayerKind::interpolate:
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

std::vector<Index> LayerChecker::linear() const {
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

// A per-dimension list: empty (the default) or one value per spatial dimension, each >= lo.
void LayerChecker::check_channels(Index in_channels) const {
  if (m_layer.out_channels < 1 || m_layer.out_channels > k_max_dim) {
    fail(fmt::format("out_channels must be in 1..{}, got {}", k_max_dim, m_layer.out_channels));
  }
  if (m_layer.groups < 1 || in_channels % m_layer.groups != 0 ||
      m_layer.out_channels % m_layer.groups != 0) {
    fail(fmt::format("groups {} must divide the input channels {} and out_channels {}",
                     m_layer.groups, in_channels, m_layer.out_channels));
  }
}

void LayerChecker::check_list(const char* what, const std::vector<Index>& v, std::size_t dims,
                              Index lo, bool required) const {
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

std::vector<Index> LayerChecker::window() const {
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
    check_channels(x[0]);
  }
  if (m_layer.ceil_mode && !is_max_window(m_layer.kind) && m_layer.kind != LayerKind::avg_pool) {
    fail("ceil_mode applies to max_pool, k_max_pool and avg_pool only");
  }
  const Window win = window_of(m_layer, x);
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

// A conv_transpose: its adjoint convolution's window, read backwards.
std::vector<Index> LayerChecker::transposed_window() const {
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
    fail("ceil_mode applies to max_pool, k_max_pool and avg_pool only");
  }
  check_channels(x[0]);
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
  const Window win = window_of(m_layer, x);
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

std::vector<Index> LayerChecker::k_max_window() const {
  if (m_layer.k < 1 || m_layer.k > k_max_dim) {
    fail(fmt::format("k = {} must be in 1..{}", m_layer.k, k_max_dim));
  }
  std::vector<Index> out = window();
  const Window win = window_of(m_layer, in(0));
  if (const Index fewest = tap_range(win).fewest; m_layer.k > fewest) {
    fail(fmt::format(
        "k = {} but a window (kernel {}) holds only {} entries of the input {}: "
        "its {}-th largest does not exist",
        m_layer.k, fmt::join(m_layer.kernel, ","), fewest, shape_text(in(0)), m_layer.k));
  }
  return out;
}

std::vector<Index> LayerChecker::group_sort() const {
  const std::vector<Index>& x = in(0);
  if (m_layer.group_size < 1 || m_layer.group_size > x[0] || x[0] % m_layer.group_size != 0) {
    fail(fmt::format("group_size {} must divide the {} entries of axis 0 of the input {}",
                     m_layer.group_size, x[0], shape_text(x)));
  }
  return x;
}

std::vector<Index> LayerChecker::interpolate() const {
  const std::vector<Index>& x = in(0);
  if (x.size() != 2 && x.size() != 3) {
    fail(fmt::format("needs a {{C, L}} or {{C, H, W}} input, got shape {}", shape_text(x)));
  }
  const std::size_t dims = x.size() - 1;
  check_list("output_size", m_layer.output_size, dims, 1, true);
  if (!m_layer.scales.empty() && m_layer.scales.size() != dims) {
    fail(fmt::format("scales has {} entries but the input {} has {} spatial dimension{}",
                     m_layer.scales.size(), shape_text(x), dims, dims == 1 ? "" : "s"));
  }
  for (const double f : m_layer.scales) {
    if (!(std::isfinite(f) && f > 0)) {
      fail(fmt::format("scales {} must be finite and > 0", fmt::join(m_layer.scales, ",")));
    }
  }
  std::vector<Index> out{x[0]};
  out.insert(out.end(), m_layer.output_size.begin(), m_layer.output_size.end());
  checked_entries(out, "the output of shape");
  return out;
}

std::vector<Index> LayerChecker::gather() const {
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

std::vector<Index> LayerChecker::concat() const {
  const std::vector<Index>& first = in(0);
  if (m_layer.axis < 0 || std::cmp_greater_equal(m_layer.axis, first.size())) {
    fail(
        fmt::format("axis {} is out of range for input shape {}", m_layer.axis, shape_text(first)));
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
    if (add_overflows(out[axis], s[axis], out[axis]) || out[axis] > k_max_dim) {
      fail(fmt::format("the concatenated dimension {} exceeds {}", axis, k_max_dim));
    }
  }
  return out;
}

}  // namespace pathlift::detail
