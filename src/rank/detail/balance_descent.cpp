// The balancing descent's incidence and Newton step (balance_descent.hpp).

#include "src/rank/detail/balance_descent.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <vector>

#include "pathlift/limits.hpp"
#include "src/core/parallel.hpp"

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

/// Parameters (or rows) a block of the passes over them: their sums are taken block by block
/// and the blocks' sums in order, so that a sum does not depend on the thread count.
constexpr std::size_t k_block = std::size_t{1} << 15;

/// f(a, b) for the blocks [a, b) of [0, n), on `threads` threads.
template <class F>
void for_blocks(std::size_t n, int threads, const F& f) {
  const auto blocks = static_cast<Index>((n + k_block - 1) / k_block);
  run_team(threads, blocks > 1, [&] {
#pragma omp for schedule(dynamic, 1)
    for (Index block = 0; block < blocks; ++block) {
      const auto a = static_cast<std::size_t>(block) * k_block;
      f(a, std::min(n, a + k_block));
    }
  });
}

/// The sum over [0, n) of the blocks' partial(a, b), in block order.
template <class F>
double block_sum(std::size_t n, int threads, const F& partial) {
  std::vector<double> sums((n + k_block - 1) / k_block, 0.0);
  for_blocks(n, threads, [&](std::size_t a, std::size_t b) { sums[a / k_block] = partial(a, b); });
  PositiveSum s;
  for (const double x : sums) {
    s.add(x);
  }
  return s.value();
}

/// e[h] (0 for a pinned end, -1).
double exponent_at(const std::vector<double>& e, Index h) {
  return h >= 0 ? e[static_cast<std::size_t>(h)] : 0.0;
}

/// max |e|.
double largest(const std::vector<double>& e) {
  double top = 0;
  for (const double x : e) {
    top = std::max(top, std::fabs(x));
  }
  return top;
}

/// exp(e[h]) for each class: the factors of a move within 2^-30 .. 2^30 a class.
std::vector<double> factors(const std::vector<double>& e, double sign) {
  std::vector<double> f(e.size());
  for (std::size_t h = 0; h < e.size(); ++h) {
    f[h] = std::exp(sign * e[h]);
  }
  return f;
}

/// f[h] (1 for a pinned end).
double factor_at(const std::vector<double>& f, Index h) {
  return h >= 0 ? f[static_cast<std::size_t>(h)] : 1.0;
}

/// The largest class exponent for which a move multiplies plain weights: a weight within 2^-960
/// .. 2^960 then stays normal (within 2^-1020 .. 2^1020).
constexpr double k_plain_move = 30 * std::numbers::ln2;

}  // namespace

double Weights::log_sum_moved(const ParameterClasses& pc, const std::vector<double>& e,
                              const std::vector<std::uint8_t>* keep, int threads) const {
  const std::size_t n = m_w.size();
  const auto kept = [&](std::size_t k) { return keep == nullptr || (*keep)[k] != 0; };
  if (!m_logs && largest(e) <= k_plain_move) {
    // Terms within 2^-1020 .. 2^1020, scaled by 2^-64 so that their sum stays finite; taken
    // when that sum is well within range (a term lost below it is then below 2^-200 of it).
    const std::vector<double> up = factors(e, 1.0);
    const std::vector<double> down = factors(e, -1.0);
    const double sum = block_sum(n, threads, [&](std::size_t a, std::size_t b) {
      return chunked_sum(a, b, [&](std::size_t k) {
        return kept(k)
                   ? m_w[k] * 0x1p-64 * factor_at(up, pc.target[k]) * factor_at(down, pc.source[k])
                   : 0.0;
      });
    });
    if (std::isfinite(sum) && sum >= 0x1p-800) {
      return std::log(sum) + 64 * std::numbers::ln2;
    }
  }
  // As logs: the largest term first, then the terms relative to it.
  const auto log_term = [&](std::size_t k) {
    const double x = m_logs ? m_w[k] : (m_w[k] > 0 ? std::log(m_w[k]) : k_minus_inf);
    return x == k_minus_inf ? x : x + exponent_at(e, pc.target[k]) - exponent_at(e, pc.source[k]);
  };
  std::vector<double> tops((n + k_block - 1) / k_block, k_minus_inf);
  for_blocks(n, threads, [&](std::size_t a, std::size_t b) {
    double top = k_minus_inf;
    for (std::size_t k = a; k < b; ++k) {
      top = kept(k) ? std::max(top, log_term(k)) : top;
    }
    tops[a / k_block] = top;
  });
  const double top = tops.empty() ? k_minus_inf : *std::max_element(tops.begin(), tops.end());
  if (top == k_minus_inf) {
    return k_minus_inf;
  }
  const double sum = block_sum(n, threads, [&](std::size_t a, std::size_t b) {
    PositiveSum s;
    for (std::size_t k = a; k < b; ++k) {
      if (kept(k)) {
        s.add(std::exp(log_term(k) - top));
      }
    }
    return s.value();
  });
  return top + std::log(sum);
}

