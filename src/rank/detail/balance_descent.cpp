// The balancing descent's incidence and Newton step (balance_descent.hpp).

#include "src/rank/detail/balance_descent.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "pathlift/limits.hpp"
#include "src/core/detail/parallel.hpp"

namespace pathlift::detail {

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

namespace {

/// The least share of the total into and out of a class that the Newton step moves.
constexpr double k_least_share = 0x1p-500;
/// The longest move of a class's log-scale in one Newton step.
constexpr double k_longest_step = 256.0;

/// The Hessian's sparse part M over the free classes (CSR, one entry per pair of free classes
/// that a parameter joins, the diagonal first in each row).
struct SparseM {
  std::vector<Index> off;
  std::vector<Index> col;
  std::vector<double> val;

  /// y = M x.
  void apply(const std::vector<double>& x, std::vector<double>& y) const {
    const std::size_t rows = off.size() - 1;
    for (std::size_t i = 0; i < rows; ++i) {
      double s = 0;
      for (Index e = off[i]; e < off[i + 1]; ++e) {
        s += val[static_cast<std::size_t>(e)] *
             x[static_cast<std::size_t>(col[static_cast<std::size_t>(e)])];
      }
      y[i] = s;
    }
  }
};

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    s += a[i] * b[i];
  }
  return s;
}

}  // namespace

