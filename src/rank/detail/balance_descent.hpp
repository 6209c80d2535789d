#pragma once
// The descent of the balancing rescalings (balance.hpp): the classes' incident parameters, the
// weights the descent moves (theta_k^2 for ENorm, G_kk for PathCond) held as doubles or logs,
// and the damped Newton step on the log-scales that balance.cpp alternates with coordinate
// sweeps.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <span>
#include <tuple>
#include <vector>

#include "pathlift/options.hpp"
#include "pathlift/symmetry.hpp"
#include "pathlift/types.hpp"

namespace pathlift::detail {

/// The classes' incident parameters (CSR): into[h] (target h, source another class or pinned)
/// and out_of[h]; a parameter whose ends are one class does not move.
struct Incidence {
  Index classes = 0;
  std::vector<Index> in_off, in_list, out_off, out_list;
};

/// The incidence of the parameters with counted[k] != 0.
Incidence incidence(const ParameterClasses& pc, const std::vector<std::uint8_t>& counted);

inline constexpr double k_minus_inf = -std::numeric_limits<double>::infinity();

/// Neumaier's compensated sum: terms >= 0, relative error a few eps whatever their number.
class PositiveSum {
 public:
  void add(double x) {
    const double t = m_sum + x;
    m_carry += m_sum >= x ? (m_sum - t) + x : (x - t) + m_sum;
    m_sum = t;
  }
  [[nodiscard]] double value() const { return m_sum + m_carry; }

 private:
  double m_sum = 0;
  double m_carry = 0;
};

/// The sums of plain weights (positive terms) are taken in chunks of k_chunk terms: plain within
/// a chunk (vectorised; relative error below k_chunk eps), compensated across chunks
/// (PositiveSum), so that the error does not grow with the number of terms. A plain running sum
/// of regnet_x_8gf's 4e7 weights, spread over many binades, was off by up to 1e-10 of the total:
/// the stationarity's floor, where the descent crawled. Compensating every term instead cost a
/// quarter of resnet18's PathCond time.
inline constexpr std::size_t k_chunk = 256;

/// The sum of term(k) >= 0 over k in [a, b), in chunks of k_chunk terms (above).
template <class Term>
double chunked_sum(std::size_t a, std::size_t b, const Term& term) {
  PositiveSum sum;
  for (std::size_t c = a; c < b; c += k_chunk) {
    const std::size_t end = std::min(b, c + k_chunk);
    double chunk = 0;
    for (std::size_t k = c; k < end; ++k) {
      chunk += term(k);
    }
    sum.add(chunk);
  }
  return sum.value();
}

/// log(exp(a) + exp(b) + exp(c)).
inline double log_add(double a, double b, double c) {
  const double top = std::max({a, b, c});
  if (top == k_minus_inf) {
    return k_minus_inf;
  }
  return top + std::log(std::exp(a - top) + std::exp(b - top) + std::exp(c - top));
}

/// The positive weights w_k (0 allowed) of a balance, theta_k^2 or G_kk: plain doubles while every
/// nonzero one lies within 2^-960 .. 2^960 (a sum of up to 2^60 of them stays finite, a move by a
/// factor within 2^60 stays normal), logs from the first move that would leave that range (or
/// from the start). Sums come as logs either way, so that no square, ratio or discriminant of the
/// balance leaves float64; the logs cost an exp a term, only where the range needs them.
class Weights {
 public:
  /// w_k / exp(log_total) (0 below float64's range), `inv_total` = exp(-log_total): one
  /// product while that is a normal double (the plain weights' sum stays below 2^1021), else
  /// from the logs.
  [[nodiscard]] double share(Index k, double log_total, double inv_total) const {
    const double x = m_w[static_cast<std::size_t>(k)];
    if (m_logs) {
      return std::exp(x - log_total);
    }
    if (inv_total >= std::numeric_limits<double>::min() && std::isfinite(inv_total)) {
      return x * inv_total;
    }
    return x > 0 ? std::exp(std::log(x) - log_total) : 0.0;
  }

  /// theta_k^2.
  static Weights squares(std::span<const double> theta) {
    Weights w;
    w.m_w = Buffer<double>(theta.size());
    const bool fit = std::all_of(theta.begin(), theta.end(), [](double t) {
      return t == 0 || (std::fabs(t) >= 0x1p-480 && std::fabs(t) <= 0x1p480);
    });
    for (std::size_t k = 0; k < theta.size(); ++k) {
      w.m_w[k] = fit ? theta[k] * theta[k]
                     : (theta[k] == 0 ? k_minus_inf : 2 * std::log(std::fabs(theta[k])));
    }
    w.m_logs = !fit;
    return w;
  }
  /// The values themselves (finite, >= 0), taken over (no copy).
  static Weights values(Buffer<double>&& x) {
    Weights w;
    w.m_w = std::move(x);
    if (!std::all_of(w.m_w.begin(), w.m_w.end(), in_range)) {
      w.to_logs();
    }
    return w;
  }

