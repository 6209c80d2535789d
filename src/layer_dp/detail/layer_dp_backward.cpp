// The backward pass of the layer dynamic programme (layer_dp_engine.hpp): each layer's
// transposed map, on full tensors or on the sums over position classes.

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <stdexcept>

#include "src/layer_dp/detail/layer_classes.hpp"
#include "src/layer_dp/detail/layer_dp_engine.hpp"
#include "src/layer_dp/detail/layer_kernels.hpp"

namespace pathlift::detail {

namespace {

/// The transposed map of parameter layer l applied to y (its output's backward sums). With
/// `classes` where l has them (a conv or batch norm), y is held as sums over l's classes and
/// the result as sums over its input's.
TensorPtr param_transpose(const LayerPlan& plan, std::size_t l, const Tensor& y,
                          const WeightSpec& spec, const LayerClasses* classes) {
  const Layer& ly = plan.layer(l);
  const int threads = plan.threads();
  const Classes* out_cls = classes != nullptr && (*classes)[l] ? &*(*classes)[l] : nullptr;
  const Index n_in = out_cls != nullptr
                         ? plan.shape(plan.input(l))[0] * (*classes)[plan.input(l)]->positions()
                         : plan.entries(plan.input(l));
  // Zeros where a kind may leave entries unwritten (a zero block, col2im adding); a batch
  // norm scales every entry.
  TensorPtr x = make_tensor(n_in, 0, form_of(ly.kind) != Form::channel_affine);
  visit_param_kind(ly, "param_transpose", [&]<class K>(K) {
    return K::map(ParamMaps<void>{
        .dense =
            [&] {
              const Index out = plan.entries(l);
              const ParamTransform w(spec, ly.weight_offset, out * n_in, threads);
              if (!w.zero()) {
                linear_transpose(w, out, n_in, y.value.data(), x->value.data(), threads);
              }
              x->exp = w.exp() + y.exp;
            },
        .window =
            [&] {
              const ConvShape c = conv_shape(plan.window(l));
              const BlockPtr wb = weights_of(ly, c.w->channels_out * c.rows, spec, threads);
              if (!wb->zero && out_cls != nullptr) {
                conv_transpose_classes(c, wb->m.data(), y.value.data(), *(*classes)[plan.input(l)],
                                       *out_cls, x->value.data(), threads);
              } else if (!wb->zero) {  // y whole: on its backward classes where it has them
                conv_adjoint(c, wb->m.data(), y.value.data(), x->value.data(), threads,
                             plan.backward_groups(l));
              }
              x->exp = wb->exp + y.exp;
            },
        .adjoint_window =
            [&] {
              // The adjoint convolution's forward pass.
              const ConvShape c = conv_shape(plan.window(l));
              const BlockPtr wb = weights_of(ly, c.w->channels_out * c.rows, spec, threads);
              if (wb->zero) {
                std::fill(x->value.begin(), x->value.end(), 0.0);
              } else {
                conv_forward(c, wb->m.data(), y.value.data(), x->value.data(), threads);
              }
              x->exp = wb->exp + y.exp;
            },
        .channel_affine = [&] { (void)batch_norm_scale(plan, l, spec, y, *x, n_in); }});
  });
  normalize(*x, threads);
  return x;
}

/// The transposed map of a layer without parameters: the contribution to input k. With
/// `classes` where l has them, y is held as sums over l's classes and the result as sums over
/// its input's.
TensorPtr plain_transpose(const LayerPlan& plan, std::size_t l, std::size_t k, const TensorPtr& y,
                          const WeightSpec& spec, const LayerClasses* classes) {
  const Layer& ly = plan.layer(l);
  const int threads = plan.threads();
  const std::size_t src = plan.input(l, k);
  const Classes* out_cls = classes != nullptr && (*classes)[l] ? &*(*classes)[l] : nullptr;
  const Classes* in_cls = out_cls != nullptr ? &*(*classes)[src] : nullptr;
  const Index n_src =
      in_cls != nullptr ? plan.shape(src)[0] * in_cls->positions() : plan.entries(src);
  return visit_plain_kind(ly, "plain_transpose", [&]<class K>(K) {
    return K::map(PlainMaps<TensorPtr>{
        .pool =
            [&](bool /*max*/) {
              TensorPtr x = make_tensor(n_src, y->exp);
              pool_apply(ly, plan.window(l), spec, y->value.data(), x->value.data(), true, threads,
                         in_cls, out_cls);
              normalize(*x, threads);
              return x;
            },
        // on classes: the same classes as its input
        .entrywise = [&] { return y; },
        .scaled =
            [&] {
              return combine({{y.get(), fixed(ly.factor, spec)}}, n_src, threads);
            },
        .sum =
            [&](bool negate_last) {
              const FixedWeight f =
                  fixed((negate_last && k + 1 == ly.inputs.size()) ? -1.0 : 1.0, spec);
              const TensorPtr t =
                  f.value() == 1
                      ? y
                      : combine({{y.get(), f}}, static_cast<Index>(y->value.size()), threads);
              // On classes: l's classes refine the input's.
              return out_cls != nullptr ? coarsen(t, plan.shape(src)[0], *out_cls, *in_cls, threads)
                                        : t;
            },
        .concat =
            [&] {
              // On classes (a concat along the channels): outer is 1 and each row counts classes.
              const Index per_channel = out_cls != nullptr ? out_cls->positions() : 0;
              Index outer = 1;
              for (Index i = 0; i < ly.axis; ++i) {
                outer *= plan.shape(l)[static_cast<std::size_t>(i)];
              }
              const auto held = [&](std::size_t i) {  // input i's entries in l's holding
                return out_cls != nullptr ? plan.shape(i)[0] * per_channel : plan.entries(i);
              };
              const Index row_out = held(l) / outer;
              Index at = 0;
              for (std::size_t j = 0; j < k; ++j) {
                at += held(plan.input(l, j)) / outer;
              }
              const Index row = held(src) / outer;
              TensorPtr x = make_tensor(held(src), y->exp);
              for (Index o = 0; o < outer; ++o) {
                for (Index i = 0; i < row; ++i) {
                  x->value[static_cast<std::size_t>(o * row + i)] =
                      y->value[static_cast<std::size_t>(o * row_out + at + i)];
                }
              }
              normalize(*x, threads);
              return out_cls != nullptr ? coarsen(x, plan.shape(src)[0], *out_cls, *in_cls, threads)
                                        : x;
            },
        .reshape = [&] { return y; },
        .pick =
            [&] {
              TensorPtr x = make_tensor(n_src, y->exp);
              pick_apply(plan, l, y->value.data(), x->value.data(), true);
              normalize(*x, threads);
              return x;
            },
        .group =
            [&] {
              // its own transpose; on classes: its input's classes
              TensorPtr x = make_tensor(n_src, y->exp);
              const Index channels = plan.shape(l)[0];
              group_apply(ly, spec, y->value.data(), x->value.data(), channels, n_src / channels,
                          threads);
              normalize(*x, threads);
              return x;
            },
        .lerp =
            [&] {
              TensorPtr x = make_tensor(n_src, y->exp);
              lerp_apply(ly, plan.shape(src), spec, y->value.data(), x->value.data(), true,
                         threads);
              normalize(*x, threads);
              return x;
            }});
  });
}

/// slot += t (copy-on-write: a slot may share its tensor with a view).
void accumulate(TensorPtr& slot, const TensorPtr& t, Index n, int threads) {
  if (!t) {
    return;
  }
  if (!slot) {
    slot = t;
    return;
  }
  slot = combine({{slot.get(), unit_weight}, {t.get(), unit_weight}}, n, threads);
}

}  // namespace

std::vector<TensorPtr> backward_pass(const LayerPlan& plan, const WeightSpec& w, bool seed_outputs,
                                     bool keep, const std::vector<TensorPtr>* extra,
                                     const WeightSpec* extra_w,
                                     const std::function<void(std::size_t, const Tensor&)>& visit,
                                     Span progress, const LayerClasses* classes) {
  const std::size_t n = plan.size();
  const int threads = plan.threads();
  const auto on_classes = [&](std::size_t l) { return classes != nullptr && (*classes)[l]; };
  // A full tensor of layer l onto its classes, where it has them.
  const auto held = [&](std::size_t l, TensorPtr t) {
    if (!t || !on_classes(l)) {
      return t;
    }
    TensorPtr c = class_sums(*t, plan.shape(l)[0], *(*classes)[l], threads);
    normalize(*c, threads);
    return c;
  };
  // A layer's backward sums are read only at a parameter layer and at the layers it reads
  // from: none reaches the input, or a layer that only input-side fixed layers feed (the
  // stem's transpose, back onto the image, would cost as much as a whole stage).
  std::vector<char> read(n, 0);
  for (std::size_t l = 1; l < n; ++l) {
    read[l] = static_cast<char>(has_parameters(plan.layer(l)));
    for (std::size_t k = 0; k < plan.layer(l).inputs.size() && read[l] == 0; ++k) {
      read[l] = read[plan.input(l, k)];
    }
  }
  std::vector<TensorPtr> grads(n);
  if (seed_outputs) {
    for (const Index o : plan.graph().outputs) {
      const auto l = static_cast<std::size_t>(o);
      TensorPtr ones = make_tensor(plan.entries(l), 0, false);
      std::fill(ones->value.begin(), ones->value.end(), 0.5);
      ones->exp = 1;
      ones = held(l, ones);
      accumulate(grads[l], ones, static_cast<Index>(ones->value.size()), threads);
    }
  }
  for (std::size_t l = n; l-- > 1;) {
    const Layer& ly = plan.layer(l);
    const bool param = has_parameters(ly);
    const bool has_extra = param && extra != nullptr && (*extra)[l] != nullptr;
    if (grads[l] || has_extra) {
      if (param && grads[l]) {
        visit(l, *grads[l]);
      }
      for (std::size_t k = 0; k < ly.inputs.size(); ++k) {
        const std::size_t src = plan.input(l, k);
        if (read[src] == 0) {
          continue;
        }
        TensorPtr t;
        if (param) {
          if (grads[l]) {
            t = param_transpose(plan, l, *grads[l], w, classes);
          }
          if (has_extra) {
            const TensorPtr u = param_transpose(plan, l, *(*extra)[l], *extra_w, classes);
            t = t ? combine({{t.get(), unit_weight}, {u.get(), unit_weight}},
                            static_cast<Index>(u->value.size()), threads)
                  : u;
          }
        } else {
          t = plain_transpose(plan, l, k, grads[l], w, classes);
        }
        // On l's classes, the transposes give the input's class sums; from a full l, they are
        // summed here.
        if (!on_classes(l)) {
          t = held(src, t);
        }
        accumulate(grads[src], t, t ? static_cast<Index>(t->value.size()) : 0, threads);
      }
    }
    if (!keep) {
      grads[l].reset();
    }
    plan.report(progress.from + (progress.to - progress.from) * static_cast<double>(n - l) /
                                    static_cast<double>(n));
  }
  plan.report(progress.to);
  return grads;
}

}  // namespace pathlift::detail
