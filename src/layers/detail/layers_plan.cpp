// The unroller's plan (layers_unroll.hpp): the layout of the entries, which of them reach an
// output, how many consumers each has and whether one needs its value; node names.

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "pathlift/error.hpp"
#include "src/layers/detail/layers_unroll.hpp"

namespace pathlift::detail {

void Unroller::layout() {
  const std::size_t n = m_graph.layers.size();
  m_entries.assign(n, 0);
  m_base.assign(n, -1);
  m_refs.resize(n);
  m_window.resize(n);
  Index total = 0;
  for (std::size_t l = 0; l < n; ++l) {
    Index entries = 1;
    for (const Index x : m_shapes[l]) {
      entries *= x;
    }
    m_entries[l] = entries;
    const Layer& ly = layer(l);
    if (l > 0 && (ly.kind == LayerKind::conv || ly.kind == LayerKind::max_pool ||
                  ly.kind == LayerKind::avg_pool || ly.kind == LayerKind::adaptive_avg_pool)) {
      m_window[l] = detail::window_of(ly, m_shapes[op(l)]);
    }
    if (!is_view(ly)) {
      m_base[l] = total;
      total += entries;
      continue;
    }
    std::vector<Index>& refs = m_refs[l];
    refs.reserve(static_cast<std::size_t>(entries));
    if (ly.kind != LayerKind::concat) {
      for (Index e = 0; e < entries; ++e) {
        refs.push_back(ref(op(l), e));
      }
      continue;
    }
    // Concatenation along `axis`: outer blocks (dimensions before the axis) of inner rows.
    const auto axis = static_cast<std::size_t>(ly.axis);
    Index outer = 1;
    for (std::size_t i = 0; i < axis; ++i) {
      outer *= m_shapes[l][i];
    }
    for (Index o = 0; o < outer; ++o) {
      for (std::size_t k = 0; k < ly.inputs.size(); ++k) {
        const Index row = m_entries[op(l, k)] / outer;
        for (Index i = 0; i < row; ++i) {
          refs.push_back(ref(op(l, k), o * row + i));
        }
      }
    }
  }
  m_live.assign(static_cast<std::size_t>(total), 0);
  m_uses.assign(static_cast<std::size_t>(total), 0);
  m_value_use.assign(static_cast<std::size_t>(total), 0);
  m_owner.resize(static_cast<std::size_t>(total));
  for (std::size_t l = 0; l < n; ++l) {
    if (m_base[l] >= 0) {
      std::fill_n(m_owner.begin() + m_base[l], m_entries[l], static_cast<std::int32_t>(l));
    }
  }
}

void Unroller::mark_entrywise(std::size_t l, std::size_t k, bool value) {
  for (Index e = 0; e < m_entries[l]; ++e) {
    if (live(l, e)) {
      mark(ref(op(l, k), e), value);
    }
  }
}

void Unroller::mark_window(std::size_t l) {
  const Window& w = m_window[l];
  const Index hw_in = w.h.in * w.w.in;
  const bool conv = layer(l).kind == LayerKind::conv;
  // conv: one spatial mask per group (every input channel of the group is read); pools: one
  // per channel.
  const Index masks = conv ? w.groups : w.channels_in;
  std::vector<std::uint8_t> read(static_cast<std::size_t>(masks * hw_in), 0);
  const Index per_mask = w.channels_out / masks;
  Index e = 0;
  for (Index c = 0; c < w.channels_out; ++c) {
    std::uint8_t* mask = read.data() + (c / per_mask) * hw_in;
    for (Index oh = 0; oh < w.h.out; ++oh) {
      for (Index ow = 0; ow < w.w.out; ++ow, ++e) {
        if (!live(l, e)) {
          continue;
        }
        for (Index kh = w.h.first(oh); kh < w.h.last(oh); ++kh) {
          const Index ih = w.h.input(oh, kh);
          for (Index kw = w.w.first(ow); kw < w.w.last(ow); ++kw) {
            mask[ih * w.w.in + w.w.input(ow, kw)] = 1;
          }
        }
      }
    }
  }
  const Index per_group = w.channels_in / masks;
  for (Index c = 0; c < w.channels_in; ++c) {
    const std::uint8_t* mask = read.data() + (c / per_group) * hw_in;
    for (Index p = 0; p < hw_in; ++p) {
      if (mask[p] != 0) {
        mark(ref(op(l), c * hw_in + p), true);
      }
    }
  }
}

void Unroller::plan() {
  for (const Index o : m_graph.outputs) {
    for (Index e = 0; e < m_entries[static_cast<std::size_t>(o)]; ++e) {
      mark(ref(static_cast<std::size_t>(o), e), false);
    }
  }
  for (std::size_t l = m_graph.layers.size(); l-- > 1;) {
    if (m_base[l] < 0 ||
        std::none_of(m_live.begin() + m_base[l], m_live.begin() + m_base[l] + m_entries[l],
                     [](std::uint8_t x) { return x != 0; })) {
      continue;
    }
    switch (layer(l).kind) {
      case LayerKind::linear:
        for (Index e = 0; e < m_entries[op(l)]; ++e) {
          mark(ref(op(l), e), true);
        }
        break;
      case LayerKind::conv:
      case LayerKind::max_pool:
      case LayerKind::avg_pool:
      case LayerKind::adaptive_avg_pool:
        mark_window(l);
        break;
      case LayerKind::batch_norm:
        mark_entrywise(l, 0, true);
        break;
      case LayerKind::activation:
        mark_entrywise(l, 0, false);
        break;
      case LayerKind::add:
        for (std::size_t k = 0; k < layer(l).inputs.size(); ++k) {
          mark_entrywise(l, k, false);
        }
        break;
      case LayerKind::sub:
        mark_entrywise(l, 0, false);
        mark_entrywise(l, 1, true);
        break;
      default:
        break;
    }
  }
  for (Index e = 0; e < m_entries[0]; ++e) {
    if (!live(0, e)) {
      Index dead = 0;
      for (Index f = 0; f < m_entries[0]; ++f) {
        dead += live(0, f) ? 0 : 1;
      }
      throw NetworkError(fmt::format(
          "input entry {} reaches no output ({} of the {} input entries do not): a network "
          "has no isolated node (is it skipped by every window of a strided convolution or "
          "pooling?)",
          entry_name("x", 0, e), dead, m_entries[0]));
    }
  }
  // Blocks: how many term groups an entry's sum can have (the edges of a batch of new nodes
  // are ordered by block, then by node, then within the block).
  m_blocks.assign(m_graph.layers.size(), 1);
  m_own_blocks.assign(m_graph.layers.size(), 1);
  for (std::size_t l = 1; l < m_graph.layers.size(); ++l) {
    const Layer& ly = layer(l);
    int& b = m_own_blocks[l];
    if (is_view(ly)) {
      b = 0;
      for (std::size_t k = 0; k < ly.inputs.size(); ++k) {
        b = std::max(b, m_blocks[op(l, k)]);
      }
    } else if (ly.kind == LayerKind::add) {
      b = 0;
      for (std::size_t k = 0; k < ly.inputs.size(); ++k) {
        b += m_blocks[op(l, k)];
      }
    } else if (ly.kind == LayerKind::sub) {
      b = m_blocks[op(l)] + 1;
    } else if (has_bias(ly)) {
      b = 2;
    }
    // As seen by a consumer: one block (a fixed edge 1) when every entry is a node.
    m_blocks[l] = is_sum(ly.kind) && b > 1 && all_materialised(l) ? 1 : b;
  }
}

std::vector<std::vector<std::uint8_t>> Unroller::node_entries() const {
  std::vector<std::vector<std::uint8_t>> out(m_graph.layers.size());
  for (std::size_t l = 0; l < m_graph.layers.size(); ++l) {
    if (m_base[l] < 0) {
      continue;
    }
    const bool sum = is_sum(layer(l).kind);
    std::vector<std::uint8_t>& flags = out[l];
    flags.resize(static_cast<std::size_t>(m_entries[l]));
    for (Index e = 0; e < m_entries[l]; ++e) {
      const bool node = sum ? needs_node(m_base[l] + e) : live(l, e);
      flags[static_cast<std::size_t>(e)] = !live(l, e) ? 2 : node ? 1 : 0;
    }
  }
  return out;
}

bool Unroller::all_materialised(std::size_t l) const {
  for (Index e = 0; e < m_entries[l]; ++e) {
    if (live(l, e) && !needs_node(m_base[l] + e)) {
      return false;
    }
  }
  return true;
}

std::string Unroller::entry_name(std::string_view name, std::size_t l, Index e) const {
  fmt::memory_buffer buf;
  append_entry_name(buf, name, l, e);
  return {buf.data(), buf.size()};
}

void Unroller::append_entry_name(fmt::memory_buffer& buf, std::string_view name, std::size_t l,
                                 Index e) const {
  const std::vector<Index>& shape = m_shapes[l];
  Index index[3] = {0, 0, 0};
  for (std::size_t i = shape.size(); i-- > 0;) {
    index[i] = e % shape[i];
    e /= shape[i];
  }
  auto out = std::back_inserter(buf);
  out = fmt::format_to(out, "{}[{}", name, index[0]);
  for (std::size_t i = 1; i < shape.size(); ++i) {
    out = fmt::format_to(out, ",{}", index[i]);
  }
  buf.push_back(']');
}

}  // namespace pathlift::detail