void Weights::move(const ParameterClasses& pc, const std::vector<double>& e, int threads) {
  const std::size_t n = m_w.size();
  if (!m_logs && largest(e) > k_plain_move) {
    to_logs();
  }
  if (m_logs) {
    for_blocks(n, threads, [&](std::size_t a, std::size_t b) {
      for (std::size_t k = a; k < b; ++k) {
        m_w[k] += exponent_at(e, pc.target[k]) - exponent_at(e, pc.source[k]);
      }
    });
    return;
  }
  const std::vector<double> up = factors(e, 1.0);
  const std::vector<double> down = factors(e, -1.0);
  std::vector<std::uint8_t> fit((n + k_block - 1) / k_block, 1);
  for_blocks(n, threads, [&](std::size_t a, std::size_t b) {
    bool all = true;
    for (std::size_t k = a; k < b; ++k) {
      m_w[k] *= factor_at(up, pc.target[k]) * factor_at(down, pc.source[k]);
      all &= in_range(m_w[k]);
    }
    fit[a / k_block] = all ? 1 : 0;
  });
  if (std::find(fit.begin(), fit.end(), 0) != fit.end()) {
    to_logs();
  }
}

void Weights::compact() {
  if (!m_logs) {
    return;
  }
  constexpr double bound = 960 * std::numbers::ln2;
  if (std::all_of(m_w.begin(), m_w.end(),
                  [](double x) { return x == k_minus_inf || std::fabs(x) <= bound; })) {
    for (double& x : m_w) {
      x = std::exp(x);  // exp(-inf) = 0
    }
    m_logs = false;
  }
}

void Descent::class_logs(std::vector<double>& in, std::vector<double>& out, int threads) const {
  const auto n = static_cast<std::size_t>(inc.classes);
  in.resize(n);
  out.resize(n);
  run_team(threads, n > 64, [&] {
#pragma omp for schedule(dynamic, 64)
    for (Index h = 0; h < inc.classes; ++h) {
      in[static_cast<std::size_t>(h)] = log_in(static_cast<std::size_t>(h));
      out[static_cast<std::size_t>(h)] = log_out(static_cast<std::size_t>(h));
    }
  });
}

namespace {

/// The least share of the total into and out of a class that the Newton step moves.
constexpr double k_least_share = 0x1p-500;
/// The longest move of a class's log-scale in one Newton step.
constexpr double k_longest_step = 256.0;
/// The conjugate gradients' most iterations a step: each iterate is a descent direction, and a
/// system that needs more is one the line search shortens anyway (1,426 iterations on
/// shufflenet_v2_x2_0 far from the minimum gave a step of 1/32).
constexpr std::size_t k_most_iterations = 500;
/// The largest class exponent of a step after which M is updated rather than rebuilt.
constexpr double k_longest_update = 32.0;

/// y = M x (M in the cache's CSR), rows in blocks on `threads` threads.
void apply(const NewtonCache& m, const std::vector<double>& x, std::vector<double>& y,
           int threads) {
  for_blocks(x.size(), threads, [&](std::size_t a, std::size_t b) {
    for (std::size_t i = a; i < b; ++i) {
      double s = 0;
      for (Index e = m.off[i]; e < m.off[i + 1]; ++e) {
        s += m.val[static_cast<std::size_t>(e)] *
             x[static_cast<std::size_t>(m.col[static_cast<std::size_t>(e)])];
      }
      y[i] = s;
    }
  });
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    s += a[i] * b[i];
  }
  return s;
}

