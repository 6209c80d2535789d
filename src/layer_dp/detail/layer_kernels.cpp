// The kernels of the layer dynamic programme (layer_kernels.hpp).

#include "src/layer_dp/detail/layer_kernels.hpp"

#include "src/layer_dp/detail/layer_classes.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>

namespace pathlift::detail {

Index ceil_div(Index a, Index b) {
  return (a + b - 1) / b;
}

/// 2^e as a double for e <= 0 (0 below the subnormals).
double down(std::int64_t e) {
  return std::ldexp(1.0, static_cast<int>(std::max<std::int64_t>(e, -1100)));
}

namespace {

/// x * 2^e for any e, exactly while the result is a normal double.
void scale_all(double* x, Index n, int e, int threads) {
  if (e == 0) {
    return;
  }
  if (e > -1000 && e < 1000) {
    const double f = std::ldexp(1.0, e);
    for_chunks(n, threads, [&](Index b, Index end) {
      for (Index i = b; i < end; ++i) {
        x[i] *= f;
      }
    });
    return;
  }
  for_chunks(n, threads, [&](Index b, Index end) {
    for (Index i = b; i < end; ++i) {
      x[i] = std::ldexp(x[i], e);
    }
  });
}

}  // namespace

namespace {

/// The largest |x[i]|, NaN when some x[i] is NaN. On the bit patterns without the sign, whose
/// unsigned order is the order of the magnitudes (NaN above inf): an integer max the compiler
/// vectorises, where a floating-point max with std::max's NaN rule stays scalar.
double max_abs(const double* x, Index n, int threads) {
  const Index tasks = ceil_div(n, k_chunk);
  std::vector<std::uint64_t> part(static_cast<std::size_t>(std::max<Index>(tasks, 1)), 0);
  for_tasks(tasks, threads, [&](Index t) {
    std::uint64_t m = 0;
    const Index end = std::min(n, (t + 1) * k_chunk);
    for (Index i = t * k_chunk; i < end; ++i) {
      const std::uint64_t b = std::bit_cast<std::uint64_t>(x[i]) & 0x7fffffffffffffffULL;
      m = b > m ? b : m;
    }
    part[static_cast<std::size_t>(t)] = m;
  });
  return std::bit_cast<double>(*std::max_element(part.begin(), part.end()));
}

}  // namespace

/// Rescales t so that its largest magnitude lies in [0.5, 1) (the exponent absorbs 2^e).
void normalize(Tensor& t, int threads) {
  const auto n = static_cast<Index>(t.value.size());
  const double m = max_abs(t.value.data(), n, threads);
  if (m == 0) {
    t.exp = 0;
    return;
  }
  if (!std::isfinite(m)) {
    throw std::logic_error("layer dynamic programme: a sum is not finite");
  }
  int e = 0;
  (void)std::frexp(m, &e);
  scale_all(t.value.data(), n, -e, threads);
  t.exp += e;
}

void fill_zero(double* p, Index n, int threads) {
  for_chunks(n, threads, [&](Index i0, Index i1) { std::fill(p + i0, p + i1, 0.0); });
}

/// A tensor of n entries, zeros when `zero` (else left for the caller to write).
TensorPtr make_tensor(Index n, std::int64_t exp, bool zero) {
  auto t = std::make_shared<Tensor>();
  if (zero) {
    t->value.assign(static_cast<std::size_t>(n), 0.0);
  } else {
    t->value.resize(static_cast<std::size_t>(n));
  }
  t->exp = exp;
  return t;
}

/// A scratch buffer of at least n doubles owned by the calling thread (reused across calls,
/// so that im2col blocks cost no allocation and no page fault after the first).
double* scratch(std::size_t n) {
  thread_local Buffer<double> buffer;
  if (buffer.size() < n) {
    buffer.resize(n);
  }
  return buffer.data();
}

namespace {
thread_local std::array<Buffer<double>, 2> t_layer_buffers;  // one per LayerBuffer
}  // namespace

double* layer_buffer(LayerBuffer slot, std::size_t n) {
  Buffer<double>& b = t_layer_buffers[static_cast<std::size_t>(slot)];
  if (b.size() < n) {
    b.resize(n);
  }
  return b.data();
}

void release_layer_buffers() {
  for (Buffer<double>& b : t_layer_buffers) {
    Buffer<double>().swap(b);
  }
}

FixedWeight fixed(double w, const WeightSpec& spec) {
  double s = 1;
  switch (spec.mode) {
    case Mode::power:
      s = spec.s;
      break;
    case Mode::square:
      s = 2;
      break;
    case Mode::product:
      return {0.0, 0};
    case Mode::ones:
      return {1.0, 0};
  }
  if (s == 0) {
    return {1.0, 0};
  }
  if (w == 0) {
    return {0.0, 0};
  }
  int e = 0;
  const double m = std::frexp(std::fabs(w), &e);  // |w| = m 2^e, m in [0.5, 1)
  if (s == 1) {
    return {m, e};
  }
  if (s == 2) {
    return {m * m, 2 * static_cast<std::int64_t>(e)};
  }
  // |w|^s = m^s 2^(e s): the whole part of e s to the exponent (m^s >= 2^-512 for s <= 512;
  // beyond, all of s log2 |w| goes through the exponent).
  const double es = s <= 512 ? static_cast<double>(e) * s : s * std::log2(std::fabs(w));
  const double whole = std::floor(es);
  const double m_s = s <= 512 ? std::pow(m, s) : 1.0;
  return {m_s * std::exp2(es - whole), static_cast<std::int64_t>(whole)};
}

double FixedWeight::value() const {
  return m == 0 ? 0.0 : std::ldexp(m, static_cast<int>(std::clamp<std::int64_t>(exp, -2200, 2200)));
}

namespace {

int block_exponent(const double* x, Index n, int threads) {
  const double m = max_abs(x, n, threads);
  if (m == 0) {
    return std::numeric_limits<int>::min();
  }
  int e = 0;
  (void)std::frexp(m, &e);
  return e;
}

}  // namespace

ParamTransform::ParamTransform(const WeightSpec& spec, Index offset, Index count, int threads)
    : m_mode(spec.mode), m_s(spec.mode == Mode::square ? 2.0 : spec.s) {
  if (spec.mode == Mode::ones || (spec.mode == Mode::power && spec.s == 0)) {
    m_ones = true;
    m_zero = false;
    return;
  }
  m_t = spec.theta.data() + offset;
  m_et = block_exponent(m_t, count, threads);
  if (m_et == std::numeric_limits<int>::min()) {
    return;  // every entry 0
  }
  m_tiny = m_et < -1000;  // 2^-e would overflow: scale entry by entry
  m_ft = std::ldexp(1.0, -m_et);
  if (spec.mode == Mode::product) {
    m_v = spec.direction.data() + offset;
    m_ev = block_exponent(m_v, count, threads);
    if (m_ev == std::numeric_limits<int>::min()) {
      return;
    }
    m_tiny = m_tiny || m_ev < -1000;
    m_fv = std::ldexp(1.0, -m_ev);
    m_exp = static_cast<std::int64_t>(m_et) + m_ev;
    m_zero = false;
    return;
  }
  // |t 2^-et|^s 2^(et s), the fractional part of et s folded into the mantissas.
  const double es = static_cast<double>(m_et) * m_s;
  const double whole = std::floor(es);
  m_frac = std::exp2(es - whole);
  m_exp = static_cast<std::int64_t>(whole);
  m_zero = false;
}

void ParamTransform::fill(Index begin, Index end, double* out) const {
  if (m_zero || m_ones) {
    std::fill(out, out + (end - begin), m_ones ? 1.0 : 0.0);
    return;
  }
  const double* __restrict t = m_t + begin;
  double* __restrict o = out;
  const Index n = end - begin;
  if (m_tiny) {  // 2^-e would overflow: entry by entry
    for (Index i = 0; i < n; ++i) {
      const double a = std::ldexp(t[i], -m_et);
      if (m_mode == Mode::product) {
        o[i] = a * std::ldexp(m_v[begin + i], -m_ev);
      } else {
        const double x = std::fabs(a);
        o[i] = (m_s == 1 ? x : m_s == 2 ? x * x : std::pow(x, m_s)) * m_frac;
      }
    }
    return;
  }
  // The common cases as loops the compiler vectorises.
  const double ft = m_ft;
  if (m_mode == Mode::product) {
    const double* __restrict v = m_v + begin;
    const double fv = m_fv;
    for (Index i = 0; i < n; ++i) {
      o[i] = (t[i] * ft) * (v[i] * fv);
    }
    return;
  }
  const double frac = m_frac;
  if (m_s == 2) {
    for (Index i = 0; i < n; ++i) {
      const double a = t[i] * ft;
      o[i] = (a * a) * frac;
    }
  } else if (m_s == 1) {
    for (Index i = 0; i < n; ++i) {
      o[i] = std::fabs(t[i] * ft) * frac;
    }
  } else {
    const double s = m_s;
    for (Index i = 0; i < n; ++i) {
      o[i] = std::pow(std::fabs(t[i] * ft), s) * frac;
    }
  }
}

namespace {

/// The transformed parameters straight into b in one pass (exponent 0), for the modes where
/// the value is ParamTransform's mantissa times a power of 2: theta v, theta^2 and |theta|
/// (Mode::square, Mode::product, Mode::power with s = 1 or 2), when every value is a normal
/// double within 2^+-500 or an exact 0. ParamTransform's two passes over the block (its range,
/// then the values) are then one. False otherwise (b to be refilled by the general path).
bool direct_block(const WeightSpec& spec, Index offset, Index count, int threads, Block& b) {
  const bool product = spec.mode == Mode::product;
  const bool square = spec.mode == Mode::square || (spec.mode == Mode::power && spec.s == 2);
  if (!product && !square && !(spec.mode == Mode::power && spec.s == 1)) {
    return false;
  }
  const double* t = spec.theta.data() + offset;
  const double* v = product ? spec.direction.data() + offset : nullptr;
  b.m.resize(static_cast<std::size_t>(count));
  double* out = b.m.data();
  const Index chunks = ceil_div(count, k_chunk);
  std::vector<double> top(static_cast<std::size_t>(chunks), 0.0);
  std::vector<char> lost(static_cast<std::size_t>(chunks), 0);
  for_chunks(count, threads, [&](Index i0, Index i1) {
    double m = 0;
    bool under = false;
    for (Index i = i0; i < i1; ++i) {
      const double p = product ? t[i] * v[i] : square ? t[i] * t[i] : std::fabs(t[i]);
      out[i] = p;
      m = std::max(m, std::fabs(p));
      // Rounded below the normal range, or not finite: the general path decides.
      under = under || !(std::fabs(p) <= std::numeric_limits<double>::max()) ||
              (std::fabs(p) < std::numeric_limits<double>::min() && t[i] != 0 &&
               (v == nullptr || v[i] != 0));
    }
    top[static_cast<std::size_t>(i0 / k_chunk)] = m;
    lost[static_cast<std::size_t>(i0 / k_chunk)] = static_cast<char>(under);
  });
  double m = 0;
  for (Index c = 0; c < chunks; ++c) {
    m = std::max(m, top[static_cast<std::size_t>(c)]);
    if (lost[static_cast<std::size_t>(c)] != 0) {
      return false;
    }
  }
  if (m != 0 && !(m <= 0x1p500 && m >= 0x1p-500)) {
    return false;
  }
  b.zero = m == 0;
  b.exp = 0;
  return true;
}

/// materialise() into b (its memory reused when it has the size).
void materialise_into(const WeightSpec& spec, Index offset, Index count, int threads, Block& b) {
  if (direct_block(spec, offset, count, threads, b)) {
    return;
  }
  const ParamTransform p(spec, offset, count, threads);
  b.m.resize(static_cast<std::size_t>(count));
  b.zero = p.zero();
  b.exp = p.exp();
  double* out = b.m.data();
  for_chunks(count, threads, [&](Index i0, Index i1) { p.fill(i0, i1, out + i0); });
}

}  // namespace

Block materialise(const WeightSpec& spec, Index offset, Index count, int threads) {
  Block b;
  materialise_into(spec, offset, count, threads, b);
  return b;
}

void linear_forward(const ParamTransform& w, Index rows, Index cols, const double* x, double* y,
                    int threads) {
  const Index col_blocks = ceil_div(cols, k_tile_cols);
  // part[c * rows + r]: row r's sum over column block c, added in column order below.
  std::vector<double> part(static_cast<std::size_t>(rows * col_blocks));
  for_tiles(rows, cols, k_rows, k_tile_cols, threads, [&](Index r0, Index r1, Index c0, Index c1) {
    const Index c = c0 / k_tile_cols;
    const Index width = c1 - c0;
    double* tile = scratch(static_cast<std::size_t>((r1 - r0) * width));
    for (Index r = r0; r < r1; ++r) {
      w.fill(r * cols + c0, r * cols + c0 + width, tile + (r - r0) * width);
    }
    const ConstMatMap wm(tile, r1 - r0, width, Eigen::OuterStride<>(width));
    VecMap(part.data() + c * rows + r0, r1 - r0).noalias() = wm * ConstVecMap(x + c0, width);
  });
  for_chunks(rows, threads, [&](Index r0, Index r1) {
    for (Index r = r0; r < r1; ++r) {
      double acc = part[static_cast<std::size_t>(r)];
      for (Index c = 1; c < col_blocks; ++c) {
        acc += part[static_cast<std::size_t>(c * rows + r)];
      }
      y[r] = acc;
    }
  });
}

void linear_transpose(const ParamTransform& w, Index rows, Index cols, const double* y, double* x,
                      int threads) {
  for_tasks(ceil_div(cols, k_tcols), threads, [&](Index task) {
    const Index c0 = task * k_tcols;
    const Index width = std::min(cols, c0 + k_tcols) - c0;
    VecMap xv(x + c0, width);
    for (Index r0 = 0; r0 < rows; r0 += k_trows) {
      const Index r1 = std::min(rows, r0 + k_trows);
      double* tile = scratch(static_cast<std::size_t>((r1 - r0) * width));
      for (Index r = r0; r < r1; ++r) {
        w.fill(r * cols + c0, r * cols + c0 + width, tile + (r - r0) * width);
      }
      const ConstMatMap wm(tile, r1 - r0, width, Eigen::OuterStride<>(width));
      xv.noalias() += wm.transpose() * ConstVecMap(y + r0, r1 - r0);
    }
  });
}

namespace {

/// materialise(), or the cached block of the same offset and size.
BlockPtr cached_block(const WeightSpec& spec, Index offset, Index count, int threads) {
  if (spec.cache == nullptr) {
    return std::make_shared<const Block>(materialise(spec, offset, count, threads));
  }
  BlockCache& cache = *spec.cache;
  const auto it = cache.blocks.find(offset);
  if (it != cache.blocks.end() && static_cast<Index>(it->second.block->m.size()) == count) {
    if (it->second.generation != cache.generation) {
      materialise_into(spec, offset, count, threads, *it->second.block);
      it->second.generation = cache.generation;
    }
    return it->second.block;  // else a lookup only: passes that share a filled cache may run
  }                           // at once
  auto b = std::make_shared<Block>(materialise(spec, offset, count, threads));
  cache.blocks[offset] = {b, cache.generation};
  return b;
}

}  // namespace

BlockPtr weights_of(const Layer& ly, Index count, const WeightSpec& spec, int threads) {
  return cached_block(spec, ly.weight_offset, count, threads);
}

BlockPtr bias_of(const Layer& ly, Index count, const WeightSpec& spec, int threads) {
  if (ly.bias_offset < 0) {
    static const BlockPtr none = std::make_shared<const Block>();
    return none;
  }
  return cached_block(spec, ly.bias_offset, count, threads);
}

/// y (channels x positions, exponent y.exp) += bias[c] * bias_value, then normalised.
void add_bias(Tensor& y, const Block& bias, Index channels, Index positions, double bias_value,
              int threads) {
  if (bias.zero || bias.m.empty() || bias_value == 0) {
    normalize(y, threads);
    return;
  }
  normalize(y, threads);
  const std::int64_t e = std::max(y.exp, bias.exp);
  const double fy = down(y.exp - e);
  const double fb = down(bias.exp - e) * bias_value;
  double* v = y.value.data();
  for_tasks(channels, threads, [&](Index c) {
    const double b = bias.m[static_cast<std::size_t>(c)] * fb;
    double* row = v + c * positions;
    for (Index p = 0; p < positions; ++p) {
      row[p] = row[p] * fy + b;
    }
  });
  y.exp = e;
  normalize(y, threads);
}

// --------------------------------------------------------------------------------------------
// Pooling: window sums with one fixed weight per output entry.

/// transpose false: y[o] = sum over o's window of t(w_o) x; true: x[i] += t(w_o) y[o].
/// On position classes: y on `out_cls` (forward: each class computed at its representative;
/// transposed: y's sums over each class), x on `in_cls` (transposed: sums over each class).
void pool_apply(const Layer& ly, const Window& w, const WeightSpec& spec, const double* in,
                double* out, bool transpose, int threads, const Classes* in_cls,
                const Classes* out_cls) {
  const auto h_rep = [&](Index q) {
    return out_cls ? out_cls->h.rep[static_cast<std::size_t>(q)] : q;
  };
  const auto w_rep = [&](Index q) {
    return out_cls ? out_cls->w.rep[static_cast<std::size_t>(q)] : q;
  };
  const auto h_of = [&](Index i) { return in_cls ? in_cls->h.of[static_cast<std::size_t>(i)] : i; };
  const auto w_of = [&](Index i) { return in_cls ? in_cls->w.of[static_cast<std::size_t>(i)] : i; };
  const Index in_w = in_cls ? in_cls->w.size() : w.w.in;
  const Index n_in = in_cls ? in_cls->positions() : w.h.in * w.w.in;
  const Index out_h = out_cls ? out_cls->h.size() : w.h.out;
  const Index out_w = out_cls ? out_cls->w.size() : w.w.out;
  const Index n_out = out_h * out_w;
  for_tasks(w.channels_in, threads, [&](Index c) {
    Index o = 0;
    for (Index qh = 0; qh < out_h; ++qh) {
      const Index oh = h_rep(qh);
      for (Index qw = 0; qw < out_w; ++qw, ++o) {
        const Index ow = w_rep(qw);
        const Index taps = w.h.taps(oh) * w.w.taps(ow);
        if (taps == 0) {
          if (!transpose) {
            out[c * n_out + o] = 0;
          }
          continue;
        }
        const double f = fixed(pool_weight(ly, w, oh, ow), spec).value();  // (1/n)^s: a double
        if (transpose) {
          const double v = f * in[c * n_out + o];
          double* plane = out + c * n_in;
          for (Index kh = w.h.first(oh); kh < w.h.last(oh); ++kh) {
            const Index ih = h_of(w.h.input(oh, kh)) * in_w;
            for (Index kw = w.w.first(ow); kw < w.w.last(ow); ++kw) {
              plane[ih + w_of(w.w.input(ow, kw))] += v;
            }
          }
        } else {
          const double* plane = in + c * n_in;
          double acc = 0;
          for (Index kh = w.h.first(oh); kh < w.h.last(oh); ++kh) {
            const Index ih = h_of(w.h.input(oh, kh)) * in_w;
            for (Index kw = w.w.first(ow); kw < w.w.last(ow); ++kw) {
              acc += plane[ih + w_of(w.w.input(ow, kw))];
            }
          }
          out[c * n_out + o] = f * acc;
        }
      }
    }
  });
}

void group_apply(const Layer& ly, const WeightSpec& spec, const double* in, double* out,
                 Index channels, Index positions, int threads) {
  const Index g = ly.group_size;
  const double f = fixed(1.0, spec).value();
  for_tasks(channels / g, threads, [&](Index group) {
    const Index c0 = group * g;
    for (Index p = 0; p < positions; ++p) {
      double acc = 0;
      for (Index c = c0; c < c0 + g; ++c) {
        acc += in[c * positions + p];
      }
      for (Index c = c0; c < c0 + g; ++c) {
        out[c * positions + p] = f * acc;
      }
    }
  });
}

void lerp_apply(const Layer& ly, const std::vector<Index>& in_shape, const WeightSpec& spec,
                const double* in, double* out, bool transpose, int threads) {
  const Lerp t = lerp_of(ly, in_shape);
  const Index n_in = t.h_in * t.w_in;
  const Index n_out = t.h_out() * t.w_out();
  // The taps of every output position with their transformed weights, once for all channels.
  std::vector<Index> first(static_cast<std::size_t>(n_out) + 1, 0);
  std::vector<std::pair<Index, double>> taps;
  for (Index oh = 0; oh < t.h_out(); ++oh) {
    for (Index ow = 0; ow < t.w_out(); ++ow) {
      t.for_taps(oh, ow, [&](Index i, double w) { taps.emplace_back(i, fixed(w, spec).value()); });
      first[static_cast<std::size_t>(oh * t.w_out() + ow) + 1] = static_cast<Index>(taps.size());
    }
  }
  for_tasks(t.channels, threads, [&](Index c) {
    for (Index o = 0; o < n_out; ++o) {
      const auto b = static_cast<std::size_t>(first[static_cast<std::size_t>(o)]);
      const auto e = static_cast<std::size_t>(first[static_cast<std::size_t>(o) + 1]);
      if (transpose) {
        const double v = in[c * n_out + o];
        for (std::size_t k = b; k < e; ++k) {
          out[c * n_in + taps[k].first] += taps[k].second * v;
        }
      } else {
        double acc = 0;
        for (std::size_t k = b; k < e; ++k) {
          acc += taps[k].second * in[c * n_in + taps[k].first];
        }
        out[c * n_out + o] = acc;
      }
    }
  });
}

/// sum_k f_k t_k over tensors of one size, aligned to the largest exponent, normalised.
TensorPtr combine(const std::vector<std::pair<const Tensor*, FixedWeight>>& terms, Index n,
                  int threads) {
  std::int64_t e = std::numeric_limits<std::int64_t>::min();
  for (const auto& [t, f] : terms) {
    if (f.m != 0) {
      e = std::max(e, t->exp + f.exp);
    }
  }
  TensorPtr y = make_tensor(n);
  if (e == std::numeric_limits<std::int64_t>::min()) {
    return y;
  }
  for (const auto& [t, f] : terms) {
    if (f.m == 0) {
      continue;
    }
    const double g = f.m * down(t->exp + f.exp - e);
    const double* in = t->value.data();
    double* out = y->value.data();
    for_chunks(n, threads, [&](Index i0, Index i1) {
      for (Index i = i0; i < i1; ++i) {
        out[i] += g * in[i];
      }
    });
  }
  y->exp = e;
  normalize(*y, threads);
  return y;
}

TensorPtr concat_tensors(const std::vector<std::pair<const Tensor*, Index>>& parts, Index outer,
                         int threads) {
  std::int64_t e = std::numeric_limits<std::int64_t>::min();
  Index row_out = 0;
  for (const auto& [t, row] : parts) {
    e = std::max(e, t->exp);
    row_out += row;
  }
  TensorPtr y = make_tensor(outer * row_out, e, false);
  Index at = 0;
  for (const auto& [t, row] : parts) {
    const double g = down(t->exp - e);
    for (Index o = 0; o < outer; ++o) {
      const double* src = t->value.data() + o * row;
      double* dst = y->value.data() + o * row_out + at;
      for (Index i = 0; i < row; ++i) {
        dst[i] = g * src[i];
      }
    }
    at += row;
  }
  normalize(*y, threads);
  return y;
}

void scale_channels(const double* f, const double* in, double* out, Index channels, Index positions,
                    int threads) {
  for_tasks(channels, threads, [&](Index c) {
    const double fc = f[c];
    const double* src = in + c * positions;
    double* dst = out + c * positions;
    for (Index p = 0; p < positions; ++p) {
      dst[p] = fc * src[p];
    }
  });
}

}  // namespace pathlift::detail
