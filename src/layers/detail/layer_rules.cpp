// The rules a layer of each kind follows (layer_rules.hpp).

#include "src/layers/detail/layer_rules.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <tuple>
#include <utility>

#include "pathlift/error.hpp"
#include "src/core/checked.hpp"
#include "src/core/listing.hpp"
#include "src/layers/layer_kinds.hpp"
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

std::string kinds_with(Field field) {
  std::vector<std::string> names;
  for (const KindRecord& r : k_kinds) {
    if (r.has(field)) {
      names.emplace_back(r.name);
    }
  }
  return listing(names, names.size());
}

std::vector<Index> LayerChecker::check() const {
  check_inputs();
  // A window whose kind has no ceil_mode refuses one (the other kinds do not read it).
  if (m_layer.ceil_mode && record(m_layer.kind).has(kTraitWindow) &&
      !record(m_layer.kind).has(Field::ceil_mode)) {
    fail(fmt::format("ceil_mode applies to {} only", kinds_with(Field::ceil_mode)));
  }
  return visit_kind(m_layer.kind, [&]<class K>(K) { return K::shape(*this); });
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
  const std::size_t lo = record(m_layer.kind).min_inputs;
  const std::size_t hi = record(m_layer.kind).max_inputs;
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

Window LayerChecker::window_geometry() const {
  return window_of(m_layer, in(0));
}

std::size_t LayerChecker::spatial_dims() const {
  const std::vector<Index>& x = in(0);
  if (x.size() != 2 && x.size() != 3) {
    fail(fmt::format("needs a {{C, L}} or {{C, H, W}} input, got shape {}", shape_text(x)));
  }
  return x.size() - 1;
}

std::vector<Index> LayerChecker::window(bool conv, bool adaptive) const {
  const std::vector<Index>& x = in(0);
  const std::size_t dims = spatial_dims();
  if (adaptive) {
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

}  // namespace pathlift::detail
