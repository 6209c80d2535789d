#pragma once
// The conv_transpose layer kind: ConvTranspose1d / 2d: the transposed map of a convolution (its
// adjoint).

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <vector>

#include "src/core/checked.hpp"
#include "src/layers/detail/layer_rules.hpp"
#include "src/layers/kinds/kind.hpp"

namespace pathlift::detail {

template <>
struct Kind<LayerKind::conv_transpose> {
  static constexpr std::array<FieldUse, 9> fields{FieldUse{Field::out_channels, true},
                                                  FieldUse{Field::kernel, true},
                                                  FieldUse{Field::stride, false},
                                                  FieldUse{Field::padding, false},
                                                  FieldUse{Field::dilation, false},
                                                  FieldUse{Field::output_padding, false},
                                                  FieldUse{Field::groups, false},
                                                  k_weight_offset,
                                                  k_bias_offset};
  static constexpr KindSpec spec{.traits = kTraitSum | kTraitWindow | kTraitReadsValues,
                                 .fields = fields};

  // Its adjoint convolution's window, read backwards.
  static std::vector<Index> shape(const LayerChecker& c) {
    const Layer& ly = c.layer();
    const std::vector<Index>& x = c.in(0);
    const std::size_t dims = c.spatial_dims();
    c.check_list("kernel", ly.kernel, dims, 1, true);
    c.check_list("stride", ly.stride, dims, 1, false);
    c.check_list("padding", ly.padding, dims, 0, false);
    c.check_list("dilation", ly.dilation, dims, 1, false);
    c.check_list("output_padding", ly.output_padding, dims, 0, false);
    c.check_channels(x[0]);
    std::vector<Index> out{ly.out_channels};
    for (std::size_t i = 0; i < dims; ++i) {
      const auto at = [&](const std::vector<Index>& v, Index fallback) {
        return v.empty() ? fallback : v[i];
      };
      const Index stride = at(ly.stride, 1);
      const Index dilation = at(ly.dilation, 1);
      const Index output_padding = at(ly.output_padding, 0);
      if (output_padding >= std::max(stride, dilation)) {
        c.fail(
            fmt::format("output_padding {} must be smaller than the stride {} or the dilation {} "
                        "in spatial dimension {}",
                        output_padding, stride, dilation, i));
      }
      // (in - 1) stride - 2 padding + dilation (kernel - 1) + output_padding + 1: every
      // factor is below 2^31, so each product is below 2^62 and no partial sum overflows.
      const Index size = (x[i + 1] - 1) * stride - 2 * at(ly.padding, 0) +
                         dilation * (ly.kernel[i] - 1) + output_padding + 1;
      if (size < 1 || size > k_max_dim) {
        c.fail(
            fmt::format("the output size {} of spatial dimension {} (input {}, kernel {}, stride "
                        "{}, padding {}, dilation {}, output_padding {}) is not in 1..{}",
                        size, i, x[i + 1], ly.kernel[i], stride, at(ly.padding, 0), dilation,
                        output_padding, k_max_dim));
      }
      out.push_back(static_cast<Index>(size));
    }
    const Window win = c.window_geometry();
    // An output position no input reaches would be a constant (without a bias: zero).
    if (ly.bias_offset < 0) {
      for (const detail::Axis* a : {&win.h, &win.w}) {
        for (Index o = 0; o < a->in; ++o) {
          Index readers = 0;
          a->readers(o, [&](Index, Index) { ++readers; });
          if (readers == 0) {
            c.fail(fmt::format(
                "output position {} of a spatial dimension is reached by no input (kernel {}, "
                "stride {}, padding {}, dilation {}, input {}): its value would be the constant 0",
                o, a->kernel, a->stride, a->padding, a->dilation, a->out));
          }
        }
      }
    }
    const Index per_in = (ly.out_channels / ly.groups) * win.h.kernel * win.w.kernel;
    if (per_in > k_max_dim || x[0] > k_max_dim / per_in) {
      c.fail(fmt::format("{} weights per input channel is too many", per_in));
    }
    checked_entries(out, "the output of shape");
    return out;
  }
  /// The map it is, in the passes' vocabulary (kinds/kind.hpp): every pass is a visitor v.
  template <class V>
  static decltype(auto) map(V&& v) {
    return v.adjoint_window();
  }
};

}  // namespace pathlift::detail