  /// log(sum of w_k over the k with keep(k)): the same sums as log_sum, over every parameter.
  template <class Keep>
  [[nodiscard]] double log_sum_if(const Keep& keep) const {
    const std::size_t n = m_w.size();
    if (!m_logs) {
      return std::log(chunked_sum(0, n, [&](std::size_t k) { return keep(k) ? m_w[k] : 0.0; }));
    }
    double top = k_minus_inf;
    for (std::size_t k = 0; k < n; ++k) {
      top = keep(k) ? std::max(top, m_w[k]) : top;
    }
    if (top == k_minus_inf) {
      return k_minus_inf;
    }
    PositiveSum sum;
    for (std::size_t k = 0; k < n; ++k) {
      if (keep(k)) {
        sum.add(std::exp(m_w[k] - top));
      }
    }
    return top + std::log(sum.value());
  }

  /// log(sum of w[list[i]], i in [a, b)): -inf for no term or only zeros.
  [[nodiscard]] double log_sum(const std::vector<Index>& list, Index a, Index b) const {
    if (!m_logs) {
      // In chunks (k_chunk), each with four running sums (their indexed loads overlap).
      PositiveSum sum;
      for (Index c = a; c < b; c += static_cast<Index>(k_chunk)) {
        const Index end = std::min(b, c + static_cast<Index>(k_chunk));
        std::array<double, 4> lane{};
        Index i = c;
        for (; i + 4 <= end; i += 4) {
          for (std::size_t j = 0; j < 4; ++j) {
            lane[j] += m_w[static_cast<std::size_t>(list[static_cast<std::size_t>(i) + j])];
          }
        }
        for (; i < end; ++i) {
          lane[0] += m_w[static_cast<std::size_t>(list[static_cast<std::size_t>(i)])];
        }
        sum.add((lane[0] + lane[1]) + (lane[2] + lane[3]));
      }
      return std::log(sum.value());
    }
    double top = k_minus_inf;
    for (Index i = a; i < b; ++i) {
      top = std::max(top, m_w[static_cast<std::size_t>(list[static_cast<std::size_t>(i)])]);
    }
    if (top == k_minus_inf) {
      return k_minus_inf;
    }
    PositiveSum sum;
    for (Index i = a; i < b; ++i) {
      sum.add(std::exp(m_w[static_cast<std::size_t>(list[static_cast<std::size_t>(i)])] - top));
    }
    return top + std::log(sum.value());
  }

  /// log w_k (-inf for 0).
  [[nodiscard]] double log_of(Index k) const {
    const double x = m_w[static_cast<std::size_t>(k)];
    return m_logs ? x : (x > 0 ? std::log(x) : k_minus_inf);
  }

  /// log(sum_k w_k exp(e[target_k] - e[source_k])) over the k with keep[k] != 0 (every k when
  /// keep is null), e = 0 at a pinned end (-1): the total after a move of every class at once,
  /// without moving. In blocks of parameters on `threads` threads, summed in block order (the
  /// same sum for any thread count).
  [[nodiscard]] double log_sum_moved(const ParameterClasses& pc, const std::vector<double>& e,
                                     const std::vector<std::uint8_t>* keep, int threads) const;

  /// Every w_k times exp(e[target_k] - e[source_k]) (e = 0 at a pinned end).
  void move(const ParameterClasses& pc, const std::vector<double>& e, int threads);

  /// Back to plain doubles once every nonzero weight held as a log is within range again (a
  /// Newton step that took them out and the next one that brought them back): the sums are
  /// then gathers, not an exp a term.
  void compact();

  /// The weights into class h times exp(log_factor), those out of it divided by it.
  void scale(const Incidence& inc, std::size_t h, double log_factor) {
    if (!m_logs && std::fabs(log_factor) > 60 * std::numbers::ln2) {
      to_logs();
    }
    if (m_logs) {
      for (Index i = inc.in_off[h]; i < inc.in_off[h + 1]; ++i) {
        m_w[static_cast<std::size_t>(inc.in_list[static_cast<std::size_t>(i)])] += log_factor;
      }
      for (Index i = inc.out_off[h]; i < inc.out_off[h + 1]; ++i) {
        m_w[static_cast<std::size_t>(inc.out_list[static_cast<std::size_t>(i)])] -= log_factor;
      }
      return;
    }
    bool fit = true;
    for (const auto& [off, list, f] :
         {std::tuple{&inc.in_off, &inc.in_list, std::exp(log_factor)},
          std::tuple{&inc.out_off, &inc.out_list, std::exp(-log_factor)}}) {
      for (Index i = (*off)[h]; i < (*off)[h + 1]; ++i) {
        double& x = m_w[static_cast<std::size_t>((*list)[static_cast<std::size_t>(i)])];
        x *= f;  // normal: within 2^-1020 .. 2^1020
        fit &= in_range(x);
      }
    }
    if (!fit) {
      to_logs();
    }
  }

