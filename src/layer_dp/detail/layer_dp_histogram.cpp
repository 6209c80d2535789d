// The path-length histogram of the layer dynamic programme (layer_dp_engine.hpp).

#include <algorithm>
#include <limits>

#include "src/dp/detail/dp_scaled.hpp"
#include "src/layer_dp/detail/layer_dp_engine.hpp"
#include "src/layer_dp/detail/layer_kernels.hpp"

namespace pathlift::detail {

namespace {

/// Sums split by path length: slices[len] (null: no path of that length).
using Slices = std::vector<TensorPtr>;

/// slices shifted by one edge where flag == 1 (every entry when flags is null).
Slices shift(const Slices& in, const std::vector<std::uint8_t>* flags, Index n, int threads) {
  bool all = flags == nullptr;
  bool none = false;
  if (flags != nullptr) {
    bool any1 = false;
    bool any0 = false;
    for (const std::uint8_t f : *flags) {
      any1 = any1 || f == 1;
      any0 = any0 || f == 0;
    }
    all = !any0;
    none = !any1;
  }
  if (none) {
    return in;
  }
  Slices out(in.size() + 1);
  if (all) {
    std::copy(in.begin(), in.end(), out.begin() + 1);
    return out;
  }
  for (std::size_t len = 0; len < out.size(); ++len) {
    const Tensor* stay = len < in.size() ? in[len].get() : nullptr;
    const Tensor* moved = len > 0 ? in[len - 1].get() : nullptr;
    if (stay == nullptr && moved == nullptr) {
      continue;
    }
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
    out[len] = std::move(t);
  }
  return out;
}

}  // namespace

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
    h[0] = {x};
  }
  const auto slice_or_zero = [&](std::size_t layer, std::size_t len) {
    const Slices& s = h[layer];
    return len < s.size() && s[len] ? s[len] : make_tensor(plan.entries(layer));
  };
  for (std::size_t l = 1; l < n; ++l) {
    const Layer& ly = plan.layer(l);
    std::size_t lengths = 0;
    for (const Index i : ly.inputs) {
      lengths = std::max(lengths, h[static_cast<std::size_t>(i)].size());
    }
    Slices out(lengths);
    if (ly.kind == LayerKind::flatten ||
        (ly.kind == LayerKind::activation && ly.activation.kind == ActivationKind::identity)) {
      out = h[plan.input(l)];
    } else if (ly.kind == LayerKind::activation) {
      out = shift(h[plan.input(l)], nullptr, plan.entries(l), threads);
    } else {
      for (std::size_t len = 0; len < lengths; ++len) {
        if (has_parameters(ly)) {
          const bool bias = len == 0 && ly.bias_offset >= 0;
          const TensorPtr& x = len < h[plan.input(l)].size() ? h[plan.input(l)][len] : nullptr;
          if (x || bias) {
            out[len] = param_forward(plan, l, x ? *x : *make_tensor(plan.entries(plan.input(l))),
                                     ones, len == 0 ? 1.0 : 0.0);
          }
          continue;
        }
        std::vector<TensorPtr> args(n);
        bool any = false;
        for (std::size_t k = 0; k < ly.inputs.size(); ++k) {
          const std::size_t src = plan.input(l, k);
          any = any || (len < h[src].size() && h[src][len]);
          args[src] = slice_or_zero(src, len);
        }
        if (any) {
          out[len] = plain_forward(plan, l, args, ones);
        }
      }
      if (ly.kind == LayerKind::max_pool) {
        out = shift(out, nullptr, plan.entries(l), threads);
      } else if (!nodes[l].empty()) {
        out = shift(out, &nodes[l], plan.entries(l), threads);
      }
    }
    h[l] = std::move(out);
    for (const Index i : ly.inputs) {
      if (plan.last_use(static_cast<std::size_t>(i)) == l) {
        h[static_cast<std::size_t>(i)].clear();
      }
    }
    plan.report(progress.from +
                (progress.to - progress.from) * static_cast<double>(l) / static_cast<double>(n));
  }
  // The output nodes y_j: one more edge on every path.
  std::vector<std::pair<double, std::int64_t>> hist;
  for (const Index o : plan.graph().outputs) {
    const Slices& s = h[static_cast<std::size_t>(o)];
    if (hist.size() < s.size() + 1) {
      hist.resize(s.size() + 1, {0.0, dp_no_exponent});
    }
    for (std::size_t len = 0; len < s.size(); ++len) {
      if (!s[len]) {
        continue;
      }
      double acc = 0;
      for (const double v : s[len]->value) {
        acc += v;
      }
      if (acc != 0) {
        dp_merge(hist[len + 1].first, hist[len + 1].second, acc, s[len]->exp);
      }
    }
  }
  return hist;
}

}  // namespace pathlift::detail
