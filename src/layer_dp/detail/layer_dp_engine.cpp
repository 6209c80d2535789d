// The layer-by-layer dynamic programme (layer_dp_engine.hpp).

#include "src/layer_dp/detail/layer_dp_engine.hpp"

#include <fmt/format.h>
#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>
#include <utility>

#include "pathlift/limits.hpp"
#include "src/dp/dp_scaled.hpp"
#include "src/layer_dp/detail/layer_classes.hpp"
#include "src/layer_dp/detail/layer_kernels.hpp"

namespace pathlift::detail {

/// A pick layer l (its form: pick): transpose false, out[o, i, r] = in[o, indices[i], r]; true: the
/// transposed map, out[o, indices[i], r] += in[o, i, r] (out zeroed by the caller). o runs over
/// the dimensions before the axis, r over those after it.
void pick_apply(const LayerPlan& plan, std::size_t l, const double* in, double* out,
                bool transpose) {
  const Layer& ly = plan.layer(l);
  const std::vector<Index>& shape = plan.shape(plan.input(l));
  const auto axis = static_cast<std::size_t>(ly.axis);
  Index outer = 1;
  for (std::size_t i = 0; i < axis; ++i) {
    outer *= shape[i];
  }
  const Index along = shape[axis];
  const Index inner = plan.entries(plan.input(l)) / (outer * along);
  const auto picked = static_cast<Index>(ly.indices.size());
  for (Index o = 0; o < outer; ++o) {
    for (Index i = 0; i < picked; ++i) {
      const Index from = (o * along + ly.indices[static_cast<std::size_t>(i)]) * inner;
      const Index to = (o * picked + i) * inner;
      if (transpose) {
        for (Index r = 0; r < inner; ++r) {
          out[from + r] += in[to + r];
        }
      } else {
        std::copy(in + from, in + from + inner, out + to);
      }
    }
  }
}

namespace {

// --------------------------------------------------------------------------------------------
// One layer, forward and transposed.

/// The sum of channels [first, first + count) of x (planes of `positions` entries).
std::vector<double> channel_sum(const double* x, Index first, Index count, Index positions) {
  std::vector<double> sum(static_cast<std::size_t>(positions), 0.0);
  for (Index ci = first; ci < first + count; ++ci) {
    const double* plane = x + ci * positions;
    for (Index p = 0; p < positions; ++p) {
      sum[static_cast<std::size_t>(p)] += plane[p];
    }
  }
  return sum;
}

/// A tensor's layout: `channels` planes of `positions` entries.
struct Planes {
  Index channels;
  Index positions;
};

/// A window layer's map with every weight 1 (counting; adjoint false: the convolution, true: its
/// adjoint, input and output swapped). Every output channel of a group sees the same sums, so
/// `fill(sum, plane)` writes the group's first output plane from the sum of the group's input
/// channels, and the group's other output channels copy it. Returns the output's layout.
template <class Fill>
Planes ones_window(const ConvShape& c, bool adjoint, const double* x, double* y, Fill fill) {
  const Window& w = *c.w;
  const Index cg_in = adjoint ? c.cg_out : c.cg_in;
  const Index n_in = adjoint ? c.n_out : c.n_in;
  const Index cg_out = adjoint ? c.cg_in : c.cg_out;
  const Index n_out = adjoint ? c.n_in : c.n_out;
  for (Index g = 0; g < w.groups; ++g) {
    const std::vector<double> sum = channel_sum(x, g * cg_in, cg_in, n_in);
    double* first = y + g * cg_out * n_out;
    fill(sum, first);
    for (Index co = 1; co < cg_out; ++co) {
      std::copy(first, first + n_out, first + co * n_out);
    }
  }
  return {adjoint ? w.channels_in : w.channels_out, n_out};
}

/// A parameter layer with every weight 1 (counting): no product is needed, since every output
/// channel of a group sees the same sums. conv: the group's channel sum, then window sums.
TensorPtr ones_forward(const LayerPlan& plan, std::size_t l, const Tensor& x, double bias_value) {
  const Layer& ly = plan.layer(l);
  const int threads = plan.threads();
  const Index n_out = plan.entries(l);
  TensorPtr y = make_tensor(n_out, x.exp, false);
  const double b = ly.bias_offset >= 0 ? bias_value : 0.0;
  Planes planes{n_out, 1};  // what the bias adds to: dense, one channel per output
  visit_param_kind(ly, "ones_forward", [&]<class K>(K) {
    return K::map(ParamMaps<void>{
        .dense =
            [&] {
              double acc = 0;
              for (const double v : x.value) {
                acc += v;
              }
              std::fill(y->value.begin(), y->value.end(), acc);
            },
        .window =
            [&] {
              const ConvShape c = conv_shape(plan.window(l));
              const Window& w = *c.w;
              const auto window_sums = [&](const std::vector<double>& sum, double* plane) {
                Index o = 0;
                for (Index oh = 0; oh < w.h.out; ++oh) {
                  for (Index ow = 0; ow < w.w.out; ++ow, ++o) {
                    double acc = 0;
                    for (Index kh = w.h.first(oh); kh < w.h.last(oh); ++kh) {
                      const Index ih = w.h.input(oh, kh);
                      for (Index kw = w.w.first(ow); kw < w.w.last(ow); ++kw) {
                        acc += sum[static_cast<std::size_t>(ih * w.w.in + w.w.input(ow, kw))];
                      }
                    }
                    plane[o] = acc;
                  }
                }
              };
              planes = ones_window(c, false, x.value.data(), y->value.data(), window_sums);
            },
        .adjoint_window =
            [&] {
              // The adjoint convolution's window read backwards: the group's channel sum at each of
              // its outputs, then per output position the sum over the (output, tap) pairs reading
              // it.
              const ConvShape c = conv_shape(plan.window(l));
              const Window& w = *c.w;
              const auto reader_sums = [&](const std::vector<double>& sum, double* plane) {
                for (Index p = 0; p < c.n_in; ++p) {
                  double acc = 0;
                  w.h.readers(p / w.w.in, [&](Index ih, Index) {
                    w.w.readers(p % w.w.in, [&](Index iw, Index) {
                      acc += sum[static_cast<std::size_t>(ih * w.w.out + iw)];
                    });
                  });
                  plane[p] = acc;
                }
              };
              planes = ones_window(c, true, x.value.data(), y->value.data(), reader_sums);
            },
        .channel_affine =
            [&] {
              planes.channels = plan.shape(l)[0];
              planes.positions = n_out / planes.channels;
              std::copy(x.value.begin(), x.value.end(), y->value.begin());
            }});
  });
  Block bias;
  if (b != 0) {
    bias.m.assign(static_cast<std::size_t>(planes.channels), 1.0);
    bias.zero = false;
  }
  add_bias(*y, bias, planes.channels, planes.positions, b, threads);
  return y;
}

}  // namespace

Index batch_norm_scale(const LayerPlan& plan, std::size_t l, const WeightSpec& spec,
                       const Tensor& in, Tensor& out, Index entries) {
  const Index channels = plan.shape(l)[0];
  const int threads = plan.threads();
  const BlockPtr a = weights_of(plan.layer(l), channels, spec, threads);
  scale_channels(a->m.data(), in.value.data(), out.value.data(), channels, entries / channels,
                 threads);
  out.exp = a->exp + in.exp;
  return channels;
}

TensorPtr param_forward(const LayerPlan& plan, std::size_t l, const Tensor& x,
                        const WeightSpec& spec, double bias_value, const LayerClasses* classes) {
  const Layer& ly = plan.layer(l);
  const int threads = plan.threads();
  // On position classes (a convolution or batch norm whose output has them): one entry per
  // channel and class, the input on its own classes.
  const Classes* out_cls = classes != nullptr && (*classes)[l] ? &*(*classes)[l] : nullptr;
  const Index n_out =
      out_cls != nullptr ? plan.shape(l)[0] * out_cls->positions() : plan.entries(l);
  if (spec.mode == Mode::ones) {  // never on classes (forward_pass refuses them)
    return ones_forward(plan, l, x, bias_value);
  }
  TensorPtr y = make_tensor(n_out, 0, false);
  return visit_param_kind(ly, "param_forward", [&]<class K>(K) {
    return K::map(ParamMaps<TensorPtr>{
        .dense =
            [&] {
              const Index f = plan.entries(plan.input(l));
              const ParamTransform w(spec, ly.weight_offset, n_out * f, threads);
              if (w.zero()) {
                std::fill(y->value.begin(), y->value.end(), 0.0);
              } else {
                linear_forward(w, n_out, f, x.value.data(), y->value.data(), threads);
              }
              y->exp = w.exp() + x.exp;
              add_bias(*y, *bias_of(ly, n_out, spec, threads), n_out, 1, bias_value, threads);
              return y;
            },
        .window =
            [&] {
              const ConvShape c = conv_shape(plan.window(l));
              const BlockPtr wb = weights_of(ly, c.w->channels_out * c.rows, spec, threads);
              if (wb->zero) {
                std::fill(y->value.begin(), y->value.end(), 0.0);
              } else if (out_cls != nullptr) {
                conv_forward_classes(c, wb->m.data(), x.value.data(), *(*classes)[plan.input(l)],
                                     *out_cls, y->value.data(), threads);
              } else {
                conv_forward(c, wb->m.data(), x.value.data(), y->value.data(), threads);
              }
              y->exp = wb->exp + x.exp;
              add_bias(*y, *bias_of(ly, c.w->channels_out, spec, threads), c.w->channels_out,
                       n_out / c.w->channels_out, bias_value, threads);
              return y;
            },
        .adjoint_window =
            [&] {
              // The adjoint convolution's transposed pass, with the same weight block.
              const ConvShape c = conv_shape(plan.window(l));
              const BlockPtr wb = weights_of(ly, c.w->channels_out * c.rows, spec, threads);
              std::fill(y->value.begin(), y->value.end(), 0.0);
              if (!wb->zero) {
                conv_adjoint(c, wb->m.data(), x.value.data(), y->value.data(), threads);
              }
              y->exp = wb->exp + x.exp;
              add_bias(*y, *bias_of(ly, c.w->channels_in, spec, threads), c.w->channels_in, c.n_in,
                       bias_value, threads);
              return y;
            },
        .channel_affine =
            [&] {
              const Index channels = batch_norm_scale(plan, l, spec, x, *y, n_out);
              add_bias(*y, *bias_of(ly, channels, spec, threads), channels, n_out / channels,
                       bias_value, threads);
              return y;
            }});
  });
}

TensorPtr plain_forward(const LayerPlan& plan, std::size_t l, const std::vector<TensorPtr>& sums,
                        const WeightSpec& spec) {
  const Layer& ly = plan.layer(l);
  const int threads = plan.threads();
  const Index n = plan.entries(l);
  return visit_plain_kind(ly, "plain_forward", [&]<class K>(K) {
    return K::map(PlainMaps<TensorPtr>{
        .pool =
            [&](bool /*max*/) {
              const Tensor& x = *sums[plan.input(l)];
              TensorPtr y = make_tensor(n, x.exp);
              pool_apply(ly, plan.window(l), spec, x.value.data(), y->value.data(), false, threads);
              normalize(*y, threads);
              return y;
            },
        .entrywise = [&] { return sums[plan.input(l)]; },
        .scaled =
            [&] {
              return combine({{sums[plan.input(l)].get(), fixed(ly.factor, spec)}}, n, threads);
            },
        .sum =
            [&](bool negate_last) {
              std::vector<std::pair<const Tensor*, FixedWeight>> terms;
              for (std::size_t k = 0; k < ly.inputs.size(); ++k) {
                const double w = (negate_last && k + 1 == ly.inputs.size()) ? -1.0 : 1.0;
                terms.emplace_back(sums[plan.input(l, k)].get(), fixed(w, spec));
              }
              return combine(terms, n, threads);
            },
        .concat =
            [&] {
              // Entries are the inputs' entries (no edge), side by side along the axis.
              Index outer = 1;
              for (Index i = 0; i < ly.axis; ++i) {
                outer *= plan.shape(l)[static_cast<std::size_t>(i)];
              }
              std::vector<std::pair<const Tensor*, Index>> parts;
              for (std::size_t k = 0; k < ly.inputs.size(); ++k) {
                const std::size_t src = plan.input(l, k);
                parts.emplace_back(sums[src].get(), plan.entries(src) / outer);
              }
              return concat_tensors(parts, outer, threads);
            },
        .reshape = [&] { return sums[plan.input(l)]; },
        .pick =
            [&] {
              const Tensor& x = *sums[plan.input(l)];
              TensorPtr y = make_tensor(n, x.exp, false);
              pick_apply(plan, l, x.value.data(), y->value.data(), false);
              normalize(*y, threads);
              return y;
            },
        .group =
            [&] {
              const Tensor& x = *sums[plan.input(l)];
              TensorPtr y = make_tensor(n, x.exp);
              const Index channels = plan.shape(l)[0];
              group_apply(ly, spec, x.value.data(), y->value.data(), channels, n / channels,
                          threads);
              normalize(*y, threads);
              return y;
            },
        .lerp =
            [&] {
              const Tensor& x = *sums[plan.input(l)];
              TensorPtr y = make_tensor(n, x.exp);
              lerp_apply(ly, plan.shape(plan.input(l)), spec, x.value.data(), y->value.data(),
                         false, threads);
              normalize(*y, threads);
              return y;
            }});
  });
}

namespace {
thread_local int t_engine_depth = 0;  // EigenSerial guards alive on this thread
}  // namespace

EigenSerial::EigenSerial() {
  ++t_engine_depth;
}

EigenSerial::~EigenSerial() {
  if (--t_engine_depth == 0) {
    release_layer_buffers();
  }
}

LayerPlan::LayerPlan(const LayerGraph& graph, const EngineOptions& options)
    : m_graph(&graph), m_shapes(layer_shapes(graph)), m_options(&options) {
  const std::size_t n = graph.layers.size();
  m_entries.assign(n, 0);
  m_windows.resize(n);
  m_last_use.assign(n, 0);
  for (std::size_t l = 0; l < n; ++l) {
    Index e = 1;
    for (const Index x : m_shapes[l]) {
      e *= x;
    }
    m_entries[l] = e;
    const Layer& ly = graph.layers[l];
    if (form_of(ly.kind) != Form::reshape && form_of(ly.kind) != Form::entrywise) {
      m_total_entries += e;
    }
    if (is_window(ly.kind)) {
      m_windows[l] = window_of(ly, m_shapes[static_cast<std::size_t>(ly.inputs[0])]);
      if (is_convolution(ly.kind)) {
        const ConvShape c = conv_shape(m_windows[l]);
        m_max_col2im = std::max(m_max_col2im, col2im_block_rows(c) * c.n_out);
        m_max_kernel = std::max(m_max_kernel, c.w->channels_out * c.rows);
        m_has_adjoint_window = m_has_adjoint_window || form_of(ly.kind) == Form::adjoint_window;
      }
    }
    for (const Index i : ly.inputs) {
      m_last_use[static_cast<std::size_t>(i)] = l;
    }
  }
  for (const Index o : graph.outputs) {
    m_last_use[static_cast<std::size_t>(o)] = n;
  }
  // The most entries an unkept forward pass holds at once: each tensor from its layer to the
  // last use of its storage, which a view (flatten, activation) shares with its input.
  std::vector<std::size_t> owner(n);
  std::vector<std::size_t> end(n, 0);
  for (std::size_t l = 0; l < n; ++l) {
    const Layer& ly = graph.layers[l];
    const bool view = form_of(ly.kind) == Form::reshape || form_of(ly.kind) == Form::entrywise;
    owner[l] = view ? owner[static_cast<std::size_t>(ly.inputs[0])] : l;
    end[owner[l]] = std::max(end[owner[l]], m_last_use[l]);
  }
  m_owner = std::move(owner);
  m_end = std::move(end);
  m_forward_peak = forward_peak(m_entries);
  // Threads pay off from tens of thousands of entries on; below, one thread (the results are
  // the same for any count).
  m_threads = m_total_entries < (Index{1} << 16) ? 1 : resolve_threads(options.threads);
  const LayerClasses backward = detail::backward_classes(*this);
  m_backward.resize(n);
  for (std::size_t l = 0; l < n; ++l) {
    const std::optional<Classes>& c = backward[l];
    if (!c || 4 * c->positions() > 3 * c->full_positions()) {
      continue;
    }
    if (form_of(graph.layers[l].kind) == Form::window) {
      // What conv_adjoint and conv_weight_products then hold beside the column matrix: per
      // term the column matrix summed over the classes and y at their representatives, and
      // (a 1x1 convolution read directly) each thread's rows of W^T y on the classes.
      const ConvShape cs = conv_shape(m_windows[l]);
      const Index k = c->positions();
      m_max_grouped = std::max(m_max_grouped, 2 * cs.rows * k + 3 * cs.w->channels_out * k +
                                                  static_cast<Index>(m_threads) * 512 * k);
    }
    PositionGroups& pg = m_backward[l].emplace();
    const Index width = c->w.size();
    const auto full_w = static_cast<Index>(c->w.of.size());
    for (const Index h : c->h.of) {
      for (const Index w : c->w.of) {
        pg.cls.push_back(h * width + w);
      }
    }
    for (const Index h : c->h.rep) {
      for (const Index w : c->w.rep) {
        pg.rep.push_back(h * full_w + w);
      }
    }
  }
}

const PositionGroups* LayerPlan::backward_groups(std::size_t l) const {
  return m_backward[l] ? &*m_backward[l] : nullptr;
}

void LayerPlan::report(double fraction) const {
  if (m_options->progress) {
    m_options->progress("layer by layer", std::clamp(fraction, 0.0, 1.0));
  }
}

Index LayerPlan::forward_peak(const std::vector<Index>& sizes) const {
  const std::size_t n = size();
  std::vector<std::vector<std::size_t>> freed(n + 1);
  for (std::size_t l = 0; l < n; ++l) {
    if (m_owner[l] == l) {
      freed[m_end[l]].push_back(l);
    }
  }
  Index live = 0;
  Index peak = 0;
  for (std::size_t l = 0; l < n; ++l) {
    if (m_owner[l] == l) {
      live += sizes[l];
    }
    peak = std::max(peak, live);
    for (const std::size_t f : freed[l]) {
      live -= sizes[f];
    }
  }
  return peak;
}

void LayerPlan::require_memory(int kept, int param_sums, std::string_view what,
                               const LayerClasses* classes, bool counting,
                               double per_output_bytes) const {
  const std::size_t n = size();
  // Each layer's tensor: its entries, or its channels times its classes.
  std::vector<Index> sizes = m_entries;
  Index total = 0;
  Index largest = 0;
  Index columns_full = 0;
  for (std::size_t l = 0; l < n; ++l) {
    const bool on_classes = classes != nullptr && (*classes)[l];
    if (on_classes) {
      sizes[l] = m_shapes[l][0] * (*classes)[l]->positions();
    }
    const LayerKind kind = m_graph->layers[l].kind;
    if (form_of(kind) != Form::reshape && form_of(kind) != Form::entrywise) {
      total += sizes[l];
      largest = std::max(largest, sizes[l]);
    }
    if (is_convolution(kind)) {
      const ConvShape c = conv_shape(m_windows[l]);
      columns_full = std::max(columns_full, c.rows * (on_classes && form_of(kind) == Form::window
                                                          ? (*classes)[l]->positions()
                                                          : c.n_out));
    }
  }
  // An unkept pass is a forward pass: what it holds at once, computed from the plan. Kept
  // passes hold every tensor, and a backward pass a few more (a sum and its terms).
  const double tensors = kept > 0 ? static_cast<double>(kept) * static_cast<double>(total) +
                                        2.0 * static_cast<double>(largest)
                                  : static_cast<double>(forward_peak(sizes));
  // The transformed parameters: a convolution's kernel gathered; a linear layer's weights, and
  // a convolution's edge products, by tiles, one per thread. theta itself is the caller's.
  const double params =
      counting ? 0.0
               : static_cast<double>(m_max_kernel) +
                     static_cast<double>(m_threads) *
                         static_cast<double>(std::max(k_rows * k_tile_cols, k_trows * k_tcols));
  // A convolution's column matrix (kept from layer to layer: layer_buffer) and each thread's
  // col2im block (a backward pass's transposes, a window adjoint's forward), beside the
  // tensors; a counting pass sums over windows and needs neither.
  const bool col2im = kept > 0 || m_has_adjoint_window;
  const double columns =
      counting ? 0.0
               : static_cast<double>(columns_full) +
                     (col2im ? static_cast<double>(m_threads) * static_cast<double>(m_max_col2im)
                             : 0.0) +
                     (kept > 0 ? static_cast<double>(m_max_grouped) : 0.0);
  // The outputs: a layer on classes expanded to its full tensor at the end of a pass, and the
  // result's entries per output.
  double outputs = 0;
  double expanded = 0;
  for (const Index o : m_graph->outputs) {
    const auto l = static_cast<std::size_t>(o);
    outputs += static_cast<double>(m_entries[l]);
    expanded += static_cast<double>(m_entries[l] - sizes[l]);
  }
  const double bytes = 8.0 * (tensors + columns + params + expanded) +
                       16.0 * param_sums * static_cast<double>(m_graph->num_params) +
                       per_output_bytes * outputs;
  require_bytes(bytes, m_options->max_memory,
                fmt::format("{} on the layer graph ({} layers, {} tensor entries, d = {})", what,
                            size(), m_total_entries, m_graph->num_params));
}

std::vector<TensorPtr> forward_pass(const LayerPlan& plan, const WeightSpec& w, bool keep,
                                    double source, const std::vector<TensorPtr>* extra,
                                    const WeightSpec* extra_w, Span progress,
                                    const LayerClasses* classes) {
  const std::size_t n = plan.size();
  const int threads = plan.threads();
  if (classes != nullptr && w.mode == Mode::ones) {
    throw std::logic_error("forward_pass: counting passes do not run on position classes");
  }
  const auto on_classes = [&](std::size_t l) { return classes != nullptr && (*classes)[l]; };
  std::vector<TensorPtr> sums(n);
  sums[0] = make_tensor(
      on_classes(0) ? plan.shape(0)[0] * (*classes)[0]->positions() : plan.entries(0), 0, false);
  std::fill(sums[0]->value.begin(), sums[0]->value.end(), source);
  normalize(*sums[0], threads);
  // A layer on full tensors reads its inputs' sums (of this pass, or `extra`) expanded from
  // their classes; `from` itself when none is on classes.
  const auto full_inputs = [&](std::size_t l, const std::vector<TensorPtr>& from) {
    const Layer& ly = plan.layer(l);
    std::vector<TensorPtr> in;
    for (std::size_t k = 0; k < ly.inputs.size(); ++k) {
      const std::size_t i = plan.input(l, k);
      if (on_classes(i)) {
        if (in.empty()) {
          in = from;
        }
        in[i] = regather(*from[i], plan.shape(i)[0], *(*classes)[i], nullptr, threads);
      }
    }
    return in;
  };
  for (std::size_t l = 1; l < n; ++l) {
    const Layer& ly = plan.layer(l);
    // Layer l applied to `from` (this pass's sums, or `extra`), on its classes or whole.
    const auto apply = [&](const std::vector<TensorPtr>& from, const WeightSpec& spec,
                           double bias_value) {
      if (on_classes(l)) {
        return classes_forward(plan, l, from, spec, bias_value, *classes);
      }
      const std::vector<TensorPtr> expanded =
          classes != nullptr ? full_inputs(l, from) : std::vector<TensorPtr>{};
      const std::vector<TensorPtr>& in = expanded.empty() ? from : expanded;
      return has_parameters(ly) ? param_forward(plan, l, *in[plan.input(l)], spec, bias_value)
                                : plain_forward(plan, l, in, spec);
    };
    sums[l] = apply(sums, w, source);
    if (extra != nullptr && has_parameters(ly)) {
      const TensorPtr t = apply(*extra, *extra_w, 1.0);
      sums[l] = combine({{sums[l].get(), unit_weight}, {t.get(), unit_weight}},
                        static_cast<Index>(t->value.size()), threads);
    }
    if (!keep) {
      for (const Index i : ly.inputs) {
        if (plan.last_use(static_cast<std::size_t>(i)) == l) {
          sums[static_cast<std::size_t>(i)].reset();
        }
      }
    }
    plan.report(progress.from +
                (progress.to - progress.from) * static_cast<double>(l) / static_cast<double>(n));
  }
  if (classes != nullptr && !keep) {
    sums = expand_outputs(plan, std::move(sums), *classes);
  }
  plan.report(progress.to);
  return sums;
}

}  // namespace pathlift::detail
