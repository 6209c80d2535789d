// The path-length histogram of the layer dynamic programme (layer_dp_engine.hpp).

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "src/dp/dp_scaled.hpp"
#include "src/layer_dp/detail/layer_dp_engine.hpp"
#include "src/layer_dp/detail/layer_kernels.hpp"

namespace pathlift::detail {

namespace {

/// Sums split by path length: t[k] holds the paths of length first + k (null: none). Only the
/// lengths between the shortest and the longest are stored, so that a deep chain costs O(1)
/// per layer.
struct Slices {
  std::size_t first = 0;
  std::vector<TensorPtr> t;

  [[nodiscard]] std::size_t end() const { return first + t.size(); }
  [[nodiscard]] const TensorPtr* at(std::size_t len) const {
    return len >= first && len < end() && t[len - first] ? &t[len - first] : nullptr;
  }
};

/// A flatten or an identity activation: its slices are its input's (no node, no tensor).
bool shares_input(const Layer& ly) {
  return form_of(ly.kind) == Form::reshape ||
         (form_of(ly.kind) == Form::entrywise && ly.activation.kind == ActivationKind::identity);
}

/// Which entries an edge enters: none, every one, or some (`flags` == 1).
enum class Entered : std::uint8_t { none, all, some };

Entered entered(const std::vector<std::uint8_t>* flags) {
  if (flags == nullptr) {
    return Entered::all;
  }
  bool any1 = false;
  bool any0 = false;
  for (const std::uint8_t f : *flags) {
    any1 = any1 || f == 1;
    any0 = any0 || f == 0;
  }
  return !any1 ? Entered::none : !any0 ? Entered::all : Entered::some;
}

/// slices shifted by one edge where flag == 1 (every entry when flags is null).
Slices shift(Slices in, const std::vector<std::uint8_t>* flags, Index n, int threads) {
  const Entered which = entered(flags);
  if (which == Entered::none || in.t.empty()) {
    return in;
  }
  if (which == Entered::all) {
    ++in.first;
    return in;
  }
  Slices out;
  out.first = in.first;
  out.t.resize(in.t.size() + 1);
  for (std::size_t len = out.first; len < out.end(); ++len) {
    const TensorPtr* stay_p = in.at(len);
    const TensorPtr* moved_p = len > 0 ? in.at(len - 1) : nullptr;
    if (stay_p == nullptr && moved_p == nullptr) {
      continue;
    }
    const Tensor* stay = stay_p != nullptr ? stay_p->get() : nullptr;
    const Tensor* moved = moved_p != nullptr ? moved_p->get() : nullptr;
    std::int64_t e = std::numeric_limits<std::int64_t>::min();
    e = stay != nullptr ? std::max(e, stay->exp) : e;
    e = moved != nullptr ? std::max(e, moved->exp) : e;
    TensorPtr t = make_tensor(n, e, false);
    const double fs = stay != nullptr ? down(stay->exp - e) : 0.0;
    const double fm = moved != nullptr ? down(moved->exp - e) : 0.0;
    for (Index i = 0; i < n; ++i) {
      const auto u = static_cast<std::size_t>(i);
      const bool node = (*flags)[u] == 1;
      const Tensor* from = node ? moved : stay;
      t->value[u] = from == nullptr ? 0.0 : (node ? fm : fs) * from->value[u];
    }
    normalize(*t, threads);
    out.t[len - out.first] = std::move(t);
  }
  return out;
}

}  // namespace

namespace {

/// The multiply-adds of one forward counting pass through layer l: each output entry's in-edges
/// (a convolution's taps over its input channels, a linear layer's inputs, a pool's window, a
/// batch norm's one), at least one per entry and input.
double layer_work(const LayerPlan& plan, std::size_t l) {
  const Layer& ly = plan.layer(l);
  const auto out = static_cast<double>(plan.entries(l));
  double taps = 1;  // the kernel's, where the kind has one (an adaptive pool has none)
  if (record(ly.kind).has(Field::kernel)) {
    for (const Index k : ly.kernel) {
      taps *= static_cast<double>(k);
    }
  }
  const auto per_input = [&](auto...) {
    return out * static_cast<double>(std::max<std::size_t>(ly.inputs.size(), 1));
  };
  const auto convolution = [&] {
    return out * taps *
           static_cast<double>(plan.shape(plan.input(l))[0] / std::max<Index>(ly.groups, 1));
  };
  return visit_kind(ly.kind, [&]<class K>(K) {
    return K::map(Maps<double>{
        .input = per_input,
        .dense = [&] { return out * static_cast<double>(plan.entries(plan.input(l))); },
        .window = convolution,
        .adjoint_window = convolution,
        .channel_affine = per_input,
        // an adaptive pool has no kernel: one per entry
        .pool = [&](bool /*max*/) { return out * taps; },
        .entrywise = per_input,
        .scaled = per_input,
        .sum = per_input,
        .concat = per_input,
        .reshape = per_input,
        .pick = per_input,
        .group = [&] { return out * static_cast<double>(ly.group_size); },
        .lerp = [&] { return out * 4; }});
  });
}

}  // namespace

HistogramCost length_histogram_cost(const LayerPlan& plan) {
  const std::size_t n = plan.size();
  // The lengths [first, end) a layer's slices can hold: its inputs' (0 for a bias node), one
  // more for a layer whose entries may become nodes. A view (flatten, identity) holds its
  // input's tensors: they live until the view's last use.
  std::vector<std::size_t> first(n, 0);
  std::vector<std::size_t> end(n, 1);
  std::vector<std::size_t> owner(n, 0);
  std::vector<std::size_t> death(n, 0);
  HistogramCost cost;
  for (std::size_t l = 0; l < n; ++l) {
    const Layer& ly = plan.layer(l);
    owner[l] = l;
    if (l > 0) {
      const bool view = shares_input(ly);
      const bool bias = has_parameters(ly) && ly.bias_offset >= 0;
      first[l] = bias ? 0 : std::numeric_limits<std::size_t>::max();
      end[l] = bias ? 1 : 0;
      for (const Index i : ly.inputs) {
        first[l] = std::min(first[l], first[static_cast<std::size_t>(i)]);
        end[l] = std::max(end[l], end[static_cast<std::size_t>(i)]);
      }
      const double width = static_cast<double>(end[l] - std::min(first[l], end[l]));
      end[l] += view ? 0 : 1;
      owner[l] = view ? owner[plan.input(l)] : l;
      if (!view) {
        const double work = layer_work(plan, l);
        cost.forward_work += work;
        cost.work += work * width;
        cost.lengths = std::max(cost.lengths, static_cast<Index>(width) + 1);
      }
    }
    death[owner[l]] = std::max(death[owner[l]], std::min(plan.last_use(l), n - 1));
  }
  // Alive from its layer to its death: a difference array over the layers.
  std::vector<double> delta(n + 1, 0.0);
  for (std::size_t l = 0; l < n; ++l) {
    if (owner[l] == l) {
      const double bytes = 8.0 * static_cast<double>(plan.entries(l)) *
                           static_cast<double>(end[l] - std::min(first[l], end[l]));
      delta[l] += bytes;
      delta[death[l] + 1] -= bytes;
    }
  }
  double alive = 0;
  for (std::size_t l = 0; l < n; ++l) {
    alive += delta[l];
    cost.bytes = std::max(cost.bytes, alive);
  }
  return cost;
}

ScaledReal total_path_length(const LayerPlan& plan,
                             const std::vector<std::vector<std::uint8_t>>& nodes, Span progress) {
  // Dual numbers A + B eps, A the paths into each entry and B the sum of their lengths: a node
  // puts one more edge on its paths (B += A), the rest is linear in both. Two tensors a layer,
  // whatever the range of lengths.
  const std::size_t n = plan.size();
  const int threads = plan.threads();
  const WeightSpec ones{Mode::ones, 0, {}, {}};
  struct Dual {
    TensorPtr a, b;
  };
  std::vector<Dual> h(n);
  {
    TensorPtr x = make_tensor(plan.entries(0), 0, false);
    std::fill(x->value.begin(), x->value.end(), 1.0);
    normalize(*x, threads);
    h[0] = {x, make_tensor(plan.entries(0))};
  }
  // b + a on the entries that become nodes (all of them when flags is null).
  const auto shifted = [&](const Dual& in, const std::vector<std::uint8_t>* flags,
                           Index entries) -> Dual {
    if (flags != nullptr && entered(flags) == Entered::none) {
      return in;
    }
    std::int64_t e = std::max(in.a->exp, in.b->exp);
    TensorPtr b = make_tensor(entries, e, false);
    const double fa = down(in.a->exp - e);
    const double fb = down(in.b->exp - e);
    for (Index i = 0; i < entries; ++i) {
      const auto u = static_cast<std::size_t>(i);
      const bool node = flags == nullptr || (*flags)[u] == 1;
      b->value[u] = fb * in.b->value[u] + (node ? fa * in.a->value[u] : 0.0);
    }
    normalize(*b, threads);
    return {in.a, b};
  };
  for (std::size_t l = 1; l < n; ++l) {
    const Layer& ly = plan.layer(l);
    Dual out;
    if (shares_input(ly)) {
      out = h[plan.input(l)];
    } else if (form_of(ly.kind) == Form::entrywise) {
      out = shifted(h[plan.input(l)], nodes[l].empty() ? nullptr : &nodes[l], plan.entries(l));
    } else {
      if (has_parameters(ly)) {
        const Dual& x = h[plan.input(l)];
        out = {param_forward(plan, l, *x.a, ones, 1.0), param_forward(plan, l, *x.b, ones, 0.0)};
      } else {
        std::vector<TensorPtr> a(n);
        std::vector<TensorPtr> b(n);
        for (std::size_t k = 0; k < ly.inputs.size(); ++k) {
          const std::size_t src = plan.input(l, k);
          a[src] = h[src].a;
          b[src] = h[src].b;
        }
        out = {plain_forward(plan, l, a, ones), plain_forward(plan, l, b, ones)};
      }
      if (makes_max_nodes(ly.kind)) {
        out = shifted(out, nullptr, plan.entries(l));
      } else if (!nodes[l].empty()) {
        out = shifted(out, &nodes[l], plan.entries(l));
      }
    }
    h[l] = std::move(out);
    for (const Index i : ly.inputs) {
      if (plan.last_use(static_cast<std::size_t>(i)) == l) {
        h[static_cast<std::size_t>(i)] = Dual{};
      }
    }
    plan.report(progress.from +
                (progress.to - progress.from) * static_cast<double>(l) / static_cast<double>(n));
  }
  // The output nodes y_j: one more edge on every path, sum over their entries of A + B.
  double m = 0;
  std::int64_t k = dp_no_exponent;
  for (const Index o : plan.graph().outputs) {
    const Dual& x = h[static_cast<std::size_t>(o)];
    for (const TensorPtr* t : {&x.a, &x.b}) {
      double acc = 0;
      for (const double v : (*t)->value) {
        acc += v;
      }
      if (acc != 0) {
        dp_merge(m, k, acc, (*t)->exp);
      }
    }
  }
  ScaledReal r;
  if (m != 0) {
    dp_normalize(m, k, r.mantissa, r.exponent);
  }
  return r;
}

std::vector<std::pair<double, std::int64_t>> length_histogram(
    const LayerPlan& plan, const std::vector<std::vector<std::uint8_t>>& nodes, Span progress) {
  const std::size_t n = plan.size();
  const int threads = plan.threads();
  const WeightSpec ones{Mode::ones, 0, {}, {}};
  std::vector<Slices> h(n);
  {
    TensorPtr x = make_tensor(plan.entries(0), 0, false);
    std::fill(x->value.begin(), x->value.end(), 1.0);
    normalize(*x, threads);
    h[0].t = {x};
  }
  for (std::size_t l = 1; l < n; ++l) {
    const Layer& ly = plan.layer(l);
    Slices out;
    if (shares_input(ly)) {
      out = h[plan.input(l)];
    } else if (form_of(ly.kind) == Form::entrywise) {
      out =
          shift(h[plan.input(l)], nodes[l].empty() ? nullptr : &nodes[l], plan.entries(l), threads);
    } else {
      // The lengths this layer's sums can have: its inputs' (and 0 for a bias node).
      const bool bias = has_parameters(ly) && ly.bias_offset >= 0;
      std::size_t first = bias ? 0 : std::numeric_limits<std::size_t>::max();
      std::size_t end = bias ? 1 : 0;
      for (const Index i : ly.inputs) {
        const Slices& s = h[static_cast<std::size_t>(i)];
        if (!s.t.empty()) {
          first = std::min(first, s.first);
          end = std::max(end, s.end());
        }
      }
      if (end > 0) {
        out.first = first;
        out.t.resize(end - first);
      }
      for (std::size_t len = out.first; len < out.end(); ++len) {
        TensorPtr& slot = out.t[len - out.first];
        if (has_parameters(ly)) {
          const TensorPtr* x = h[plan.input(l)].at(len);
          if (x != nullptr || (bias && len == 0)) {
            slot = param_forward(plan, l,
                                 x != nullptr ? **x : *make_tensor(plan.entries(plan.input(l))),
                                 ones, len == 0 ? 1.0 : 0.0);
          }
          continue;
        }
        std::vector<TensorPtr> args(n);
        bool any = false;
        for (std::size_t k = 0; k < ly.inputs.size(); ++k) {
          const std::size_t src = plan.input(l, k);
          const TensorPtr* x = h[src].at(len);
          any = any || x != nullptr;
          args[src] = x != nullptr ? *x : make_tensor(plan.entries(src));
        }
        if (any) {
          slot = plain_forward(plan, l, args, ones);
        }
      }
      if (makes_max_nodes(ly.kind)) {
        out = shift(std::move(out), nullptr, plan.entries(l), threads);
      } else if (!nodes[l].empty()) {
        out = shift(std::move(out), &nodes[l], plan.entries(l), threads);
      }
    }
    h[l] = std::move(out);
    for (const Index i : ly.inputs) {
      if (plan.last_use(static_cast<std::size_t>(i)) == l) {
        h[static_cast<std::size_t>(i)] = Slices{};
      }
    }
    plan.report(progress.from +
                (progress.to - progress.from) * static_cast<double>(l) / static_cast<double>(n));
  }
  // The output nodes y_j: one more edge on every path.
  std::vector<std::pair<double, std::int64_t>> hist;
  for (const Index o : plan.graph().outputs) {
    const Slices& s = h[static_cast<std::size_t>(o)];
    if (hist.size() < s.end() + 1) {
      hist.resize(s.end() + 1, {0.0, dp_no_exponent});
    }
    for (std::size_t len = s.first; len < s.end(); ++len) {
      const TensorPtr* t = s.at(len);
      if (t == nullptr) {
        continue;
      }
      double acc = 0;
      for (const double v : (*t)->value) {
        acc += v;
      }
      if (acc != 0) {
        dp_merge(hist[len + 1].first, hist[len + 1].second, acc, (*t)->exp);
      }
    }
  }
  return hist;
}

}  // namespace pathlift::detail
