// The convolution kernels of the layer dynamic programme (layer_kernels.hpp): im2col + Eigen
// GEMM forward, col2im tasks transposed, and weight products by blocks.

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "src/layer_dp/detail/layer_kernels.hpp"

namespace pathlift::detail {

// --------------------------------------------------------------------------------------------
// Convolution: im2col + GEMM per group.

ConvShape conv_shape(const Window& w) {
  ConvShape c{};
  c.w = &w;
  c.cg_in = w.channels_in / w.groups;
  c.cg_out = w.channels_out / w.groups;
  c.kk = w.h.kernel * w.w.kernel;
  c.rows = c.cg_in * c.kk;
  c.n_in = w.h.in * w.w.in;
  c.n_out = w.h.out * w.w.out;
  c.direct = c.kk == 1 && w.h.stride == 1 && w.w.stride == 1 && w.h.padding == 0 &&
             w.w.padding == 0 && c.n_in == c.n_out;
  return c;
}

namespace {

/// Rows [r0, r1) of group g's column matrix (rows x n_out, row-major) from x, into col (the
/// whole matrix's storage). Each row is one (input channel, tap): per output row, the taps that
/// fall inside the input are copied (a contiguous run at stride 1), the padding written as 0.
void im2col_rows(const ConvShape& c, const double* x, Index g, Index r0, Index r1, double* col) {
  const Window& w = *c.w;
  const Index sw = w.w.stride;
  for (Index r = r0; r < r1; ++r) {
    const Index ci = r / c.kk;
    const Index i = (r / w.w.kernel) % w.h.kernel;
    const Index j = r % w.w.kernel;
    const double* plane = x + (g * c.cg_in + ci) * c.n_in;
    double* out = col + r * c.n_out;
    // Output columns ow whose input column ow * sw - padding + j * dilation lies in [0, in).
    const Index shift = j * w.w.dilation - w.w.padding;
    Index lo = 0;
    while (lo < w.w.out && lo * sw + shift < 0) {
      ++lo;
    }
    Index hi = w.w.out;
    while (hi > lo && (hi - 1) * sw + shift >= w.w.in) {
      --hi;
    }
    for (Index oh = 0; oh < w.h.out; ++oh) {
      double* row = out + oh * w.w.out;
      const Index ih = oh * w.h.stride - w.h.padding + i * w.h.dilation;
      if (ih < 0 || ih >= w.h.in || lo == hi) {
        std::fill(row, row + w.w.out, 0.0);
        continue;
      }
      std::fill(row, row + lo, 0.0);
      std::fill(row + hi, row + w.w.out, 0.0);
      const double* src = plane + ih * w.w.in + lo * sw + shift;
      if (sw == 1) {
        std::copy(src, src + (hi - lo), row + lo);
      } else {
        for (Index ow = lo; ow < hi; ++ow) {
          row[ow] = src[(ow - lo) * sw];
        }
      }
    }
  }
}

/// Group g's column matrix (c.rows x c.n_out, row-major) built in parallel (each task its own
/// rows) into a buffer of the calling thread, reused across calls (within the memory the plan
/// accounted for: the largest column matrix). The direct case is the input itself (row stride
/// n_in).
const double* column_matrix(const ConvShape& c, const double* x, Index g, int threads,
                            LayerBuffer slot = LayerBuffer::columns) {
  if (c.direct) {
    return x + g * c.cg_in * c.n_in;
  }
  double* col = layer_buffer(slot, static_cast<std::size_t>(c.rows * c.n_out));
  constexpr Index k_im2col_rows = 16;
  for_tasks(ceil_div(c.rows, k_im2col_rows), threads, [&](Index t) {
    im2col_rows(c, x, g, t * k_im2col_rows, std::min(c.rows, (t + 1) * k_im2col_rows), col);
  });
  return col;
}

}  // namespace

void forward_gemm(const ConvShape& c, const double* wm, Index g, const double* cm, Index ld,
                  Index n, double* y, int threads) {
  for_tiles(c.cg_out, n, k_rows, k_cols, threads, [&](Index r0, Index r1, Index n0, Index n1) {
    const ConstMatMap wg(wm + (g * c.cg_out + r0) * c.rows, r1 - r0, c.rows,
                         Eigen::OuterStride<>(c.rows));
    MatMap out(y + (g * c.cg_out + r0) * n + n0, r1 - r0, n1 - n0, Eigen::OuterStride<>(n));
    const ConstMatMap xin(cm + n0, c.rows, n1 - n0, Eigen::OuterStride<>(ld));
    out.noalias() = wg * xin;
  });
}

/// y = W x per group (y: channels_out x n_out): the column matrix once per group, then GEMM
/// blocks of k_rows x k_cols.
void conv_forward(const ConvShape& c, const double* wm, const double* x, double* y, int threads) {
  const Index stride = c.direct ? c.n_in : c.n_out;
  for (Index g = 0; g < c.w->groups; ++g) {
    forward_gemm(c, wm, g, column_matrix(c, x, g, threads), stride, c.n_out, y, threads);
  }
}

Index col2im_block_rows(const ConvShape& c) {
  // Each task's GEMM packs all of y (cg_out x n_out): its rows are what that packing buys. About
  // 64 rows for large outputs, up to 256 where n_out is small (the late layers), within 32 Ki
  // entries of scratch.
  const Index target = std::clamp<Index>(Index{1 << 15} / std::max<Index>(1, c.n_out), 64, 256);
  return std::min(c.cg_in, std::max<Index>(1, target / c.kk)) * c.kk;
}

namespace {

/// y (channels x n_out) at each group's representative: channels x groups.rep.size().
std::vector<double> at_representatives(const double* y, Index channels, Index n_out,
                                       const PositionGroups& groups) {
  const auto k = static_cast<Index>(groups.rep.size());
  std::vector<double> out(static_cast<std::size_t>(channels * k));
  for (Index o = 0; o < channels; ++o) {
    for (Index q = 0; q < k; ++q) {
      out[static_cast<std::size_t>(o * k + q)] =
          y[o * n_out + groups.rep[static_cast<std::size_t>(q)]];
    }
  }
  return out;
}

}  // namespace

void conv_adjoint(const ConvShape& c, const double* wm, const double* y, double* xg, int threads,
                  const PositionGroups* groups) {
  const Window& w = *c.w;
  constexpr Index k_conv_trows = 512;
  // With `groups` (y equal on each): W^T y on one column per group, each output position
  // reading its group's column as it is scattered.
  std::vector<double> compact;
  const Index n_cols = groups != nullptr ? static_cast<Index>(groups->rep.size()) : c.n_out;
  if (groups != nullptr) {
    compact = at_representatives(y, c.w->channels_out, c.n_out, *groups);
  }
  const double* ys = groups != nullptr ? compact.data() : y;
  const auto column = [&](Index n) {
    return groups != nullptr ? groups->cls[static_cast<std::size_t>(n)] : n;
  };
  // col2im tasks: a few input channels each, whose rows of W^T y (every tap, every output
  // position) are made in the task's scratch and scattered into those channels only (no two
  // tasks write one entry, and no column matrix goes through memory).
  const Index chunk = col2im_block_rows(c) / c.kk;
  for (Index g = 0; g < w.groups; ++g) {
    const ConstMatMap wg(wm + g * c.cg_out * c.rows, c.cg_out, c.rows,
                         Eigen::OuterStride<>(c.rows));
    const double* yg = ys + g * c.cg_out * n_cols;
    const ConstMatMap yall(yg, c.cg_out, n_cols, Eigen::OuterStride<>(n_cols));
    if (c.direct && groups != nullptr) {
      // The input is its own column matrix: each position takes its group's column.
      double* const col_data = xg + g * c.cg_in * c.n_in;
      for_tasks(ceil_div(c.rows, k_conv_trows), threads, [&](Index task) {
        const Index r0 = task * k_conv_trows;
        const Index r1 = std::min(c.rows, r0 + k_conv_trows);
        double* part = scratch(static_cast<std::size_t>((r1 - r0) * n_cols));
        MatMap out(part, r1 - r0, n_cols, Eigen::OuterStride<>(n_cols));
        out.noalias() = wg.middleCols(r0, r1 - r0).transpose() * yall;
        for (Index r = r0; r < r1; ++r) {
          for (Index n = 0; n < c.n_in; ++n) {
            col_data[r * c.n_in + n] = part[(r - r0) * n_cols + column(n)];
          }
        }
      });
      continue;
    }
    if (c.direct) {
      // The input is its own column matrix: W^T y straight into the input's gradient.
      double* const col_data = xg + g * c.cg_in * c.n_in;
      for_tiles(c.rows, c.n_out, k_conv_trows, k_cols, threads,
                [&](Index r0, Index r1, Index n0, Index n1) {
                  MatMap out(col_data + r0 * c.n_in + n0, r1 - r0, n1 - n0,
                             Eigen::OuterStride<>(c.n_in));
                  const ConstMatMap yb(yg + n0, c.cg_out, n1 - n0, Eigen::OuterStride<>(c.n_out));
                  out.noalias() = wg.middleCols(r0, r1 - r0).transpose() * yb;
                });
      continue;
    }
    for_tasks(ceil_div(c.cg_in, chunk), threads, [&](Index task) {
      const Index ci0 = task * chunk;
      const Index ci1 = std::min(c.cg_in, ci0 + chunk);
      const Index r0 = ci0 * c.kk;
      double* col = scratch(static_cast<std::size_t>((ci1 - ci0) * c.kk * n_cols));
      MatMap out(col, (ci1 - ci0) * c.kk, n_cols, Eigen::OuterStride<>(n_cols));
      out.noalias() = wg.middleCols(r0, (ci1 - ci0) * c.kk).transpose() * yall;
      for (Index ci = ci0; ci < ci1; ++ci) {
        double* plane = xg + (g * c.cg_in + ci) * c.n_in;
        for (Index t = 0; t < c.kk; ++t) {
          const Index i = t / w.w.kernel;
          const Index j = t % w.w.kernel;
          const double* row = col + ((ci - ci0) * c.kk + t) * n_cols;
          Index n = 0;
          for (Index oh = 0; oh < w.h.out; ++oh) {
            const Index ih = oh * w.h.stride - w.h.padding + i * w.h.dilation;
            if (ih < 0 || ih >= w.h.in) {
              n += w.w.out;
              continue;
            }
            for (Index ow = 0; ow < w.w.out; ++ow, ++n) {
              const Index iw = ow * w.w.stride - w.w.padding + j * w.w.dilation;
              if (iw >= 0 && iw < w.w.in) {
                plane[ih * w.w.in + iw] += row[column(n)];
              }
            }
          }
        }
      }
    });
  }
}

void weight_gemm(const ConvShape& c, Index g, std::span<const GemmTerm> terms,
                 const ProductSink& sink, int threads) {
  // Tiles of 32 x 512 weights (128 KB, in the core's cache): the sink reads and writes each
  // parameter row in runs of 4 KB (K v's merge, memory-bound: 64 x 256 tiles cost layer4's
  // weight products 5-10% more).
  constexpr Index k_grows = 32;
  constexpr Index k_gcols = 512;
  for_tiles(c.cg_out, c.rows, k_grows, k_gcols, threads,
            [&](Index o0, Index o1, Index r0, Index r1) {
              double* block = scratch(static_cast<std::size_t>((o1 - o0) * (r1 - r0)));
              MatMap out(block, o1 - o0, r1 - r0, Eigen::OuterStride<>(r1 - r0));
              for (std::size_t t = 0; t < terms.size(); ++t) {
                const GemmTerm& a = terms[t];
                const ConstMatMap yb(a.y + (g * c.cg_out + o0) * a.n, o1 - o0, a.n,
                                     Eigen::OuterStride<>(a.n));
                const ConstMatMap xb(a.cm + r0 * a.ld, r1 - r0, a.n, Eigen::OuterStride<>(a.ld));
                if (t == 0 && a.scale == 1) {
                  out.noalias() = yb * xb.transpose();
                } else if (t == 0) {
                  out.noalias() = a.scale * (yb * xb.transpose());
                } else {
                  out.noalias() += a.scale * (yb * xb.transpose());
                }
              }
              sink(g * c.cg_out + o0, g * c.cg_out + o1, r0, r1, block, r1 - r0);
            });
}

/// G (channels_out x rows per group, the weight layout) = the sum of scale y col(x)^T.
void conv_weight_products(const ConvShape& c, std::span<const ProductTerm> terms,
                          const ProductSink& sink, int threads, const PositionGroups* groups) {
  if (terms.size() > 2) {
    throw std::logic_error("conv_weight_products: at most two terms (two column buffers)");
  }
  const Index ld = c.direct ? c.n_in : c.n_out;
  const LayerBuffer slots[2] = {LayerBuffer::columns, LayerBuffer::columns_second};
  // With `groups` (y equal on each): y at the representatives against the column matrix summed
  // over each group's positions.
  const Index n_cols = groups != nullptr ? static_cast<Index>(groups->rep.size()) : c.n_out;
  std::vector<std::vector<double>> ys(terms.size());
  std::vector<std::vector<double>> summed(terms.size());
  for (std::size_t t = 0; t < terms.size() && groups != nullptr; ++t) {
    ys[t] = at_representatives(terms[t].y, c.w->channels_out, c.n_out, *groups);
    summed[t].resize(static_cast<std::size_t>(c.rows * n_cols));
  }
  for (Index g = 0; g < c.w->groups; ++g) {
    std::vector<GemmTerm> gemm;
    for (std::size_t t = 0; t < terms.size(); ++t) {
      const double* col = column_matrix(c, terms[t].x, g, threads, slots[t]);
      if (groups == nullptr) {
        gemm.push_back({col, ld, c.n_out, terms[t].y, terms[t].scale});
        continue;
      }
      double* sums = summed[t].data();
      for_chunks(c.rows, threads, [&](Index r0, Index r1) {
        std::fill(sums + r0 * n_cols, sums + r1 * n_cols, 0.0);
        for (Index r = r0; r < r1; ++r) {
          for (Index n = 0; n < c.n_out; ++n) {
            sums[r * n_cols + groups->cls[static_cast<std::size_t>(n)]] += col[r * ld + n];
          }
        }
      });
      gemm.push_back({sums, n_cols, n_cols, ys[t].data(), terms[t].scale});
    }
    weight_gemm(c, g, gemm, sink, threads);
  }
}

}  // namespace pathlift::detail
