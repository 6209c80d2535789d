// Position classes of a forward pass from constant sources (layer_classes.hpp).

#include "src/layer_dp/detail/layer_classes.hpp"

#include <fmt/format.h>

#include <map>
#include <stdexcept>

#include "src/layer_dp/detail/layer_kernels.hpp"

namespace pathlift::detail {

namespace {

/// Classes of positions [0, n) by a signature: equal signatures, one class (numbered in order
/// of first position).
template <class Signature>
AxisClasses classes_by(Index n, const Signature& signature) {
  AxisClasses a;
  std::map<std::vector<Index>, Index> seen;
  for (Index p = 0; p < n; ++p) {
    const auto [it, fresh] = seen.try_emplace(signature(p), a.size());
    if (fresh) {
      a.rep.push_back(p);
    }
    a.of.push_back(it->second);
  }
  return a;
}

/// One class of n positions.
AxisClasses one_class(Index n) {
  return classes_by(n, [](Index) { return std::vector<Index>{}; });
}

/// The output classes of a window axis: output o is described by its taps inside the input,
/// the class each reads and (average pools) its divisor's padded window.
AxisClasses window_classes(const Axis& axis, const AxisClasses& in) {
  return classes_by(axis.out, [&](Index o) {
    std::vector<Index> s{axis.first(o), axis.last(o), axis.adaptive ? 0 : axis.padded_taps(o)};
    for (Index k = axis.first(o); k < axis.last(o); ++k) {
      s.push_back(in.of[static_cast<std::size_t>(axis.input(o, k))]);
    }
    return s;
  });
}

/// The coarsest classes refining each of `parts` (the classes of an add's inputs).
AxisClasses common_classes(const std::vector<const AxisClasses*>& parts) {
  return classes_by(static_cast<Index>(parts.front()->of.size()), [&](Index p) {
    std::vector<Index> s;
    for (const AxisClasses* a : parts) {
      s.push_back(a->of[static_cast<std::size_t>(p)]);
    }
    return s;
  });
}

/// Classes that save nothing: every position its own class.
bool all_distinct(const Classes& c) {
  return c.positions() == c.full_positions();
}

}  // namespace

LayerClasses forward_classes(const LayerPlan& plan) {
  LayerClasses out(plan.size());
  const std::vector<Index>& in_shape = plan.shape(0);
  if (in_shape.size() == 2 || in_shape.size() == 3) {
    Classes c;
    c.h = one_class(in_shape.size() == 3 ? in_shape[1] : 1);
    c.w = one_class(in_shape.back());
    out[0] = std::move(c);
  }
  for (std::size_t l = 1; l < plan.size(); ++l) {
    const Layer& ly = plan.layer(l);
    const std::optional<Classes>& first = out[plan.input(l)];
    std::optional<Classes> c;
    // On full tensors (no classes): the input, dense maps, adjoint windows, reshapes, picks,
    // interpolations and concats along a spatial axis.
    const auto none = [](auto...) {};
    const auto same = [&] { c = first; };  // entry-wise, or mixing channels at each position
    const auto window = [&](auto...) {
      if (first && plan.entries(l) > 0) {
        const Window& w = plan.window(l);
        c = Classes{window_classes(w.h, first->h), window_classes(w.w, first->w)};
      }
    };
    const auto common = [&](auto...) {  // the operands' common refinement
      std::vector<const AxisClasses*> hs;
      std::vector<const AxisClasses*> ws;
      for (std::size_t k = 0; k < ly.inputs.size(); ++k) {
        const std::optional<Classes>& in = out[plan.input(l, k)];
        if (!in) {
          return;
        }
        hs.push_back(&in->h);
        ws.push_back(&in->w);
      }
      c = Classes{common_classes(hs), common_classes(ws)};
    };
    visit_kind(ly.kind, [&]<class K>(K) {
      K::map(Maps<void>{.input = none,
                        .dense = none,
                        .window = window,
                        .adjoint_window = none,
                        .channel_affine = same,
                        .pool = window,
                        .entrywise = same,
                        .scaled = same,
                        .sum = common,
                        .concat =
                            [&] {
                              if (ly.axis == 0) {  // along the channels
                                common();
                              }
                            },
                        .reshape = none,
                        .pick = none,
                        .group = same,
                        .lerp = none});
    });
    if (c && !all_distinct(*c)) {
      out[l] = std::move(c);
    }
  }
  return out;
}

namespace {

/// The input classes of a window axis in a backward pass: input position p is described by the
/// class of the output that reads it at each tap (-1 where none does).
AxisClasses read_by_classes(const Axis& axis, const AxisClasses& out) {
  std::vector<std::vector<Index>> sig(
      static_cast<std::size_t>(axis.in),
      std::vector<Index>(static_cast<std::size_t>(axis.kernel), -1));
  for (Index o = 0; o < axis.out; ++o) {
    for (Index k = axis.first(o); k < axis.last(o); ++k) {
      sig[static_cast<std::size_t>(axis.input(o, k))][static_cast<std::size_t>(k)] =
          out.of[static_cast<std::size_t>(o)];
    }
  }
  return classes_by(axis.in, [&](Index p) { return sig[static_cast<std::size_t>(p)]; });
}

/// Whether layer c averages all of its input's positions with one weight into one output
/// position per channel (a global average pool).
bool averages_everything(const LayerPlan& plan, std::size_t c) {
  const Layer& ly = plan.layer(c);
  if (form_of(ly.kind) != Form::pool || makes_max_nodes(ly.kind)) {  // not a mean
    return false;
  }
  const Window& w = plan.window(c);
  for (const Axis* a : {&w.h, &w.w}) {
    if (a->out != 1 || (!a->adaptive && (a->padding != 0 || a->kernel != a->in))) {
      return false;
    }
  }
  return true;
}

}  // namespace

LayerClasses backward_classes(const LayerPlan& plan) {
  const std::size_t n = plan.size();
  std::vector<std::vector<std::size_t>> consumers(n);
  for (std::size_t l = 1; l < n; ++l) {
    for (std::size_t k = 0; k < plan.layer(l).inputs.size(); ++k) {
      consumers[plan.input(l, k)].push_back(l);
    }
  }
  std::vector<char> output(n, 0);
  for (const Index o : plan.graph().outputs) {
    output[static_cast<std::size_t>(o)] = 1;
  }
  LayerClasses out(n);
  for (std::size_t l = n; l-- > 1;) {
    const std::vector<Index>& shape = plan.shape(l);
    if ((shape.size() != 2 && shape.size() != 3) || output[l] != 0 || consumers[l].empty() ||
        plan.entries(l) == 0) {
      continue;
    }
    std::vector<Classes> induced;  // by each consumer
    for (const std::size_t c : consumers[l]) {
      const LayerKind kind = plan.layer(c).kind;
      if (averages_everything(plan, c)) {
        induced.push_back({one_class(shape.size() == 3 ? shape[1] : 1), one_class(shape.back())});
      } else if (out[c] &&
                 (form_of(kind) == Form::entrywise || form_of(kind) == Form::channel_affine ||
                  form_of(kind) == Form::scaled || form_of(kind) == Form::sum ||
                  form_of(kind) == Form::group)) {
        induced.push_back(*out[c]);
      } else if (out[c] && form_of(kind) == Form::window) {
        const Window& w = plan.window(c);
        induced.push_back({read_by_classes(w.h, out[c]->h), read_by_classes(w.w, out[c]->w)});
      } else {
        induced.clear();
        break;
      }
    }
    if (induced.empty()) {
      continue;
    }
    std::vector<const AxisClasses*> hs;
    std::vector<const AxisClasses*> ws;
    for (const Classes& c : induced) {
      hs.push_back(&c.h);
      ws.push_back(&c.w);
    }
    out[l] = Classes{common_classes(hs), common_classes(ws)};
  }
  return out;
}

TensorPtr regather(const Tensor& x, Index channels, const Classes& from, const Classes* to,
                   int threads) {
  const auto rows = static_cast<Index>(to ? to->h.size() : static_cast<Index>(from.h.of.size()));
  const auto cols = static_cast<Index>(to ? to->w.size() : static_cast<Index>(from.w.of.size()));
  const auto h_rep = [&](Index q) { return to ? to->h.rep[static_cast<std::size_t>(q)] : q; };
  const auto w_rep = [&](Index q) { return to ? to->w.rep[static_cast<std::size_t>(q)] : q; };
  TensorPtr y = make_tensor(channels * rows * cols, x.exp, false);
  const Index n_from = from.positions();
  for_tasks(channels, threads, [&](Index c) {
    const double* src = x.value.data() + c * n_from;
    double* dst = y->value.data() + c * rows * cols;
    for (Index qh = 0; qh < rows; ++qh) {
      const Index a = from.h.of[static_cast<std::size_t>(h_rep(qh))] * from.w.size();
      for (Index qw = 0; qw < cols; ++qw) {
        dst[qh * cols + qw] = src[a + from.w.of[static_cast<std::size_t>(w_rep(qw))]];
      }
    }
  });
  return y;
}

std::vector<TensorPtr> expand_outputs(const LayerPlan& plan, std::vector<TensorPtr> sums,
                                      const LayerClasses& classes) {
  for (const Index o : plan.graph().outputs) {
    const auto l = static_cast<std::size_t>(o);
    if (classes[l] && sums[l]) {
      sums[l] = regather(*sums[l], plan.shape(l)[0], *classes[l], nullptr, plan.threads());
    }
  }
  return sums;
}

TensorPtr coarsen(const TensorPtr& y, Index channels, const Classes& fine, const Classes& coarse,
                  int threads) {
  const Index n_fine = fine.positions();
  const Index n = coarse.positions();
  if (n == n_fine) {  // a refinement with as many classes (per axis, numbered alike): the same
    return y;
  }
  TensorPtr out = make_tensor(channels * n, y->exp, true);
  for_tasks(channels, threads, [&](Index ch) {
    const double* src = y->value.data() + ch * n_fine;
    double* dst = out->value.data() + ch * n;
    for (Index qh = 0; qh < fine.h.size(); ++qh) {
      double* row =
          dst + coarse.h.of[static_cast<std::size_t>(fine.h.rep[static_cast<std::size_t>(qh)])] *
                    coarse.w.size();
      for (Index qw = 0; qw < fine.w.size(); ++qw) {
        row[coarse.w.of[static_cast<std::size_t>(fine.w.rep[static_cast<std::size_t>(qw)])]] +=
            src[qh * fine.w.size() + qw];
      }
    }
  });
  normalize(*out, threads);
  return out;
}

TensorPtr class_sums(const Tensor& y, Index channels, const Classes& c, int threads) {
  const auto rows = static_cast<Index>(c.h.of.size());
  const auto cols = static_cast<Index>(c.w.of.size());
  const Index n = c.positions();
  TensorPtr out = make_tensor(channels * n, y.exp, true);
  for_tasks(channels, threads, [&](Index ch) {
    const double* src = y.value.data() + ch * rows * cols;
    double* dst = out->value.data() + ch * n;
    for (Index i = 0; i < rows; ++i) {
      double* row = dst + c.h.of[static_cast<std::size_t>(i)] * c.w.size();
      for (Index j = 0; j < cols; ++j) {
        row[c.w.of[static_cast<std::size_t>(j)]] += src[i * cols + j];
      }
    }
  });
  return out;
}

namespace {

/// f(q, k) for each output class q (numbered row-major over out's classes) at tap t of the
/// window: k the input class the tap reads at q's representative (row-major over in's
/// classes), -1 where the tap falls in the padding. Every position of q reads that class: the
/// map behind the column matrix on classes and its transpose.
template <class F>
void for_class_taps(const Window& w, const Classes& in, const Classes& out, Index t, const F& f) {
  const Index i = t / w.w.kernel;
  const Index j = t % w.w.kernel;
  const Index rw = out.w.size();
  for (Index qh = 0; qh < out.h.size(); ++qh) {
    const Index oh = out.h.rep[static_cast<std::size_t>(qh)];
    const bool inside_h = i >= w.h.first(oh) && i < w.h.last(oh);
    const Index ah =
        inside_h ? in.h.of[static_cast<std::size_t>(w.h.input(oh, i))] * in.w.size() : 0;
    for (Index qw = 0; qw < rw; ++qw) {
      const Index ow = out.w.rep[static_cast<std::size_t>(qw)];
      const bool inside = inside_h && j >= w.w.first(ow) && j < w.w.last(ow);
      f(qh * rw + qw, inside ? ah + in.w.of[static_cast<std::size_t>(w.w.input(ow, j))] : -1);
    }
  }
}

/// Group g's column matrix on position classes (rows x out.positions(), row-major): one column
/// per output class, computed at its representative position, whose taps read the input's
/// classes; into the calling thread's column buffer.
const double* classes_columns(const ConvShape& c, const double* x, Index g, const Classes& in,
                              const Classes& out, int threads,
                              LayerBuffer slot = LayerBuffer::columns) {
  const Index n = out.positions();
  const Index n_in = in.positions();
  double* col = layer_buffer(slot, static_cast<std::size_t>(c.rows * n));
  for_tasks(c.cg_in, threads, [&](Index ci) {
    const double* plane = x + (g * c.cg_in + ci) * n_in;
    for (Index t = 0; t < c.kk; ++t) {
      double* row = col + (ci * c.kk + t) * n;
      for_class_taps(*c.w, in, out, t, [&](Index q, Index k) { row[q] = k >= 0 ? plane[k] : 0.0; });
    }
  });
  return col;
}

}  // namespace

/// The same on position classes.
void conv_forward_classes(const ConvShape& c, const double* wm, const double* x, const Classes& in,
                          const Classes& out, double* y, int threads) {
  const Index n = out.positions();
  for (Index g = 0; g < c.w->groups; ++g) {
    forward_gemm(c, wm, g, classes_columns(c, x, g, in, out, threads), n, n, y, threads);
  }
}

void conv_transpose_classes(const ConvShape& c, const double* wm, const double* y_sums,
                            const Classes& in, const Classes& out, double* x_sums, int threads) {
  const Window& w = *c.w;
  const Index n = out.positions();
  const Index n_in = in.positions();
  // Tasks of a few input channels, as conv_adjoint: their rows of W^T y_sums made in the
  // task's scratch, each entry added to the input class its tap reads (the transpose of
  // classes_columns).
  const Index chunk = col2im_block_rows(c) / c.kk;
  for (Index g = 0; g < w.groups; ++g) {
    const ConstMatMap wg(wm + g * c.cg_out * c.rows, c.cg_out, c.rows,
                         Eigen::OuterStride<>(c.rows));
    const ConstMatMap yall(y_sums + g * c.cg_out * n, c.cg_out, n, Eigen::OuterStride<>(n));
    for_tasks(ceil_div(c.cg_in, chunk), threads, [&](Index task) {
      const Index ci0 = task * chunk;
      const Index ci1 = std::min(c.cg_in, ci0 + chunk);
      double* col = scratch(static_cast<std::size_t>((ci1 - ci0) * c.kk * n));
      MatMap cols(col, (ci1 - ci0) * c.kk, n, Eigen::OuterStride<>(n));
      cols.noalias() = wg.middleCols(ci0 * c.kk, (ci1 - ci0) * c.kk).transpose() * yall;
      for (Index ci = ci0; ci < ci1; ++ci) {
        double* plane = x_sums + (g * c.cg_in + ci) * n_in;
        for (Index t = 0; t < c.kk; ++t) {
          const double* row = col + ((ci - ci0) * c.kk + t) * n;
          for_class_taps(w, in, out, t, [&](Index q, Index k) {
            if (k >= 0) {
              plane[k] += row[q];
            }
          });
        }
      }
    });
  }
}

/// The same with x on position classes and y summed over out's classes.
void conv_weight_products_classes(const ConvShape& c, std::span<const ProductTerm> terms,
                                  const Classes& in, const Classes& out, const ProductSink& sink,
                                  int threads) {
  if (terms.size() > 2) {
    throw std::logic_error("conv_weight_products_classes: at most two terms (two column buffers)");
  }
  const Index n = out.positions();
  const LayerBuffer slots[2] = {LayerBuffer::columns, LayerBuffer::columns_second};
  for (Index g = 0; g < c.w->groups; ++g) {
    std::vector<GemmTerm> gemm;
    for (std::size_t t = 0; t < terms.size(); ++t) {
      gemm.push_back({classes_columns(c, terms[t].x, g, in, out, threads, slots[t]), n, n,
                      terms[t].y, terms[t].scale});
    }
    weight_gemm(c, g, gemm, sink, threads);
  }
}

TensorPtr classes_forward(const LayerPlan& plan, std::size_t l, const std::vector<TensorPtr>& sums,
                          const WeightSpec& spec, double bias_value, const LayerClasses& classes) {
  const Layer& ly = plan.layer(l);
  const int threads = plan.threads();
  const Classes& out = *classes[l];
  const Index channels = plan.shape(l)[0];
  const Index n = channels * out.positions();
  const std::size_t src = plan.input(l);
  // forward_classes gives classes to none of the other forms.
  const auto never = [&](auto...) -> TensorPtr {
    throw std::logic_error(
        fmt::format("position classes: layer '{}' of kind {}", ly.name, to_string(ly.kind)));
  };
  const auto with_parameters = [&] {
    return param_forward(plan, l, *sums[src], spec, bias_value, &classes);
  };
  return visit_kind(ly.kind, [&]<class K>(K) {
    return K::map(Maps<TensorPtr>{
        .input = never,
        .dense = never,
        .window = with_parameters,
        .adjoint_window = never,
        .channel_affine = with_parameters,
        .pool =
            [&](bool /*max*/) {
              const Tensor& x = *sums[src];
              TensorPtr y = make_tensor(n, x.exp, false);
              pool_apply(ly, plan.window(l), spec, x.value.data(), y->value.data(), false, threads,
                         &*classes[src], &out);
              normalize(*y, threads);
              return y;
            },
        .entrywise = [&] { return sums[src]; },
        .scaled =
            [&] {
              return combine({{sums[src].get(), fixed(ly.factor, spec)}}, n, threads);
            },
        .sum =
            [&](bool negate_last) {
              std::vector<TensorPtr> held;
              std::vector<std::pair<const Tensor*, FixedWeight>> terms;
              for (std::size_t k = 0; k < ly.inputs.size(); ++k) {
                const std::size_t i = plan.input(l, k);
                held.push_back(regather(*sums[i], channels, *classes[i], &out, threads));
                const double w = (negate_last && k + 1 == ly.inputs.size()) ? -1.0 : 1.0;
                terms.emplace_back(held.back().get(), fixed(w, spec));
              }
              return combine(terms, n, threads);
            },
        .concat =
            [&] {  // along the channels: the inputs on the common classes
              std::vector<TensorPtr> held;
              std::vector<std::pair<const Tensor*, Index>> parts;
              for (std::size_t k = 0; k < ly.inputs.size(); ++k) {
                const std::size_t i = plan.input(l, k);
                held.push_back(regather(*sums[i], plan.shape(i)[0], *classes[i], &out, threads));
                parts.emplace_back(held.back().get(),
                                   static_cast<Index>(held.back()->value.size()));
              }
              return concat_tensors(parts, 1, threads);
            },
        .reshape = never,
        .pick = never,
        .group =
            [&] {  // on its input's classes
              const Tensor& x = *sums[src];
              TensorPtr y = make_tensor(n, x.exp, false);
              group_apply(ly, spec, x.value.data(), y->value.data(), channels, out.positions(),
                          threads);
              normalize(*y, threads);
              return y;
            },
        .lerp = never});
  });
}

}  // namespace pathlift::detail
