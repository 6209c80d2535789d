#include "src/rank/detail/symmetry_layer_view.hpp"

#include <algorithm>

namespace pathlift::detail {

bool SymmetryLayerView::linear_zeros_keep_the_entries(std::size_t l) const {
  const Layer& ly = layer(l);
  const Index f = entries(op(l));
  std::vector<std::uint8_t> read(static_cast<std::size_t>(f), 0);
  for (Index o = 0; o < ly.out_features; ++o) {
    if (!live(l, o)) {
      continue;
    }
    bool any = false;
    for (Index j = 0; j < f; ++j) {
      if (m_theta[static_cast<std::size_t>(ly.weight_offset + o * f + j)] != 0.0) {
        any = true;
        read[static_cast<std::size_t>(j)] = 1;
      }
    }
    if (!any) {
      return false;
    }
  }
  return std::find(read.begin(), read.end(), 0) == read.end();
}

bool SymmetryLayerView::conv_zeros_keep_the_entries(std::size_t l) const {
  for (Index e = 0; e < entries(l); ++e) {
    if (!live(l, e)) {
      return false;
    }
  }
  const Window& w = m_plan.window(l);
  const ParamLayout c = layout(l);
  const Index w0 = layer(l).weight_offset;
  const Index taps = w.h.kernel * w.w.kernel;
  const auto nonzero = [&](Index k) { return m_theta[static_cast<std::size_t>(k)] != 0.0; };
  for (Index g = 0; g < c.out / c.out_group; ++g) {
    for (Index tap = 0; tap < taps; ++tap) {
      for (Index co = g * c.out_group; co < (g + 1) * c.out_group; ++co) {
        bool any = false;
        for (Index ci = g * c.in_group; ci < (g + 1) * c.in_group && !any; ++ci) {
          any = nonzero(w0 + c.weight(co, ci, tap));
        }
        if (!any) {
          return false;
        }
      }
      for (Index ci = g * c.in_group; ci < (g + 1) * c.in_group; ++ci) {
        bool any = false;
        for (Index co = g * c.out_group; co < (g + 1) * c.out_group && !any; ++co) {
          any = nonzero(w0 + c.weight(co, ci, tap));
        }
        if (!any) {
          return false;
        }
      }
    }
  }
  return true;
}

bool SymmetryLayerView::every_entry_reads_a_tap(std::size_t l) const {
  const Window& w = m_plan.window(l);
  const bool transposed = layout(l).transposed;
  const auto reads = [&](const detail::Axis& a, Index p) {
    if (!transposed) {
      return a.taps(p) > 0;
    }
    bool any = false;
    a.readers(p, [&](Index, Index) { any = true; });
    return any;
  };
  const Index hs = transposed ? w.h.in : w.h.out;
  const Index ws = transposed ? w.w.in : w.w.out;
  const Channels ch = channels(l);
  for (Index ph = 0; ph < hs; ++ph) {
    for (Index pw = 0; pw < ws; ++pw) {
      if (reads(w.h, ph) && reads(w.w, pw)) {
        continue;
      }
      for (Index c = 0; c < ch.count; ++c) {
        if (live(l, c * ch.size + ph * ws + pw)) {
          return false;
        }
      }
    }
  }
  return true;
}

}  // namespace pathlift::detail
