// edge_products() of layer_dp_engine.hpp: per-parameter sums over the edges of a parameter
// layer, from the forward sums of its input and the backward sums of its output.

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <stdexcept>
#include <vector>

#include "src/dp/dp_scaled.hpp"
#include "src/layer_dp/detail/layer_classes.hpp"
#include "src/layer_dp/detail/layer_dp_engine.hpp"
#include "src/layer_dp/detail/layer_kernels.hpp"

namespace pathlift::detail {

void edge_products(const LayerPlan& plan, std::size_t l, const Tensor& x, const Tensor& y,
                   double bias_value, const double* factor, double* out_m, std::int64_t* out_k,
                   const LayerClasses* classes) {
  const EdgeTerm term{&x, &y, bias_value};
  edge_products(plan, l, std::span<const EdgeTerm>(&term, 1), factor, out_m, out_k, classes);
}

void edge_products(const LayerPlan& plan, std::size_t l, std::span<const EdgeTerm> terms,
                   const double* factor, double* out_m, std::int64_t* out_k,
                   const LayerClasses* classes, const MergeStart* start) {
  if (start != nullptr && (out_k != nullptr || form_of(plan.layer(l).kind) != Form::window)) {
    throw std::logic_error("edge_products: a merge start is for a convolution's double sums");
  }
  const Layer& ly = plan.layer(l);
  const int threads = plan.threads();
  // x on its classes: kept for a convolution or batch norm computed on classes (y then holds
  // its sums over each output class), else expanded.
  const Classes* in_classes = nullptr;
  const Classes* out_classes = nullptr;
  if (classes != nullptr && (*classes)[plan.input(l)]) {
    if ((form_of(ly.kind) == Form::window || form_of(ly.kind) == Form::channel_affine) &&
        (*classes)[l]) {
      in_classes = &*(*classes)[plan.input(l)];
      out_classes = &*(*classes)[l];
    } else {
      std::vector<TensorPtr> full;
      std::vector<EdgeTerm> expanded;
      for (const EdgeTerm& t : terms) {
        full.push_back(regather(*t.x, plan.shape(plan.input(l))[0], *(*classes)[plan.input(l)],
                                nullptr, threads));
        expanded.push_back({full.back().get(), t.y, t.bias_value});
      }
      edge_products(plan, l, expanded, factor, out_m, out_k, nullptr, start);
      return;
    }
  }
  // A convolution's terms share its GEMM blocks and one merge, aligned to the largest
  // exponent (unless they lie too far apart for one double's range); other kinds merge each
  // term in turn.
  std::int64_t e = std::numeric_limits<std::int64_t>::min();
  for (const EdgeTerm& t : terms) {
    e = std::max(e, t.x->exp + t.y->exp);
  }
  bool one_merge = form_of(ly.kind) == Form::window && terms.size() <= 2;
  for (const EdgeTerm& t : terms) {
    one_merge = one_merge && e - (t.x->exp + t.y->exp) <= 900;
  }
  if (terms.size() > 1 && !one_merge) {
    for (const EdgeTerm& t : terms) {
      edge_products(plan, l, std::span<const EdgeTerm>(&t, 1), factor, out_m, out_k, classes,
                    &t == &terms.front() ? start : nullptr);
    }
    return;
  }
  const Tensor& x = *terms.front().x;
  const Tensor& y = *terms.front().y;
  // values[0, count) into the sums of parameters offset, offset + 1, ... (one thread); with
  // `start`, the sums are first set to v_k ab_k (a convolution's one merge, MergeStart).
  const auto merge_range = [&](Index offset, const double* values, Index count, std::int64_t exp,
                               const MergeStart* from = nullptr) {
    if (out_k == nullptr && exp > -1000 && exp < 1000) {
      // Doubles: one scale for the block (exact), loops the compiler vectorises.
      const double scale = std::ldexp(1.0, static_cast<int>(exp));
      const double* __restrict f = factor != nullptr ? factor + offset : nullptr;
      // values[i] * f[i] out of the normal range (a huge or tiny factor) while the term itself
      // may fit: the exact split of the slow loop below, for the whole range (rare).
      int outside = 0;
      if (f != nullptr) {
        constexpr double lo = std::numeric_limits<double>::min();
        constexpr double hi = std::numeric_limits<double>::max();
        for (Index i = 0; i < count; ++i) {
          const double p = std::fabs(values[i] * f[i]);
          outside |= static_cast<int>(p > hi) |
                     (static_cast<int>(p < lo) & static_cast<int>(values[i] != 0) &
                      static_cast<int>(f[i] != 0));
        }
      }
      if (outside == 0) {
        double* __restrict o = out_m + offset;
        const double* __restrict sv = from != nullptr ? from->v + offset : nullptr;
        const double* __restrict sab = from != nullptr ? from->ab + offset : nullptr;
        if (f == nullptr && sv == nullptr) {
          for (Index i = 0; i < count; ++i) {
            o[i] += values[i] * scale;
          }
        } else if (f == nullptr) {
          for (Index i = 0; i < count; ++i) {
            o[i] = sv[i] * sab[i] + values[i] * scale;
          }
        } else if (sv == nullptr) {
          for (Index i = 0; i < count; ++i) {
            o[i] += values[i] * f[i] * scale;
          }
        } else {
          for (Index i = 0; i < count; ++i) {
            o[i] = sv[i] * sab[i] + values[i] * f[i] * scale;
          }
        }
        return;
      }
    }
    if (from != nullptr) {
      for (Index i = 0; i < count; ++i) {
        out_m[offset + i] = from->v[offset + i] * from->ab[offset + i];
      }
    }
    for (Index i = 0; i < count; ++i) {
      if (values[i] == 0) {
        continue;
      }
      if (out_k == nullptr && factor == nullptr) {
        out_m[offset + i] += dp_ldexp(values[i], exp);
        continue;
      }
      if (factor == nullptr) {
        dp_merge(out_m[offset + i], out_k[offset + i], values[i], exp);
        continue;
      }
      const double f = factor[offset + i];
      if (f != 0) {
        int fe = 0;
        const double fm = std::frexp(f, &fe);
        if (out_k == nullptr) {
          out_m[offset + i] += dp_ldexp(values[i] * fm, exp + fe);
        } else {
          dp_merge(out_m[offset + i], out_k[offset + i], values[i] * fm, exp + fe);
        }
      }
    }
  };
  // A block of a convolution's products, row by row into the sums (in the GEMM's task).
  const Index rows = is_convolution(ly.kind) ? conv_shape(plan.window(l)).rows : 0;
  const ProductSink merge_rows = [&](Index o0, Index o1, Index r0, Index r1, const double* block,
                                     Index ld) {
    for (Index o = o0; o < o1; ++o) {
      // the sums start from v_k ab_k, here where they are in cache
      merge_range(ly.weight_offset + o * rows + r0, block + (o - o0) * ld, r1 - r0, e, start);
    }
  };
  const auto merge_block = [&](Index offset, const double* values, Index count, std::int64_t exp) {
    for_chunks(count, threads,
               [&](Index i0, Index i1) { merge_range(offset + i0, values + i0, i1 - i0, exp); });
  };
  // The bias: bias_value * sum over the positions of each channel's y, term by term.
  const auto bias = [&](Index channels, Index positions) {
    for (const EdgeTerm& t : terms) {
      if (ly.bias_offset < 0 || t.bias_value == 0) {
        continue;
      }
      std::vector<double> sums(static_cast<std::size_t>(channels));
      for_tasks(channels, threads, [&](Index c) {
        double acc = 0;
        const double* row = t.y->value.data() + c * positions;
        for (Index p = 0; p < positions; ++p) {
          acc += row[p];
        }
        sums[static_cast<std::size_t>(c)] = acc * t.bias_value;
      });
      merge_block(ly.bias_offset, sums.data(), channels, t.y->exp);
    }
  };
  visit_param_kind(ly, "edge_products", [&]<class K>(K) {
    return K::map(ParamMaps<void>{
        .dense =
            [&] {
              // y[o] x[j], made and merged by pieces of a row (no out x f buffer: a linear layer
              // may hold most of theta).
              const Index out = plan.entries(l);
              const Index f = plan.entries(plan.input(l));
              const Index pieces = ceil_div(f, k_chunk);
              for_tasks(out * pieces, threads, [&](Index t) {
                const Index o = t / pieces;
                const Index j0 = (t % pieces) * k_chunk;
                const Index j1 = std::min(f, j0 + k_chunk);
                const double yo = y.value[static_cast<std::size_t>(o)];
                double* piece = scratch(static_cast<std::size_t>(k_chunk));
                for (Index j = j0; j < j1; ++j) {
                  piece[j - j0] = yo * x.value[static_cast<std::size_t>(j)];
                }
                merge_range(ly.weight_offset + o * f + j0, piece, j1 - j0, e);
              });
              bias(out, 1);
            },
        .window =
            [&] {
              const ConvShape c = conv_shape(plan.window(l));
              std::vector<ProductTerm> products;
              for (const EdgeTerm& t : terms) {
                products.push_back({t.x->value.data(), t.y->value.data(),
                                    std::ldexp(1.0, static_cast<int>(t.x->exp + t.y->exp - e))});
              }
              if (out_classes != nullptr) {
                conv_weight_products_classes(c, products, *in_classes, *out_classes, merge_rows,
                                             threads);
              } else {
                conv_weight_products(c, products, merge_rows, threads, plan.backward_groups(l));
              }
              bias(c.w->channels_out, out_classes != nullptr ? out_classes->positions() : c.n_out);
            },
        .adjoint_window =
            [&] {
              // The adjoint convolution's edges: its input is this layer's output, its output this
              // layer's input.
              const ConvShape c = conv_shape(plan.window(l));
              const ProductTerm product{y.value.data(), x.value.data()};
              conv_weight_products(c, std::span<const ProductTerm>(&product, 1), merge_rows,
                                   threads);
              bias(c.w->channels_in, c.n_in);
            },
        .channel_affine =
            [&] {
              const Index channels = plan.shape(l)[0];
              // On classes: x per class against y summed over the class.
              const double* yv = y.value.data();
              const Index n =
                  out_classes != nullptr ? out_classes->positions() : plan.entries(l) / channels;
              Buffer<double> g(static_cast<std::size_t>(channels));
              for_tasks(channels, threads, [&](Index c) {
                double acc = 0;
                const double* xr = x.value.data() + c * n;
                const double* yr = yv + c * n;
                for (Index p = 0; p < n; ++p) {
                  acc += xr[p] * yr[p];
                }
                g[static_cast<std::size_t>(c)] = acc;
              });
              merge_block(ly.weight_offset, g.data(), channels, e);
              bias(channels, n);
            }});
  });
}

}  // namespace pathlift::detail
