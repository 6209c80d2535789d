#include "pathlift/balance.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "pathlift/path_free.hpp"
#include "pathlift/symmetry.hpp"

namespace pathlift {

namespace {

/// The classes' incident parameters (CSR): into[h] (target h, source another class or pinned)
/// and out_of[h]; a parameter whose ends are one class does not move.
struct Incidence {
  Index classes = 0;
  std::vector<Index> in_off, in_list, out_off, out_list;
};

Incidence incidence(const ParameterClasses& pc, const std::vector<std::uint8_t>& counted) {
  Incidence inc;
  inc.classes = pc.classes;
  const auto n = static_cast<std::size_t>(pc.classes);
  inc.in_off.assign(n + 1, 0);
  inc.out_off.assign(n + 1, 0);
  const auto moves = [&](std::size_t k) { return counted[k] != 0 && pc.target[k] != pc.source[k]; };
  for (std::size_t k = 0; k < pc.target.size(); ++k) {
    if (moves(k) && pc.target[k] >= 0) {
      ++inc.in_off[static_cast<std::size_t>(pc.target[k]) + 1];
    }
    if (moves(k) && pc.source[k] >= 0) {
      ++inc.out_off[static_cast<std::size_t>(pc.source[k]) + 1];
    }
  }
  for (std::size_t h = 0; h < n; ++h) {
    inc.in_off[h + 1] += inc.in_off[h];
    inc.out_off[h + 1] += inc.out_off[h];
  }
  inc.in_list.resize(static_cast<std::size_t>(inc.in_off[n]));
  inc.out_list.resize(static_cast<std::size_t>(inc.out_off[n]));
  std::vector<Index> in_at(inc.in_off.begin(), inc.in_off.end() - 1);
  std::vector<Index> out_at(inc.out_off.begin(), inc.out_off.end() - 1);
  for (std::size_t k = 0; k < pc.target.size(); ++k) {
    if (moves(k) && pc.target[k] >= 0) {
      inc.in_list[static_cast<std::size_t>(in_at[static_cast<std::size_t>(pc.target[k])]++)] =
          static_cast<Index>(k);
    }
    if (moves(k) && pc.source[k] >= 0) {
      inc.out_list[static_cast<std::size_t>(out_at[static_cast<std::size_t>(pc.source[k])]++)] =
          static_cast<Index>(k);
    }
  }
  return inc;
}

/// The classes of the model, refusing coupled ones.
ParameterClasses classes_of(const Model& model, const EngineOptions& engine, const char* what) {
  ParameterClasses pc = parameter_classes(model, engine);
  if (pc.constraints > 0) {
    throw std::invalid_argument(fmt::format(
        "{}: {} constraints couple the rescaling classes (weights shared between layers); each "
        "class must rescale on its own",
        what, pc.constraints));
  }
  return pc;
}

/// sum over the parameters of w_k, and per class the sums into and out of it.
double sum_of(const std::vector<double>& w, const std::vector<Index>& list, Index a, Index b) {
  double s = 0;
  for (Index i = a; i < b; ++i) {
    s += w[static_cast<std::size_t>(list[static_cast<std::size_t>(i)])];
  }
  return s;
}

/// Multiplies the weights into class h by f and those out of it by 1 / f.
void scale_class(std::vector<double>& w, const Incidence& inc, std::size_t h, double f) {
  for (Index i = inc.in_off[h]; i < inc.in_off[h + 1]; ++i) {
    w[static_cast<std::size_t>(inc.in_list[static_cast<std::size_t>(i)])] *= f;
  }
  for (Index i = inc.out_off[h]; i < inc.out_off[h + 1]; ++i) {
    w[static_cast<std::size_t>(inc.out_list[static_cast<std::size_t>(i)])] /= f;
  }
}

/// theta_k exp(alpha[target] - alpha[source]).
std::vector<double> rescaled(std::span<const double> theta, const ParameterClasses& pc,
                             const std::vector<double>& alpha) {
  std::vector<double> out(theta.begin(), theta.end());
  for (std::size_t k = 0; k < out.size(); ++k) {
    const double at = pc.target[k] >= 0 ? alpha[static_cast<std::size_t>(pc.target[k])] : 0.0;
    const double as = pc.source[k] >= 0 ? alpha[static_cast<std::size_t>(pc.source[k])] : 0.0;
    out[k] *= std::exp(at - as);
  }
  return out;
}

}  // namespace

BalanceReport enorm(const Model& model, std::span<const double> theta,
                    const BalanceOptions& options) {
  check_theta(model, theta);
  const ParameterClasses pc = classes_of(model, options.engine, "enorm");
  const std::vector<std::uint8_t> all(theta.size(), 1);
  const Incidence inc = incidence(pc, all);
  std::vector<double> w(theta.size());  // theta_k^2 after rescaling
  for (std::size_t k = 0; k < w.size(); ++k) {
    w[k] = theta[k] * theta[k];
  }
  BalanceReport r;
  r.classes = pc.classes;
  r.log_scales.assign(static_cast<std::size_t>(pc.classes), 0.0);
  for (const double x : w) {
    r.criterion_before += x;
  }
  const auto n = static_cast<std::size_t>(pc.classes);
  for (; r.sweeps < options.max_sweeps && !r.converged; ++r.sweeps) {
    double moved = 0;
    for (std::size_t h = 0; h < n; ++h) {
      const double in = sum_of(w, inc.in_list, inc.in_off[h], inc.in_off[h + 1]);
      const double out = sum_of(w, inc.out_list, inc.out_off[h], inc.out_off[h + 1]);
      if (!(in > 0) || !(out > 0)) {
        continue;
      }
      // in lambda^2 + out lambda^-2 is least at lambda^4 = out / in.
      const double delta = 0.25 * std::log(out / in);
      r.log_scales[h] += delta;
      scale_class(w, inc, h, std::exp(2 * delta));
      moved = std::max(moved, std::fabs(delta));
    }
    r.converged = moved <= options.tolerance;
  }
  for (std::size_t h = 0; h < n; ++h) {
    const double in = sum_of(w, inc.in_list, inc.in_off[h], inc.in_off[h + 1]);
    const double out = sum_of(w, inc.out_list, inc.out_off[h], inc.out_off[h + 1]);
    if (in > 0 && out > 0) {
      r.stationarity = std::max(r.stationarity, std::fabs(in - out) / (in + out));
    }
  }
  r.theta = rescaled(theta, pc, r.log_scales);
  for (const double x : r.theta) {
    r.criterion_after += x * x;
  }
  return r;
}

BalanceReport path_cond(const Model& model, std::span<const double> theta,
                        const BalanceOptions& options) {
  check_theta(model, theta);
  const ParameterClasses pc = classes_of(model, options.engine, "path_cond");
  const Buffer<double> diag = kernel_diagonal(model, theta, options.engine);
  std::vector<double> w(diag.begin(), diag.end());  // G_kk after rescaling
  std::vector<std::uint8_t> counted(w.size(), 0);
  double count = 0;
  for (std::size_t k = 0; k < w.size(); ++k) {
    counted[k] = w[k] > 0 ? 1 : 0;
    count += counted[k];
  }
  const Incidence inc = incidence(pc, counted);
  const auto criterion = [&](const std::vector<double>& g) {
    double total = 0;
    double logs = 0;
    for (std::size_t k = 0; k < g.size(); ++k) {
      if (counted[k] != 0) {
        total += g[k];
        logs += std::log(g[k]);
      }
    }
    return count * std::log(total) - logs;
  };
  double total = 0;
  for (std::size_t k = 0; k < w.size(); ++k) {
    total += counted[k] != 0 ? w[k] : 0.0;
  }
  BalanceReport r;
  r.classes = pc.classes;
  r.log_scales.assign(static_cast<std::size_t>(pc.classes), 0.0);
  r.criterion_before = criterion(w);
  const auto n = static_cast<std::size_t>(pc.classes);
  const auto degree = [&](std::size_t h) {  // |out(h)| - |in(h)|
    return static_cast<double>((inc.out_off[h + 1] - inc.out_off[h]) -
                               (inc.in_off[h + 1] - inc.in_off[h]));
  };
  for (; r.sweeps < options.max_sweeps && !r.converged; ++r.sweeps) {
    double moved = 0;
    for (std::size_t h = 0; h < n; ++h) {
      const double b = sum_of(w, inc.in_list, inc.in_off[h], inc.in_off[h + 1]);
      const double c = sum_of(w, inc.out_list, inc.out_off[h], inc.out_off[h + 1]);
      if (!(b > 0) || !(c > 0)) {
        continue;
      }
      const double a = std::max(0.0, total - b - c);
      const double m = degree(h);
      // With x = exp(2 delta): into h the G_kk are divided by x, out of it multiplied by x;
      // the derivative of n log(a + b / x + c x) + m log(1 / x)... vanishes where
      // (n - m) c x^2 - m a x - (n + m) b = 0 (its positive root).
      const double qa = (count - m) * c;
      const double qb = -m * a;
      const double qc = -(count + m) * b;
      if (!(qa > 0)) {
        continue;
      }
      const double x = (-qb + std::sqrt(qb * qb - 4 * qa * qc)) / (2 * qa);
      if (!(x > 0) || !std::isfinite(x)) {
        continue;
      }
      const double delta = 0.5 * std::log(x);
      r.log_scales[h] += delta;
      scale_class(w, inc, h, 1.0 / x);
      total += b / x + c * x - b - c;
      moved = std::max(moved, std::fabs(delta));
    }
    r.converged = moved <= options.tolerance;
    // Refresh the running total (rounding drift).
    total = 0;
    for (std::size_t k = 0; k < w.size(); ++k) {
      total += counted[k] != 0 ? w[k] : 0.0;
    }
  }
  for (std::size_t h = 0; h < n; ++h) {
    const double b = sum_of(w, inc.in_list, inc.in_off[h], inc.in_off[h + 1]);
    const double c = sum_of(w, inc.out_list, inc.out_off[h], inc.out_off[h + 1]);
    if (b > 0 && c > 0) {
      const double left = count * (c - b) / total;
      r.stationarity = std::max(
          r.stationarity, std::fabs(left - degree(h)) / std::max(1.0, count * (c + b) / total));
    }
  }
  r.criterion_after = criterion(w);
  r.theta = rescaled(theta, pc, r.log_scales);
  return r;
}

}  // namespace pathlift
