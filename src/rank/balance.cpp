#include "pathlift/balance.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numbers>
#include <numeric>
#include <span>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

#include "pathlift/error.hpp"
#include "pathlift/limits.hpp"

#include "pathlift/path_free.hpp"
#include "pathlift/symmetry.hpp"
#include "src/core/json.hpp"
#include "src/rank/detail/balance_descent.hpp"
#include "src/rank/detail/model_classes.hpp"

namespace pathlift {

namespace {

using detail::Descent;
using detail::k_minus_inf;
using detail::log_add;
using detail::Weights;

/// The log sums of each class's incoming and outgoing weights, buffers kept between the
/// descent's stationarity checks.
struct ClassSums {
  std::vector<double> ins;
  std::vector<double> outs;

  /// The largest of f(log in, log out, class) over the classes with weight on both sides.
  template <class F>
  double worst(const Descent& g, int threads, F f) {
    g.class_logs(ins, outs, threads);
    double most = 0;
    for (std::size_t h = 0; h < ins.size(); ++h) {
      if (ins[h] != k_minus_inf && outs[h] != k_minus_inf) {
        most = std::max(most, f(ins[h], outs[h], h));
      }
    }
    return most;
  }
};

/// The bytes of incidence(pc, every parameter counted): its offsets and lists.
double incidence_bytes(const ParameterClasses& pc) {
  double entries = 0;
  for (std::size_t k = 0; k < pc.target.size(); ++k) {
    if (pc.target[k] != pc.source[k]) {
      entries += (pc.target[k] >= 0 ? 1.0 : 0.0) + (pc.source[k] >= 0 ? 1.0 : 0.0);
    }
  }
  return (entries + 2.0 * static_cast<double>(pc.classes + 1)) * sizeof(Index);
}

/// Refuses a balance whose arrays would not fit beside what the caller holds: the classes
/// (target and source, held throughout), the incidence, the weights and the flags, then the
/// rescaled theta (made once the incidence and the weights are released). Returns the bytes
/// the classes hold, which the kernel diagonal's own work leaves aside.
struct BalanceMemory {
  double classes = 0;  ///< the classes' target and source, held throughout
  double descent = 0;  ///< the incidence, the weights and the flags, during the descent
};

BalanceMemory require_balance_memory(const ParameterClasses& pc, const EngineOptions& engine,
                                     const char* what) {
  const auto d = static_cast<double>(pc.target.size());
  BalanceMemory m;
  m.classes = 2 * d * sizeof(Index);
  m.descent = incidence_bytes(pc) + d * sizeof(double) + 2 * d;  // + flags, marks
  require_bytes(m.classes + std::max(m.descent, d * sizeof(double)), engine.max_memory,
                fmt::format("{} on d = {} parameters in {} classes (the classes, their incidence, "
                            "the weights, then the rescaled theta)",
                            what, pc.target.size(), pc.classes));
  return m;
}

/// `engine` with `held` bytes fewer to spend (what a caller keeps while it calls).
EngineOptions leaving(const EngineOptions& engine, double held) {
  EngineOptions out = engine;
  const auto limit = static_cast<double>(effective_max_memory(engine.max_memory));
  out.max_memory = static_cast<std::size_t>(std::max(limit - held, 1.0));
  return out;
}

/// The classes of the model (detail::independent_classes: a layer graph's, or its unrolled
/// network's where only unrolling merges its constraints), refusing coupled ones.
ParameterClasses classes_of(const Model& model, const EngineOptions& engine, const char* what) {
  ParameterClasses pc = detail::independent_classes(model, engine).classes;
  if (pc.constraints > 0) {
    throw std::invalid_argument(fmt::format(
        "{}: {} constraints couple the rescaling classes (a parameter whose edges join different "
        "pairs of classes, as weights shared between layers do), so they cannot rescale one by "
        "one; PathCond and ENorm rescale independent classes only",
        what, pc.constraints));
  }
  return pc;
}

/// step() (a Newton step), or false, with `fits` cleared, when its Hessian would not fit in the
/// memory limit: the coordinate sweeps then carry the descent alone. The Hessian kept in
/// `cache` is released when no step was taken (the sweeps that follow run without it).
template <class Step>
bool newton_or_not(bool& fits, detail::NewtonCache& cache, const Step& step) {
  bool moved = false;
  try {
    moved = step();
  } catch (const TooLarge&) {
    fits = false;
  }
  if (!moved) {
    cache.clear();
  }
  return moved;
}

/// The conjugate gradients' relative residual for a Newton step at stationarity s: 1e-2 s (the
/// steps then converge quadratically; a looser 0.1 far from the minimum took more steps of
/// about as many iterations on resnet50), but no tighter than the tolerance needs (0.1 tol / s:
/// the step reduces s by about that factor).
double forcing(double s, double tolerance) {
  return std::min(1e-2, std::max(1e-2 * s, 0.1 * tolerance / s));
}

/// The descent until its stationarity (`stationarity()`, the largest relative violation of the
/// optimum's condition over the classes) is within the tolerance, or max_sweeps iterations are
/// made. An iteration is a damped Newton step on the log-scales (`newton(stationarity)`: about
/// eight take a ResNet from PyTorch's initialisation to 1e-10, where coordinate descent crawled
/// along the layers' chains and stopped at 1,000 sweeps), or, where Newton cannot decrease the
/// objective (classes whose shares of the total underflow, a minimum to rounding), a sweep of
/// coordinate descent (`step(h)`: class h to its exact minimiser; its move returned), whose
/// per-class minimisers see any magnitude.
template <class Newton, class Step, class Stationarity>
void descend(BalanceReport& r, Index classes, const BalanceOptions& options, const Newton& newton,
             const Step& step, const Stationarity& stationarity) {
  const auto n = static_cast<std::size_t>(classes);
  r.stationarity = stationarity();
  r.converged = r.stationarity <= options.tolerance;
  while (!r.converged && r.sweeps < options.max_sweeps) {
    double moved = 1.0;
    if (!newton(r.stationarity)) {
      moved = 0;
      for (std::size_t h = 0; h < n; ++h) {
        moved = std::max(moved, std::fabs(step(h)));
      }
    }
    ++r.sweeps;
    r.stationarity = stationarity();
    r.converged = r.stationarity <= options.tolerance;
    if (moved == 0) {
      break;  // a fixed point to rounding: nothing more to gain
    }
  }
}

/// theta_k exp(alpha[target] - alpha[source]), the factor split as exp(rest) 2^q so that no
/// intermediate leaves float64; RangeError naming the first entry that does (a rescaled weight
/// beyond float64, or a nonzero one below its normal range, would change the function).
std::vector<double> rescaled(std::span<const double> theta, const ParameterClasses& pc,
                             const std::vector<double>& alpha, const char* what) {
  std::vector<double> out(theta.begin(), theta.end());
  for (std::size_t k = 0; k < out.size(); ++k) {
    const double at = pc.target[k] >= 0 ? alpha[static_cast<std::size_t>(pc.target[k])] : 0.0;
    const double as = pc.source[k] >= 0 ? alpha[static_cast<std::size_t>(pc.source[k])] : 0.0;
    const double c = at - as;
    if (c == 0 || out[k] == 0) {
      continue;
    }
    const double q = std::nearbyint(c / std::numbers::ln2);
    const double rest = c - q * std::numbers::ln2;
    // From theta_k's mantissa: a subnormal theta_k times exp(rest) would round to its few bits.
    int e = 0;
    const double m = std::frexp(out[k], &e);
    const double scaled =
        std::ldexp(m * std::exp(rest), static_cast<int>(std::clamp(q + e, -1e5, 1e5)));
    if (!std::isfinite(scaled) || !std::isnormal(scaled)) {
      const double log10 = (std::log(std::fabs(out[k])) + c) / std::numbers::ln10;
      throw RangeError(fmt::format(
          "{}: the rescaled theta[{}] = {} x exp({:.6g}) = 10^{:.2f} is beyond float64's normal "
          "range ({:.1e} to {:.1e}); the rescaling is not written",
          what, k, out[k], c, log10, std::numeric_limits<double>::min(),
          std::numeric_limits<double>::max()));
    }
    out[k] = scaled;
  }
  return out;
}

/// PathCond's class minimiser: log y for the positive root y of
/// (n - m) y^2 - m t y - (n + m) = 0, t = exp(log_t) >= 0 (n - m >= 1, n + m >= 1), without
/// cancellation (the root's rationalised form where m t > 0 would cancel) or overflow (the
/// asymptotic form where t is beyond float64's squares).
double pathcond_log_root(double n, double m, double log_t) {
  if (m == 0) {
    return 0.5 * std::log((n + m) / (n - m));
  }
  if (log_t > 600) {  // m^2 t^2 dominates 4 (n - m)(n + m) by a factor beyond 1e500
    return m > 0 ? std::log(m / (n - m)) + log_t : std::log((n + m) / -m) - log_t;
  }
  const double mt = std::fabs(m) * std::exp(log_t);
  const double root = std::hypot(mt, 2 * std::sqrt((n - m) * (n + m)));
  return m > 0 ? std::log((mt + root) / (2 * (n - m))) : std::log(2 * (n + m) / (mt + root));
}

}  // namespace

void check_balance_options(const BalanceOptions& options) {
  if (options.max_sweeps < 0) {
    throw std::invalid_argument(
        fmt::format("max_sweeps must be >= 0 (got {})", options.max_sweeps));
  }
  if (!(options.tolerance >= 0) || !std::isfinite(options.tolerance)) {
    throw std::invalid_argument(
        fmt::format("the tolerance must be a finite number >= 0 (got {})", options.tolerance));
  }
}

namespace {

/// Where enorm and path_cond start: the options and theta checked, the parameter classes, the
/// memory the descent needs (refused beyond the limit), and a report with every class at
/// log-scale 0. Read by its members (s.pc, s.report), not as a structured binding: the descent's
/// lambdas read them, and clang 14 (the fuzz build) does not capture a binding.
struct BalanceStart {
  ParameterClasses pc;
  BalanceMemory memory;
  BalanceReport report;
};

BalanceStart balance_start(const Model& model, std::span<const double> theta,
                           const BalanceOptions& options, const char* what) {
  check_balance_options(options);
  check_theta(model, theta);
  ParameterClasses pc = classes_of(model, options.engine, what);
  const BalanceMemory memory = require_balance_memory(pc, options.engine, what);
  BalanceReport r;
  r.classes = pc.classes;
  r.log_scales.assign(static_cast<std::size_t>(pc.classes), 0.0);
  return {std::move(pc), memory, std::move(r)};
}

}  // namespace

BalanceReport enorm(const Model& model, std::span<const double> theta,
                    const BalanceOptions& options) {
  BalanceStart s = balance_start(model, theta, options, "enorm");
  {
    std::vector<std::uint8_t> all(theta.size(), 1);
    Descent g{detail::incidence(s.pc, all), Weights::squares(theta)};
    all = {};
    const auto criterion = [&] {
      return std::exp(g.w.log_sum_if([](std::size_t) { return true; }));
    };
    s.report.criterion_before = criterion();
    const auto step = [&](std::size_t h) {
      const double in = g.log_in(h);
      const double out = g.log_out(h);
      if (in == k_minus_inf || out == k_minus_inf) {
        return 0.0;  // nothing in or nothing out: left alone
      }
      // in lambda^2 + out lambda^-2 is least at lambda^4 = out / in.
      const double delta = 0.25 * (out - in);
      s.report.log_scales[h] += delta;
      g.scale(h, 2 * delta);
      return delta;
    };
    ClassSums sums;
    const auto stationarity = [&] {
      return sums.worst(g, resolve_threads(options.engine.threads),
                        [](double in, double out, std::size_t) {
                          return std::fabs(std::tanh(0.5 * (in - out)));  // |in - out| / (in + out)
                        });
    };
    bool fits = true;  // Newton's Hessian within the memory limit
    detail::NewtonCache cache;
    const auto newton = [&](double stationarity_now) {
      return fits && newton_or_not(fits, cache, [&] {
               return detail::newton_step(
                   g, s.pc, {1.0, 0.0, nullptr}, cache, s.report.log_scales,
                   forcing(stationarity_now, options.tolerance),
                   leaving(options.engine, s.memory.classes + s.memory.descent));
             });
    };
    descend(s.report, s.pc.classes, options, newton, step, stationarity);
    s.report.criterion_after = criterion();
  }  // the incidence and the weights released before the rescaled theta is made
  s.report.theta = rescaled(theta, s.pc, s.report.log_scales, "enorm");
  return std::move(s.report);
}

BalanceReport path_cond(const Model& model, std::span<const double> theta,
                        const BalanceOptions& options) {
  BalanceStart s = balance_start(model, theta, options, "path_cond");
  Buffer<double> diag = kernel_diagonal(model, theta, leaving(options.engine, s.memory.classes));
  {
    std::vector<std::uint8_t> counted(diag.size(), 0);  // G_kk > 0; 2 once marked (log_rest)
    double count = 0;                                   // n
    for (std::size_t k = 0; k < diag.size(); ++k) {
      counted[k] = diag[k] > 0 ? 1 : 0;
      count += counted[k];
    }
    Descent g{detail::incidence(s.pc, counted), Weights::values(std::move(diag))};
    const auto log_total = [&] {
      return g.w.log_sum_if([&](std::size_t k) { return counted[k] != 0; });
    };
    // n log(sum_k G_kk) - sum_k log G_kk over the counted parameters (0 when none is).
    const auto criterion = [&] {
      if (count == 0) {
        return 0.0;
      }
      double logs = 0;
      for (std::size_t k = 0; k < counted.size(); ++k) {
        logs += counted[k] != 0 ? g.w.log_of(static_cast<Index>(k)) : 0.0;
      }
      return count * log_total() - logs;
    };
    s.report.criterion_before = criterion();
    double lt = log_total();  // log sum_k G_kk, kept through the sweep
    // The rest A = total - B - C of class h, exactly where the subtraction would cancel (B + C
    // holds all but 1e-3 of the total: at most two classes a sweep, as each parameter is into
    // one class and out of another): the parameters of h marked 2 in `counted` for the sum.
    const auto log_rest = [&](std::size_t h, double lb, double lc) {
      const double part = std::exp(lb - lt) + std::exp(lc - lt);
      if (part < 1 - 1e-3) {
        return lt + std::log1p(-part);
      }
      const auto mark = [&](std::uint8_t value) {
        for (const auto& [off, list] : {std::pair{&g.inc.in_off, &g.inc.in_list},
                                        std::pair{&g.inc.out_off, &g.inc.out_list}}) {
          for (Index i = (*off)[h]; i < (*off)[h + 1]; ++i) {
            counted[static_cast<std::size_t>((*list)[static_cast<std::size_t>(i)])] = value;
          }
        }
      };
      mark(2);
      const double rest = g.w.log_sum_if([&](std::size_t k) { return counted[k] == 1; });
      mark(1);
      return rest;
    };
    const auto step = [&](std::size_t h) {
      const double lb = g.log_in(h);
      const double lc = g.log_out(h);
      if (lb == k_minus_inf || lc == k_minus_inf) {
        return 0.0;  // nothing in or nothing out: left alone
      }
      const double la = log_rest(h, lb, lc);
      // With x = exp(2 delta): into h the G_kk are divided by x, out of it multiplied by x; the
      // derivative of n log(A + B / x + C x) + m log(1 / x) vanishes where
      // (n - m) C x^2 - m A x - (n + m) B = 0. With x = sqrt(B / C) y and t = A / sqrt(B C):
      // (n - m) y^2 - m t y - (n + m) = 0.
      const double log_x =
          0.5 * (lb - lc) + pathcond_log_root(count, g.degree(h), la - 0.5 * (lb + lc));
      const double delta = 0.5 * log_x;
      s.report.log_scales[h] += delta;
      g.scale(h, -log_x);
      lt = log_add(la, lb - log_x, lc + log_x);
      return delta;
    };
    ClassSums sums;
    const auto stationarity = [&] {
      lt = log_total();  // afresh: the running total drifts by rounding
      return sums.worst(
          g, resolve_threads(options.engine.threads), [&](double lb, double lc, std::size_t h) {
            const double b = std::exp(lb - lt);
            const double c = std::exp(lc - lt);
            return std::fabs(count * (c - b) - g.degree(h)) / std::max(1.0, count * (c + b));
          });
    };
    bool fits = true;  // Newton's Hessian within the memory limit
    detail::NewtonCache cache;
    const auto newton = [&](double stationarity_now) {
      const bool moved = fits && newton_or_not(fits, cache, [&] {
                           return detail::newton_step(
                               g, s.pc, {-1.0, count, &counted}, cache, s.report.log_scales,
                               forcing(stationarity_now, options.tolerance),
                               leaving(options.engine, s.memory.classes + s.memory.descent));
                         });
      lt = log_total();
      return moved;
    };
    descend(s.report, s.pc.classes, options, newton, step, stationarity);
    s.report.criterion_after = criterion();
  }  // the incidence, the weights and the flags released before the rescaled theta is made
  s.report.theta = rescaled(theta, s.pc, s.report.log_scales, "path_cond");
  return std::move(s.report);
}

std::string to_json(const BalanceReport& report, int indent) {
  detail::Json j;
  PATHLIFT_JSON_MEMBERS(j, report, classes, sweeps, converged, criterion_before, criterion_after,
                        stationarity);
  return j.dump(indent);
}

}  // namespace pathlift