/// Builds M's pattern and values into `m` (its free classes set): the rows in blocks on the
/// engine's threads, each row summed in the incidence's order (the same M for any thread
/// count). TooLarge when it would not fit.
void build_m(NewtonCache& m, const Descent& descent, const ParameterClasses& pc,
             const std::vector<Index>& free_of, const std::vector<double>& b,
             const std::vector<double>& c, double log_total, const EngineOptions& engine) {
  const Incidence& inc = descent.inc;
  const std::vector<std::size_t>& free = m.free;
  const std::size_t nf = free.size();
  // The other end of a parameter of class h, when it is a free class: its free index, else -1.
  const auto other_end = [&](Index k, bool into) {
    const Index o =
        into ? pc.source[static_cast<std::size_t>(k)] : pc.target[static_cast<std::size_t>(k)];
    return o >= 0 ? free_of[static_cast<std::size_t>(o)] : Index{-1};
  };
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
  // Calls meet(j, k, into, first) for each parameter k of free row i's class (h), j its other
  // end's free index (first meeting of j in this row: first true).
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
        meet(ju, k, into, first);
      }
    }
  };
  const int threads = engine.threads;
  m.off.assign(nf + 1, 0);
  struct Count : Marks {
    const decltype(for_row)* row;
    NewtonCache* m;
    std::size_t nf;
    void operator()(Index block) {
      const auto a = static_cast<std::size_t>(block * rows_a_block);
      for (std::size_t i = a; i < std::min(nf, a + static_cast<std::size_t>(rows_a_block)); ++i) {
        Index entries = 1;
        (*row)(i, *this, [&](std::size_t, Index, bool, bool first) { entries += first ? 1 : 0; });
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
      static_cast<double>(nnz) * (sizeof(std::int32_t) + sizeof(double) + 1) +
          10.0 * static_cast<double>(nf) * sizeof(double),
      engine.max_memory,
      fmt::format("the balance's Newton step ({} classes, a Hessian of {} entries)", nf, nnz));
  m.col.resize(nnz);
  m.val.resize(nnz);
  m.dir.resize(nnz);
  const double inv_total = std::exp(-log_total);
  struct Fill : Marks {
    const decltype(for_row)* row;
    NewtonCache* m;
    std::size_t nf;
    const std::vector<double>* b;
    const std::vector<double>* c;
    const Weights* w;
    double log_total, inv_total;
    void operator()(Index block) {
      const auto a = static_cast<std::size_t>(block * rows_a_block);
      for (std::size_t i = a; i < std::min(nf, a + static_cast<std::size_t>(rows_a_block)); ++i) {
        const std::size_t h = m->free[i];
        auto at = static_cast<std::size_t>(m->off[i]);
        m->col[at] = static_cast<std::int32_t>(i);
        m->val[at] = (*b)[h] + (*c)[h];
        m->dir[at] = 0;
        ++at;
        (*row)(i, *this, [&](std::size_t j, Index k, bool into, bool first) {
          const std::int8_t d = into ? 1 : -1;
          if (first) {
            slot[j] = static_cast<Index>(at);
            m->col[at] = static_cast<std::int32_t>(j);
            m->val[at] = 0.0;
            m->dir[at] = d;
            ++at;
          }
          const auto e = static_cast<std::size_t>(slot[j]);
          m->val[e] -= w->share(k, log_total, inv_total);
          m->dir[e] = m->dir[e] == d ? d : std::int8_t{0};
        });
      }
    }
  };
  parallel_for(blocks, threads,
               Fill{{nf, {}, {}}, &for_row, &m, nf, &b, &c, &descent.w, log_total, inv_total});
  m.mixed = false;
  for (std::size_t i = 0; i < nf; ++i) {
    for (Index e = m.off[i] + 1; e < m.off[i + 1]; ++e) {
      m.mixed |= m.dir[static_cast<std::size_t>(e)] == 0;
    }
  }
}

/// M's values after the step the cache recorded: each off-diagonal entry times its weights'
/// common factor and the totals' ratio, the diagonal b + c afresh.
void update_m(NewtonCache& m, const std::vector<double>& b, const std::vector<double>& c,
              double log_total, int threads) {
  const double ratio = m.log_total - log_total;
  for_blocks(m.free.size(), threads, [&](std::size_t a, std::size_t z) {
    for (std::size_t i = a; i < z; ++i) {
      const std::size_t h = m.free[i];
      const auto first = static_cast<std::size_t>(m.off[i]);
      m.val[first] = b[h] + c[h];
      for (auto e = first + 1; e < static_cast<std::size_t>(m.off[i + 1]); ++e) {
        const double x = m.moved[i] - m.moved[static_cast<std::size_t>(m.col[e])];
        m.val[e] *= std::exp(m.dir[e] * x + ratio);
      }
    }
  });
}

}  // namespace