 private:
  static bool in_range(double x) { return (x == 0) | ((x >= 0x1p-960) & (x <= 0x1p960)); }

  void to_logs() {
    for (double& x : m_w) {
      x = x > 0 ? std::log(x) : k_minus_inf;
    }
    m_logs = true;
  }

  Buffer<double> m_w;
  bool m_logs = false;
};

/// The classes' incidence and their weights.
struct Descent {
  Incidence inc;
  Weights w;

  [[nodiscard]] double log_in(std::size_t h) const {
    return w.log_sum(inc.in_list, inc.in_off[h], inc.in_off[h + 1]);
  }
  [[nodiscard]] double log_out(std::size_t h) const {
    return w.log_sum(inc.out_list, inc.out_off[h], inc.out_off[h + 1]);
  }
  /// The weights into h times exp(log_factor), those out of it divided by it.
  void scale(std::size_t h, double log_factor) { w.scale(inc, h, log_factor); }
  /// log_in(h) and log_out(h) for every class, on `threads` threads.
  void class_logs(std::vector<double>& in, std::vector<double>& out, int threads) const;
  /// |out(h)| - |in(h)|.
  [[nodiscard]] double degree(std::size_t h) const {
    return static_cast<double>((inc.out_off[h + 1] - inc.out_off[h]) -
                               (inc.in_off[h + 1] - inc.in_off[h]));
  }
};

/// What the Newton step needs of the objective: F(alpha) = n log S + 2 sum_h alpha_h (|in_h| -
/// |out_h|) for PathCond (the weights G_kk scale as exp(-2 c_k): sigma = -1), F = log S for
/// ENorm (theta_k^2 as exp(2 c_k): sigma = 1, n = 0), S the sum of the counted weights.
struct NewtonObjective {
  double sigma = 1;
  double n = 0;
  const std::vector<std::uint8_t>* counted = nullptr;  ///< null: every parameter counts
};

/// The Newton step's Hessian M, kept from one step to the next: after a step accepted with the
/// class exponents `moved` (each weight times exp(moved[target] - moved[source])), the entry of
/// classes (i, j) gathers weights that all moved by one factor, so M's next values are its last
/// ones times that factor and the totals' ratio: O(nnz) instead of a pass over the incidence
/// with marks. Rebuilt when the free classes change, after a step that moved a class by more
/// than e^32 (an entry that underflowed could have grown), or when coordinate sweeps moved the
/// weights in between (`valid` cleared by a step that was refused).
struct NewtonCache {
  bool valid = false;
  bool mixed = false;  ///< an entry gathers weights into and out of its row's class: rebuild
  std::vector<std::size_t> free;
  std::vector<Index> off;
  std::vector<std::int32_t> col;  ///< free classes number below 2^31 (else no Newton step)
  std::vector<double> val;
  std::vector<std::int8_t> dir;  ///< +1: weights into the row's class, -1: out of it, 0: both
  std::vector<double> moved;     ///< the last accepted step's exponent per free class
  double log_total = 0;          ///< log S of `val`
  /// Frees the arrays (the coordinate sweeps run without them).
  void clear() { *this = NewtonCache{}; }
};

/// One damped Newton step on F over the free classes (some weight in and some out): with b_h
/// and c_h the shares of S into and out of h, M = T^T diag(w / S) T (T: parameters x classes,
/// +1 at a parameter's target, -1 at its source) and v = b - c, the Hessian is 4 n' (M - v v^T)
/// (n' = n, or 1 for ENorm) and the step solves (M - v v^T) delta = ((b - c) + deg / n) / 2
/// (PathCond, deg = |out| - |in|) or (c - b) / 2 (ENorm) by conjugate gradients preconditioned
/// by the diagonal, M held sparse (one entry per pair of classes a parameter joins), to the
/// relative residual `accuracy`; a backtracking line search (Armijo) on F. The weights and
/// alpha move by the step taken. Returns false, with nothing moved, when no step decreased F (a
/// minimum to rounding, or classes whose shares underflow: coordinate sweeps serve there).
/// TooLarge when M would exceed engine.max_memory. M is kept in `cache` for the next step.
/// Complexity: O(d) for M's first build and each trial of the line search, O(nnz(M)) for M's
/// update and a CG iteration; the passes over d and nnz on the engine's threads, each sum in a
/// fixed order (the same step for any thread count).
bool newton_step(Descent& descent, const ParameterClasses& pc, const NewtonObjective& objective,
                 NewtonCache& cache, std::vector<double>& alpha, double accuracy,
                 const EngineOptions& engine);

}  // namespace pathlift::detail