bool newton_step(Descent& descent, const ParameterClasses& pc, const NewtonObjective& objective,
                 std::vector<double>& alpha, double accuracy, const EngineOptions& engine) {
  const Incidence& inc = descent.inc;
  const auto classes = static_cast<std::size_t>(inc.classes);
  const std::vector<std::uint8_t>* counted = objective.counted;
  const double log_total =
      descent.w.log_sum_if([&](std::size_t k) { return counted == nullptr || (*counted)[k] != 0; });
  if (!std::isfinite(log_total)) {
    return false;
  }
  // The shares into and out of each class; the free classes (both > 0) and their numbering.
  std::vector<double> b(classes);
  std::vector<double> c(classes);
  std::vector<Index> free_of(classes, -1);
  std::vector<std::size_t> free;
  for (std::size_t h = 0; h < classes; ++h) {
    b[h] = std::exp(descent.log_in(h) - log_total);
    c[h] = std::exp(descent.log_out(h) - log_total);
    // A class whose share in or out is below 2^-500 stays where it is (the coordinate sweeps,
    // which see any magnitude, move it): the conjugate gradients' products and quotients of
    // such shares would leave float64's range.
    if (b[h] >= k_least_share && c[h] >= k_least_share) {
      free_of[h] = static_cast<Index>(free.size());
      free.push_back(h);
    }
  }
  const std::size_t nf = free.size();
  if (nf == 0) {
    return false;
  }
  const bool pathcond = objective.n > 0;
  // The other end of a parameter of class h, when it is a free class: its free index, else -1.
  const auto other_end = [&](Index k, bool into) {
    const Index o =
        into ? pc.source[static_cast<std::size_t>(k)] : pc.target[static_cast<std::size_t>(k)];
    return o >= 0 ? free_of[static_cast<std::size_t>(o)] : Index{-1};
  };
  // M's pattern first (its size checked against the memory limit), then its values; rows in
  // blocks on the engine's threads, each row summed in the incidence's order (the same M for
  // any thread count).
  constexpr Index rows_a_block = 256;
  const auto blocks = static_cast<Index>((nf + rows_a_block - 1) / rows_a_block);
  // Each thread's marks: stamp[j] = the row that last met class j, slot[j] = where it sits.
  struct Marks {
    std::size_t n;
    std::vector<Index> stamp, slot;
    void init() {
      stamp.assign(n, -1);
      slot.assign(n, 0);
    }
  };
  // Calls meet(j, k) for each parameter k of free row i's class (h), j its other end's free
  // index (first meeting of j in this row: new_entry true).
  const auto for_row = [&](std::size_t i, Marks& marks, const auto& meet) {
    const std::size_t h = free[i];
    for (const bool into : {true, false}) {
      const auto& off = into ? inc.in_off : inc.out_off;
      const auto& list = into ? inc.in_list : inc.out_list;
      for (Index e = off[h]; e < off[h + 1]; ++e) {
        const Index k = list[static_cast<std::size_t>(e)];
        const Index j = other_end(k, into);
        if (j < 0) {
          continue;
        }
        const auto ju = static_cast<std::size_t>(j);
        const bool first = marks.stamp[ju] != static_cast<Index>(i);
        marks.stamp[ju] = static_cast<Index>(i);
        meet(ju, k, first);
      }
    }
  };
  const int threads = engine.threads;
  SparseM m;
  m.off.assign(nf + 1, 0);
  struct Count : Marks {
    const decltype(for_row)* row;
    SparseM* m;
    std::size_t nf;
    void operator()(Index block) {
      const auto a = static_cast<std::size_t>(block * rows_a_block);
      for (std::size_t i = a; i < std::min(nf, a + static_cast<std::size_t>(rows_a_block)); ++i) {
        Index entries = 1;
        (*row)(i, *this, [&](std::size_t, Index, bool first) { entries += first ? 1 : 0; });
        m->off[i + 1] = entries;
      }
    }
  };
  parallel_for(blocks, threads, Count{{nf, {}, {}}, &for_row, &m, nf});
  for (std::size_t i = 0; i < nf; ++i) {
    m.off[i + 1] += m.off[i];
  }
  const auto nnz = static_cast<std::size_t>(m.off[nf]);
  require_bytes(
      static_cast<double>(nnz) * (sizeof(Index) + sizeof(double)) +
          8.0 * static_cast<double>(nf) * sizeof(double),
      engine.max_memory,
      fmt::format("the balance's Newton step ({} classes, a Hessian of {} entries)", nf, nnz));
  m.col.resize(nnz);
  m.val.resize(nnz);
  const double inv_total = std::exp(-log_total);
  struct Fill : Marks {
    const decltype(for_row)* row;
    SparseM* m;
    std::size_t nf;
    const std::vector<std::size_t>* free;
    const std::vector<double>* b;
    const std::vector<double>* c;
    const Weights* w;
    double log_total, inv_total;
    void operator()(Index block) {
      const auto a = static_cast<std::size_t>(block * rows_a_block);
      for (std::size_t i = a; i < std::min(nf, a + static_cast<std::size_t>(rows_a_block)); ++i) {
        const std::size_t h = (*free)[i];
        Index at = m->off[i];
        m->col[static_cast<std::size_t>(at)] = static_cast<Index>(i);
        m->val[static_cast<std::size_t>(at)] = (*b)[h] + (*c)[h];
        ++at;
        (*row)(i, *this, [&](std::size_t j, Index k, bool first) {
          if (first) {
            slot[j] = at;
            m->col[static_cast<std::size_t>(at)] = static_cast<Index>(j);
            m->val[static_cast<std::size_t>(at)] = 0.0;
            ++at;
          }
          m->val[static_cast<std::size_t>(slot[j])] -= w->share(k, log_total, inv_total);
        });
      }
    }
  };
  parallel_for(
      blocks, threads,
      Fill{{nf, {}, {}}, &for_row, &m, nf, &free, &b, &c, &descent.w, log_total, inv_total});
  // (M - v v^T) delta = rhs by conjugate gradients, preconditioned by the diagonal.
  std::vector<double> v(nf);
  std::vector<double> rhs(nf);
  std::vector<double> diag(nf);
  for (std::size_t i = 0; i < nf; ++i) {
    const std::size_t h = free[i];
    v[i] = b[h] - c[h];
    rhs[i] =
        pathcond ? 0.5 * ((b[h] - c[h]) + descent.degree(h) / objective.n) : 0.5 * (c[h] - b[h]);
    diag[i] = (b[h] + c[h]) - v[i] * v[i];
    if (!(diag[i] > 0)) {
      diag[i] = b[h] + c[h];
    }
  }
  const auto op = [&](const std::vector<double>& x, std::vector<double>& y) {
    m.apply(x, y);
    const double vx = dot(v, x);
    for (std::size_t i = 0; i < nf; ++i) {
      y[i] -= v[i] * vx;
    }
  };
  std::vector<double> delta(nf, 0.0);
  std::vector<double> r = rhs;
  std::vector<double> z(nf);
  std::vector<double> p(nf);
  std::vector<double> q(nf);
  for (std::size_t i = 0; i < nf; ++i) {
    z[i] = r[i] / diag[i];
  }
  p = z;
  double rz = dot(r, z);
  const double target = accuracy * std::sqrt(dot(rhs, rhs));
  for (std::size_t it = 0; it < 20 * nf + 100 && std::sqrt(dot(r, r)) > target; ++it) {
    op(p, q);
    const double pq = dot(p, q);
    if (!(pq > 0)) {
      break;  // a direction of zero curvature (a class whose shares cancel): stop here
    }
    const double step = rz / pq;
    for (std::size_t i = 0; i < nf; ++i) {
      delta[i] += step * p[i];
      r[i] -= step * q[i];
      z[i] = r[i] / diag[i];
    }
    const double rz_next = dot(r, z);
    const double beta = rz_next / rz;
    rz = rz_next;
    for (std::size_t i = 0; i < nf; ++i) {
      p[i] = z[i] + beta * p[i];
    }
  }
  // A step that is not finite is no step; one longer than k_longest_step (a factor e^256 on a
  // class) is shortened to it, so that moving the weights there and back keeps them to rounding.
  double longest = 0;
  for (const double x : delta) {
    longest = std::max(longest, std::fabs(x));
  }
  if (!std::isfinite(longest) || longest == 0) {
    return false;
  }
  if (longest > k_longest_step) {
    for (double& x : delta) {
      x *= k_longest_step / longest;
    }
  }
  // The line search on F: the weights move with the step (class by class), back when refused.
  // grad F . delta: PathCond 4 n (-rhs . delta) ... as the Newton system is H delta = -grad with
  // H = 4 n' (M - v v^T), grad = -4 n' rhs.
  const double scale = pathcond ? objective.n : 1.0;
  const double slope = -4.0 * scale * dot(rhs, delta);
  if (!(slope < 0)) {
    return false;
  }
  double linear = 0;  // sum_h delta_h (|in_h| - |out_h|)
  for (std::size_t i = 0; i < nf; ++i) {
    linear -= delta[i] * descent.degree(free[i]);
  }
  const auto move = [&](double t) {
    for (std::size_t i = 0; i < nf; ++i) {
      descent.scale(free[i], 2.0 * objective.sigma * t * delta[i]);
    }
  };
  // F's rounding: a change below it says nothing, and the full step is then taken (near the
  // minimum, where Newton's steps are right and F's decrease is below its last digits).
  const double noise =
      1e-12 * (pathcond ? objective.n * (std::fabs(log_total) + 1.0) : std::fabs(log_total) + 1.0);
  for (double t = 1.0; t > 1e-3; t *= 0.5) {
    move(t);
    const double moved_total = descent.w.log_sum_if(
        [&](std::size_t k) { return counted == nullptr || (*counted)[k] != 0; });
    const double change = pathcond ? objective.n * (moved_total - log_total) + 2.0 * t * linear
                                   : moved_total - log_total;
    if (change <= 1e-4 * t * slope || (t == 1.0 && std::fabs(change) <= noise)) {
      for (std::size_t i = 0; i < nf; ++i) {
        alpha[free[i]] += t * delta[i];
      }
      return true;
    }
    move(-t);
  }
  return false;
}

}  // namespace pathlift::detail