bool newton_step(Descent& descent, const ParameterClasses& pc, const NewtonObjective& objective,
                 NewtonCache& cache, std::vector<double>& alpha, double accuracy,
                 const EngineOptions& engine) {
  const bool updatable = cache.valid && !cache.mixed;
  cache.valid = false;  // until this step is taken
  const int threads = resolve_threads(engine.threads);
  descent.w.compact();
  const auto classes = static_cast<std::size_t>(descent.inc.classes);
  const std::vector<std::uint8_t>* counted = objective.counted;
  const double log_total =
      descent.w.log_sum_if([&](std::size_t k) { return counted == nullptr || (*counted)[k] != 0; });
  if (!std::isfinite(log_total)) {
    return false;
  }
  // The shares into and out of each class; the free classes (both > 0) and their numbering.
  std::vector<double> b;
  std::vector<double> c;
  descent.class_logs(b, c, threads);
  std::vector<Index> free_of(classes, -1);
  std::vector<std::size_t> free;
  for (std::size_t h = 0; h < classes; ++h) {
    b[h] = std::exp(b[h] - log_total);
    c[h] = std::exp(c[h] - log_total);
    // A class whose share in or out is below 2^-500 stays where it is (the coordinate sweeps,
    // which see any magnitude, move it): the conjugate gradients' products and quotients of
    // such shares would leave float64's range.
    if (b[h] >= k_least_share && c[h] >= k_least_share) {
      free_of[h] = static_cast<Index>(free.size());
      free.push_back(h);
    }
  }
  const std::size_t nf = free.size();
  if (nf == 0 || nf > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) {
    return false;  // none free, or beyond M's column numbers: coordinate sweeps serve
  }
  const bool pathcond = objective.n > 0;
  if (updatable && cache.free == free) {
    update_m(cache, b, c, log_total, threads);
  } else {
    cache.clear();
    cache.free = std::move(free);
    build_m(cache, descent, pc, free_of, b, c, log_total, engine);
  }
  cache.log_total = log_total;
  const std::vector<std::size_t>& fr = cache.free;
  // (M - v v^T) delta = rhs by conjugate gradients, preconditioned by the diagonal.
  std::vector<double> v(nf);
  std::vector<double> rhs(nf);
  std::vector<double> diag(nf);
  for (std::size_t i = 0; i < nf; ++i) {
    const std::size_t h = fr[i];
    v[i] = b[h] - c[h];
    rhs[i] =
        pathcond ? 0.5 * ((b[h] - c[h]) + descent.degree(h) / objective.n) : 0.5 * (c[h] - b[h]);
    diag[i] = (b[h] + c[h]) - v[i] * v[i];
    if (!(diag[i] > 0)) {
      diag[i] = b[h] + c[h];
    }
  }
  const int spmv_threads = cache.val.size() >= (std::size_t{1} << 16) ? threads : 1;
  const auto op = [&](const std::vector<double>& x, std::vector<double>& y) {
    apply(cache, x, y, spmv_threads);
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
  for (std::size_t it = 0; it < k_most_iterations && std::sqrt(dot(r, r)) > target; ++it) {
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
  // class) is shortened to it, so that the weights' logs move by less than float64's range.
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
  // The line search on F: each trial's total taken without moving the weights, which move once,
  // by the step taken. grad F . delta: PathCond 4 n (-rhs . delta) ... as the Newton system is
  // H delta = -grad with H = 4 n' (M - v v^T), grad = -4 n' rhs.
  const double scale = pathcond ? objective.n : 1.0;
  const double slope = -4.0 * scale * dot(rhs, delta);
  if (!(slope < 0)) {
    return false;
  }
  double linear = 0;  // sum_h delta_h (|in_h| - |out_h|)
  for (std::size_t i = 0; i < nf; ++i) {
    linear -= delta[i] * descent.degree(fr[i]);
  }
  std::vector<double> e(classes, 0.0);  // each class's weights' exponent at the trial t
  const auto at = [&](double t) {
    for (std::size_t i = 0; i < nf; ++i) {
      e[fr[i]] = 2.0 * objective.sigma * t * delta[i];
    }
  };
  // F's rounding: a change below it says nothing, and the full step is then taken (near the
  // minimum, where Newton's steps are right and F's decrease is below its last digits).
  const double noise =
      1e-12 * (pathcond ? objective.n * (std::fabs(log_total) + 1.0) : std::fabs(log_total) + 1.0);
  for (double t = 1.0; t > 1e-3; t *= 0.5) {
    at(t);
    const double moved_total = descent.w.log_sum_moved(pc, e, counted, threads);
    const double change = pathcond ? objective.n * (moved_total - log_total) + 2.0 * t * linear
                                   : moved_total - log_total;
    if (change <= 1e-4 * t * slope || (t == 1.0 && std::fabs(change) <= noise)) {
      descent.w.move(pc, e, threads);
      cache.moved.resize(nf);
      for (std::size_t i = 0; i < nf; ++i) {
        alpha[fr[i]] += t * delta[i];
        cache.moved[i] = e[fr[i]];
      }
      cache.valid = largest(e) <= k_longest_update;
      return true;
    }
  }
  return false;
}

}  // namespace pathlift::detail
