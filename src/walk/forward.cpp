#include "pathlift/forward.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "pathlift/error.hpp"
#include "pathlift/limits.hpp"
#include "src/core/parallel.hpp"
#include "src/core/random.hpp"
#include "src/network/parameters.hpp"
#include "src/walk/detail/lin_common.hpp"

namespace pathlift {

namespace {

// Samples per block: a block's columns for the nodes in flight stay in cache.
constexpr Index k_block = 512;

std::string data_input_names(const Network& net) {
  const auto inputs = net.data_inputs();
  std::string names;
  constexpr std::size_t k_shown = 8;
  for (std::size_t c = 0; c < inputs.size() && c < k_shown; ++c) {
    names += (c == 0 ? "" : ", ") + net.node_name(inputs[c]);
  }
  if (inputs.size() > k_shown) {
    names += ", ...";
  }
  return names;
}

/// The k-th largest (k >= 2) of w_e v(u) over the in-edges of max node v, per sample of the
/// block [r0, r0 + len), into out.
template <class Theta>
void kth_largest(const Network& net, const Theta& theta, NodeId v, Index k, const double* values,
                 Index n, Index r0, Index len, double* out) {
  const auto in = net.in_edges(v);
  std::vector<double> c(in.size());
  const auto kth = c.begin() + (k - 1);
  for (Index i = 0; i < len; ++i) {
    for (std::size_t j = 0; j < in.size(); ++j) {
      c[j] = theta.data()[in[j]] * values[static_cast<Index>(net.source(in[j])) * n + r0 + i];
    }
    std::nth_element(c.begin(), kth, c.end(), std::greater<>());
    out[i] = *kth;
  }
}

}  // namespace

std::vector<Index> data_columns(const Network& net) {
  std::vector<Index> column(static_cast<std::size_t>(net.num_nodes()), -1);
  const auto data_inputs = net.data_inputs();
  for (std::size_t c = 0; c < data_inputs.size(); ++c) {
    column[static_cast<std::size_t>(data_inputs[c])] = static_cast<Index>(c);
  }
  return column;
}

void check_data(const Network& net, const Eigen::Ref<const Eigen::MatrixXd>& X) {
  const auto r = static_cast<Index>(net.data_inputs().size());
  if (X.cols() != r) {
    throw FormatError(fmt::format(
        "the data has {} columns but the network has {} data inputs ({}{}bias nodes excluded)",
        X.cols(), r, data_input_names(net), r > 0 ? "; " : ""));
  }
  for (Index i = 0; i < X.rows(); ++i) {
    for (Index c = 0; c < r; ++c) {
      if (!std::isfinite(X(i, c))) {
        throw std::invalid_argument(
            fmt::format("the data is not finite at row {}, column {} (input {}): {}", i, c,
                        net.node_name(net.data_inputs()[static_cast<std::size_t>(c)]), X(i, c)));
      }
    }
  }
}

ForwardResult forward(const Network& net, std::span<const double> theta_in,
                      const Eigen::Ref<const Eigen::MatrixXd>& X, const EngineOptions& options) {
  check_theta(net, theta_in);
  check_data(net, X);
  const detail::EdgeTheta<double> theta(net.parameter_map().get(), theta_in);
  const Index n = X.rows();
  const Index m = net.num_nodes();
  const auto q = static_cast<Index>(net.outputs().size());
  require_bytes(static_cast<double>(n) * static_cast<double>(2 * m + q) * sizeof(double),
                options.max_memory,
                fmt::format("the forward pass on n = {} samples, m = {} nodes", n, m));

  const std::vector<Index> data_column = data_columns(net);

  ForwardResult fw;
  fw.pre_activations.resize(n, m);
  fw.values.resize(n, m);
  fw.outputs.resize(n, q);
  double* const pre_all = fw.pre_activations.data();
  double* const val_all = fw.values.data();
  const auto topo = net.topological_order();
  const Index num_blocks = (n + k_block - 1) / k_block;

  detail::run_team(resolve_threads(options.threads), num_blocks > 1, [&] {
#pragma omp for schedule(static)
    for (Index b = 0; b < num_blocks; ++b) {
      const Index r0 = b * k_block;
      const Index len = std::min(k_block, n - r0);
      for (const NodeId v : topo) {
        double* __restrict pre = pre_all + static_cast<Index>(v) * n + r0;
        double* __restrict val = val_all + static_cast<Index>(v) * n + r0;
        if (net.is_input(v)) {
          const Index c = data_column[static_cast<std::size_t>(v)];
          if (c < 0) {
            std::fill(pre, pre + len, 1.0);  // bias
          } else {
            const double* x = X.col(c).data() + r0;
            std::copy(x, x + len, pre);
          }
          std::copy(pre, pre + len, val);
          continue;
        }
        const auto in = net.in_edges(v);
        if (net.activation(v).kind == ActivationKind::max) {
          // Max pooling: the largest weighted incoming value, not the sum.
          const double t0 = theta.data()[in[0]];
          const double* __restrict s0 = val_all + static_cast<Index>(net.source(in[0])) * n + r0;
          for (Index i = 0; i < len; ++i) {
            pre[i] = t0 * s0[i];
          }
          for (std::size_t k = 1; k < in.size(); ++k) {
            const double t = theta.data()[in[k]];
            const double* __restrict src = val_all + static_cast<Index>(net.source(in[k])) * n + r0;
            for (Index i = 0; i < len; ++i) {
              pre[i] = std::max(pre[i], t * src[i]);
            }
          }
          if (const Index k = net.activation(v).order; k > 1) {
            kth_largest(net, theta, v, k, val_all, n, r0, len, pre);  // replaces the max
          }
          std::copy(pre, pre + len, val);
          continue;
        }
        {
          const double t = theta.data()[in[0]];
          const double* __restrict src = val_all + static_cast<Index>(net.source(in[0])) * n + r0;
          for (Index i = 0; i < len; ++i) {
            pre[i] = t * src[i];
          }
        }
        for (std::size_t k = 1; k < in.size(); ++k) {
          const double t = theta.data()[in[k]];
          const double* __restrict src = val_all + static_cast<Index>(net.source(in[k])) * n + r0;
          for (Index i = 0; i < len; ++i) {
            pre[i] += t * src[i];
          }
        }
        const double a = detail::lin_negative_slope(net.activation(v));
        if (a == 1.0) {
          std::copy(pre, pre + len, val);
        } else {
          for (Index i = 0; i < len; ++i) {
            // + 0.0 turns the -0 of a * (negative) with a = 0 into +0.
            val[i] = (pre[i] > 0 ? pre[i] : a * pre[i]) + 0.0;
          }
        }
      }
    }
  });

  const auto outputs = net.outputs();
  for (std::size_t j = 0; j < outputs.size(); ++j) {
    fw.outputs.col(static_cast<Index>(j)) = fw.values.col(outputs[j]);
  }
  return fw;
}

namespace {

/// The edge of the k-th largest of max node v on every sample (the incoming values by
/// decreasing value, ties by increasing edge index; the in-edges are listed by increasing
/// index) and the gap to its neighbours in that order, merged into the margin.
void max_node_pattern(const Network& net, const ForwardResult& fw, NodeId v,
                      ActivationPattern& pat) {
  const Index n = fw.values.rows();
  const auto in = net.in_edges(v);
  const auto k = static_cast<std::size_t>(net.activation(v).order);
  std::vector<std::pair<double, std::size_t>> c(in.size());
  const auto before = [](const std::pair<double, std::size_t>& a,
                         const std::pair<double, std::size_t>& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  for (Index i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < in.size(); ++j) {
      c[j] = {net.fixed_weight(in[j]) * fw.values(i, net.source(in[j])), j};
    }
    // The k + 1 first in the order: the k-th and its neighbours.
    const std::size_t head = std::min(c.size(), k + 1);
    std::partial_sort(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(head), c.end(), before);
    pat.max_edges(i, v) = in[c[k - 1].second];
    double gap = std::numeric_limits<double>::infinity();
    if (k >= 2) {
      gap = c[k - 2].first - c[k - 1].first;
    }
    if (k < c.size()) {
      gap = std::min(gap, c[k - 1].first - c[k].first);
    }
    if (in.size() > 1 && gap < pat.margin) {
      pat.margin = gap;
      pat.margin_sample = i;
      pat.margin_node = v;
    }
  }
}

}  // namespace

ActivationPattern activation_pattern(const Network& net, const ForwardResult& fw) {
  const Index m = net.num_nodes();
  if (fw.pre_activations.cols() != m) {
    throw std::invalid_argument(
        fmt::format("the forward pass has {} node columns but the network has {} nodes",
                    fw.pre_activations.cols(), m));
  }
  const Index n = fw.pre_activations.rows();
  ActivationPattern pat;
  pat.slopes.resize(n, m);
  if (net.has_max_nodes()) {
    pat.max_edges.setConstant(n, m, -1);
  }
  for (NodeId v = 0; v < m; ++v) {
    double* __restrict s = pat.slopes.col(v).data();
    if (net.is_input(v)) {
      std::fill(s, s + n, 1.0);
      continue;
    }
    if (net.activation(v).kind == ActivationKind::max) {
      std::fill(s, s + n, 1.0);
      max_node_pattern(net, fw, v, pat);
      continue;
    }
    const Activation& act = net.activation(v);
    const double a = detail::lin_negative_slope(act);
    const double* __restrict pre = fw.pre_activations.col(v).data();
    for (Index i = 0; i < n; ++i) {
      s[i] = pre[i] > 0 ? 1.0 : a;
    }
    if (!detail::lin_is_kinked(act)) {
      continue;
    }
    for (Index i = 0; i < n; ++i) {
      if (std::abs(pre[i]) < pat.margin) {
        pat.margin = std::abs(pre[i]);
        pat.margin_sample = i;
        pat.margin_node = v;
      }
    }
  }
  pat.on_kink = pat.margin == 0.0;
  return pat;
}

namespace {

constexpr double k_unit_roundoff = 0x1p-53;

/// gamma_k = k u / (1 - k u), the relative error bound of a k-term dot product.
double gamma(Index k) {
  const double ku = static_cast<double>(k) * k_unit_roundoff;
  return ku / (1 - ku);
}

/// The exponent of the lowest set bit of a non-zero finite x: x is an odd integer times 2^that.
int low_exponent(double x) {
  int e = 0;
  const double f = std::frexp(std::abs(x), &e);  // |x| = f 2^e, f in [0.5, 1)
  const auto mantissa = static_cast<std::uint64_t>(std::ldexp(f, 53));
  return e - 53 + std::countr_zero(mantissa);
}

/// The rounding error bound of the dot product sum_t terms[t], whose terms' own products may
/// have rounded (`exact_products` false) and whose sum has `abs_sum` = sum |terms|: 0 when
/// every product is exact and every partial sum, in any order, lies on the terms' common
/// binary grid below 2^53 steps; gamma_{k+1} abs_sum otherwise.
double dot_rounding(std::span<const double> terms, bool exact_products, double abs_sum) {
  const double bound = gamma(static_cast<Index>(terms.size()) + 1) * abs_sum;
  if (!exact_products || abs_sum == 0) {
    return abs_sum == 0 ? 0.0 : bound;
  }
  int grid = std::numeric_limits<int>::max();
  for (const double t : terms) {
    if (t != 0) {
      grid = std::min(grid, low_exponent(t));
    }
  }
  const double upper = abs_sum * (1 + gamma(static_cast<Index>(terms.size()) + 1));
  return upper < std::ldexp(1.0, 53 + std::max(grid, -1000)) && grid > -1000 ? 0.0 : bound;
}

/// The slack of a bound computed in floating point: a few roundings of its own.
double rounded_up(double bound, Index terms) {
  return bound * (1 + gamma(2 * terms + 4));
}

}  // namespace

PatternCertificate certify_activation_pattern(const Network& net, std::span<const double> theta_in,
                                              const Eigen::Ref<const Eigen::MatrixXd>& X,
                                              const ForwardResult& fw,
                                              const ActivationPattern& pattern,
                                              const EngineOptions& options) {
  check_theta(net, theta_in);
  check_data(net, X);
  const Index n = X.rows();
  const Index m = net.num_nodes();
  if (fw.values.rows() != n || fw.values.cols() != m || pattern.slopes.rows() != n ||
      pattern.slopes.cols() != m) {
    throw std::invalid_argument(fmt::format(
        "the forward pass ({} x {}) and the pattern ({} x {}) must be n x m = {} x {}",
        fw.values.rows(), fw.values.cols(), pattern.slopes.rows(), pattern.slopes.cols(), n, m));
  }
  const detail::EdgeTheta<double> theta(net.parameter_map().get(), theta_in);
  const double* w = theta.data();
  const auto topo = net.topological_order();
  std::vector<PatternCertificate> found(static_cast<std::size_t>(n));

  detail::run_team(resolve_threads(options.threads), n * net.num_edges() > (Index{1} << 16), [&] {
    std::vector<double> err(static_cast<std::size_t>(m), 0.0);
    std::vector<double> terms;
    std::vector<std::pair<double, double>> candidates;  // (value, error bound) of a max node
    std::vector<double> sorted;
#pragma omp for schedule(dynamic, 16)
    for (Index i = 0; i < n; ++i) {
      PatternCertificate& cert = found[static_cast<std::size_t>(i)];
      const auto value = [&](NodeId u) { return fw.values(i, u); };
      const auto note = [&](NodeId v, double x, double bound) {
        if (cert.certified) {
          cert = {.certified = false, .sample = i, .node = v, .value = x, .error_bound = bound};
        }
        ++cert.uncertain;
      };
      for (const NodeId v : topo) {
        auto& e_v = err[static_cast<std::size_t>(v)];
        if (net.is_input(v)) {
          e_v = 0;
          continue;
        }
        const auto in = net.in_edges(v);
        const Activation& act = net.activation(v);
        if (act.kind == ActivationKind::max) {
          candidates.clear();
          double worst = 0;
          for (const EdgeId e : in) {
            const NodeId u = net.source(e);
            const double c = w[e] * value(u);
            const bool exact = std::fma(w[e], value(u), -c) == 0;
            const double bound = rounded_up(std::abs(w[e]) * err[static_cast<std::size_t>(u)] +
                                                (exact ? 0.0 : k_unit_roundoff * std::abs(c)),
                                            1);
            candidates.emplace_back(c, bound);
            worst = std::max(worst, bound);
          }
          e_v = worst;
          if (worst > 0 && in.size() > 1) {
            // The k-th largest and its neighbours in the order must be apart by more than two
            // error bounds for the chosen edge to be the exact one.
            sorted.resize(candidates.size());
            std::transform(candidates.begin(), candidates.end(), sorted.begin(),
                           [](const auto& c) { return c.first; });
            std::sort(sorted.begin(), sorted.end(), std::greater<>());
            const auto k = static_cast<std::size_t>(act.order);
            double gap = std::numeric_limits<double>::infinity();
            if (k >= 2) {
              gap = sorted[k - 2] - sorted[k - 1];
            }
            if (k < sorted.size()) {
              gap = std::min(gap, sorted[k - 1] - sorted[k]);
            }
            if (!(gap > 2 * worst)) {
              note(v, gap, 2 * worst);
            }
          }
          continue;
        }
        terms.clear();
        bool exact_products = true;
        double abs_sum = 0;
        double propagated = 0;
        for (const EdgeId e : in) {
          const NodeId u = net.source(e);
          const double t = w[e] * value(u);
          exact_products = exact_products && std::fma(w[e], value(u), -t) == 0;
          terms.push_back(t);
          abs_sum += std::abs(t);
          propagated += std::abs(w[e]) * err[static_cast<std::size_t>(u)];
        }
        const double pre_error =
            rounded_up(dot_rounding(terms, exact_products, abs_sum) + propagated,
                       static_cast<Index>(in.size()));
        const double pre = fw.pre_activations(i, v);
        const double a = detail::lin_negative_slope(act);
        if (detail::lin_is_kinked(act) && pre_error > 0 && !(std::abs(pre) > pre_error)) {
          note(v, pre, pre_error);
          e_v = std::max(1.0, std::abs(a)) * pre_error;  // either piece
        } else if (pre > 0 || a == 1.0) {
          e_v = pre_error;
        } else {
          const bool exact = std::fma(a, pre, -(a * pre)) == 0;
          e_v = rounded_up(
              std::abs(a) * pre_error + (exact ? 0.0 : k_unit_roundoff * std::abs(a * pre)), 1);
        }
      }
    }
  });
  PatternCertificate total;
  for (const PatternCertificate& c : found) {
    if (!c.certified && total.certified) {
      total = c;
      total.uncertain = 0;
    }
    total.uncertain += c.uncertain;
  }
  return total;
}

Eigen::MatrixXd random_data(const Network& net, Index n, std::uint64_t seed) {
  if (n < 0) {
    throw std::invalid_argument(fmt::format("random_data: n = {} is negative", n));
  }
  const auto r = static_cast<Index>(net.data_inputs().size());
  Eigen::MatrixXd X(n, r);
  detail::SplitMix64 rng(seed);
  for (Index i = 0; i < n; ++i) {  // sample by sample: the first k rows do not depend on n
    for (Index c = 0; c < r; ++c) {
      X(i, c) = rng.normal();
    }
  }
  return X;
}

}  // namespace pathlift
