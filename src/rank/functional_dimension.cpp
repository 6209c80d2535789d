#include "pathlift/functional_dimension.hpp"

#include <flint/nmod_mat.h>
#include <flint/thread_support.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <numeric>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "pathlift/counting.hpp"
#include "pathlift/error.hpp"
#include "pathlift/limits.hpp"
#include "pathlift/rank.hpp"
#include "pathlift/symmetry.hpp"
#include "src/core/enum_names.hpp"
#include "src/core/json.hpp"
#include "src/core/modular_field.hpp"
#include "src/core/parallel.hpp"
#include "src/network/dag_dp.hpp"
#include "src/network/parameters.hpp"
#include "src/network/ring_longest_paths.hpp"
#include "src/rank/detail/functional_kernel.hpp"

namespace pathlift {

namespace {

using detail::RowPlan;

constexpr std::array k_status_names{
    detail::EnumName<FunctionalDimensionStatus>{FunctionalDimensionStatus::certified, "certified"},
    detail::EnumName<FunctionalDimensionStatus>{FunctionalDimensionStatus::bounds, "bounds"},
    detail::EnumName<FunctionalDimensionStatus>{FunctionalDimensionStatus::pattern_uncertain,
                                                "pattern_uncertain"}};

/// Z/pZ in Montgomery form, for the exact rows.
struct ModRing {
  const detail::ModField& field;
  using Value = std::uint64_t;
  [[nodiscard]] Value zero() const { return 0; }
  [[nodiscard]] Value one() const { return field.one(); }
  [[nodiscard]] Value from(double x) const { return field.from_dyadic(x); }
  [[nodiscard]] Value add(Value a, Value b) const { return field.add(a, b); }
  [[nodiscard]] Value mul(Value a, Value b) const { return field.mul(a, b); }
  /// The residue in [0, p), for FLINT.
  [[nodiscard]] std::uint64_t residue(Value a) const { return field.to_residue(a); }
};

/// The reals in floating point, for the numerical rank.
struct RealRing {
  using Value = double;
  [[nodiscard]] static Value zero() { return 0; }
  [[nodiscard]] static Value one() { return 1; }
  [[nodiscard]] static Value from(double x) { return x; }
  [[nodiscard]] static Value add(Value a, Value b) { return a + b; }
  [[nodiscard]] static Value mul(Value a, Value b) { return a * b; }
};

/// Sample i's rows of J_X, all q outputs at once, into `block` (d x q, row-major: entry
/// k q + j is d f_j(x_i) / d theta_k), in the ring R: a forward pass at the pattern's slopes
/// (the max node's chosen edge alone), then a backward pass carrying the q output gradients.
template <class R>
class SampleRows {
 public:
  SampleRows(const RowPlan& plan, R ring) : m_plan(plan), m_ring(ring) {
    const Network& net = plan.net;
    m_w.assign(plan.weights.size(), m_ring.zero());
    std::transform(plan.weights.begin(), plan.weights.end(), m_w.begin(),
                   [&](double x) { return m_ring.from(x); });
    // The slopes the pattern holds are 1, or a node's negative slope (0 for a ReLU): the
    // latter in the ring once per node.
    m_negative.assign(static_cast<std::size_t>(net.num_nodes()), m_ring.zero());
    for (NodeId v = 0; v < net.num_nodes(); ++v) {
      m_negative[static_cast<std::size_t>(v)] = m_ring.from(net.activation(v).negative_slope);
    }
    m_values.assign(static_cast<std::size_t>(net.num_nodes()), m_ring.zero());
    m_grad.assign(static_cast<std::size_t>(net.num_nodes() * plan.q), m_ring.zero());
    m_t.assign(static_cast<std::size_t>(plan.q), m_ring.zero());
  }

  void compute(Index i, std::vector<typename R::Value>& block) {
    const Network& net = m_plan.net;
    const Index q = m_plan.q;
    const auto& slopes = m_plan.pattern.slopes;
    block.assign(static_cast<std::size_t>(m_plan.d * q), m_ring.zero());
    for (const NodeId v : net.topological_order()) {
      auto& value = m_values[static_cast<std::size_t>(v)];
      if (net.is_input(v)) {
        const Index c = m_plan.data_column[static_cast<std::size_t>(v)];
        value = c < 0 ? m_ring.one() : m_ring.from(m_plan.X(i, c));
        continue;
      }
      if (net.activation(v).kind == ActivationKind::max) {
        const EdgeId e = m_plan.pattern.max_edges(i, v);
        value = m_ring.mul(m_w[e], m_values[static_cast<std::size_t>(net.source(e))]);
        continue;
      }
      const double s = slopes(i, v);
      if (s == 0) {
        value = m_ring.zero();
        continue;
      }
      auto pre = m_ring.zero();
      for (const EdgeId e : net.in_edges(v)) {
        pre =
            m_ring.add(pre, m_ring.mul(m_w[e], m_values[static_cast<std::size_t>(net.source(e))]));
      }
      value = s == 1 ? pre : m_ring.mul(slope(v, s), pre);
    }
    std::fill(m_grad.begin(), m_grad.end(), m_ring.zero());
    const auto outputs = net.outputs();
    for (Index j = 0; j < q; ++j) {
      m_grad[static_cast<std::size_t>(outputs[static_cast<std::size_t>(j)] * q + j)] = m_ring.one();
    }
    const auto topo = net.topological_order();
    for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
      const NodeId v = *it;
      if (net.is_input(v)) {
        continue;
      }
      // t = d f / d pre(v): the slope times d f / d value(v).
      const bool is_max = net.activation(v).kind == ActivationKind::max;
      const double s = is_max ? 1.0 : slopes(i, v);
      if (s == 0) {
        continue;
      }
      const auto sr = s == 1 ? m_ring.one() : slope(v, s);
      bool any = false;
      for (Index j = 0; j < q; ++j) {
        const auto g = m_grad[static_cast<std::size_t>(v * q + j)];
        m_t[static_cast<std::size_t>(j)] = s == 1 ? g : m_ring.mul(sr, g);
        any = any || m_t[static_cast<std::size_t>(j)] != m_ring.zero();
      }
      if (!any) {
        continue;
      }
      const EdgeId chosen = is_max ? m_plan.pattern.max_edges(i, v) : EdgeId{-1};
      for (const EdgeId e : net.in_edges(v)) {
        if (is_max && e != chosen) {
          continue;
        }
        const NodeId u = net.source(e);
        auto* gu = &m_grad[static_cast<std::size_t>(u * q)];
        for (Index j = 0; j < q; ++j) {
          gu[j] = m_ring.add(gu[j], m_ring.mul(m_w[e], m_t[static_cast<std::size_t>(j)]));
        }
        const Index k = net.edge_param(e);
        if (k == kFixedEdge) {
          continue;
        }
        const auto value = m_values[static_cast<std::size_t>(u)];
        auto* row = &block[static_cast<std::size_t>(k * q)];
        for (Index j = 0; j < q; ++j) {
          row[j] = m_ring.add(row[j], m_ring.mul(value, m_t[static_cast<std::size_t>(j)]));
        }
      }
    }
  }

 private:
  /// Slope s (not 1) of node v in the ring: its negative slope, held once.
  [[nodiscard]] typename R::Value slope(NodeId v, double s) const {
    return s == m_plan.net.activation(v).negative_slope ? m_negative[static_cast<std::size_t>(v)]
                                                        : m_ring.from(s);
  }

  const RowPlan& m_plan;
  R m_ring;
  std::vector<typename R::Value> m_negative;  // per node: its negative slope
  std::vector<typename R::Value> m_w;
  std::vector<typename R::Value> m_values;
  std::vector<typename R::Value> m_grad;  // node-major, q per node
  std::vector<typename R::Value> m_t;
};

/// The certified upper bound of rank(dPhi(theta)), path-free.
Index dphi_bound(const Model& model, std::span<const double> theta, std::uint64_t prime,
                 const FunctionalDimensionOptions& options) {
  RankOptions ro;
  ro.prime = prime;
  ro.engine = options.engine;
  ro.engine.progress = {};
  NumericalRankOptions no;
  no.when = NumericalRankOptions::When::never;
  const RankReport rep = check_rank_theorem(model, theta, ro, no, RankRoute::path_free);
  return rep.rank_J_exact ? rep.rank_J_exact->upper : rep.rank_B.upper;
}

/// Sets FLINT's thread count for its lifetime.
class FlintThreads {
 public:
  explicit FlintThreads(int threads) : m_saved(flint_get_num_threads()) {
    flint_set_num_threads(std::max(1, threads));
  }
  ~FlintThreads() { flint_set_num_threads(m_saved); }
  FlintThreads(const FlintThreads&) = delete;
  FlintThreads& operator=(const FlintThreads&) = delete;

 private:
  int m_saved;
};

/// The exact part: the row rank profile of J_X mod p, in growing blocks of rows, stopping at
/// `upper`. Returns the pivot rows; sets rows_used.
std::vector<Index> eliminate_rows(const RowPlan& plan, const ModRing& ring,
                                  const std::vector<char>& param_active, Index upper,
                                  const FunctionalDimensionOptions& options, Index& rows_used) {
  const Index n = plan.X.rows();
  const Index q = plan.q;
  // Only the columns of the active parameters: the others are zero.
  std::vector<Index> columns;
  for (Index k = 0; k < plan.d; ++k) {
    if (param_active[static_cast<std::size_t>(k)]) {
      columns.push_back(k);
    }
  }
  const auto d = static_cast<Index>(columns.size());
  const Index total = n * q;
  const int threads = resolve_threads(options.engine.threads);
  const auto progress = [&](double fraction) {
    if (options.engine.progress) {
      options.engine.progress("eliminating J_X mod p", fraction);
    }
  };
  std::vector<Index> pivots;
  Index done = 0;  // rows eliminated, whole samples
  Index block = std::min(total, 2 * upper + q);
  FlintThreads flint_threads(threads);
  while (done < total && static_cast<Index>(pivots.size()) < upper) {
    Index take = std::min(block, total - done);
    take = std::min(total - done, (take + q - 1) / q * q);
    const Index cols = static_cast<Index>(pivots.size()) + take;
    require_bytes(static_cast<double>(d) * static_cast<double>(cols) * sizeof(std::uint64_t) +
                      static_cast<double>(d) * sizeof(slong),
                  options.engine.max_memory,
                  fmt::format("eliminating {} rows of J_X (the rank so far {} and {} new rows) "
                              "on its {} non-zero columns mod p, dense",
                              cols, pivots.size(), take, d));
    // The samples whose rows fill the block's columns: the earlier pivots' samples, then the
    // new ones. Column c of A is row rows[c] of J_X.
    std::vector<Index> rows = pivots;
    for (Index r = done; r < done + take; ++r) {
      rows.push_back(r);
    }
    std::vector<Index> samples;
    for (const Index r : rows) {
      if (samples.empty() || samples.back() != r / q) {
        samples.push_back(r / q);
      }
    }
    nmod_mat_t a;
    nmod_mat_init(a, d, cols, ring.field.prime());
    detail::run_team(threads, samples.size() > 1, [&] {
      SampleRows<ModRing> rows_of(plan, ring);
      std::vector<std::uint64_t> values;
#pragma omp for schedule(dynamic, 1)
      for (std::size_t s = 0; s < samples.size(); ++s) {
        const Index i = samples[s];
        rows_of.compute(i, values);
        // The block's columns that are rows of sample i (rows is increasing).
        const auto first = std::lower_bound(rows.begin(), rows.end(), i * q);
        for (auto it = first; it != rows.end() && *it < (i + 1) * q; ++it) {
          const Index c = it - rows.begin();
          const Index j = *it - i * q;
          for (Index k = 0; k < d; ++k) {
            const Index param = columns[static_cast<std::size_t>(k)];
            nmod_mat_entry(a, k, c) = ring.residue(values[static_cast<std::size_t>(param * q + j)]);
          }
        }
      }
    });
    std::vector<slong> perm(static_cast<std::size_t>(std::max<Index>(d, 1)));
    const auto rank = static_cast<Index>(nmod_mat_lu(perm.data(), a, 0));
    // U is in row echelon form: its pivot columns, the leading non-zero of each of its first
    // `rank` rows (L's entries lie left of the diagonal), are the column rank profile of A.
    std::vector<Index> next;
    Index c = 0;
    for (Index r = 0; r < rank; ++r) {
      c = std::max(c, r);
      while (c < cols && nmod_mat_entry(a, r, c) == 0) {
        ++c;
      }
      next.push_back(rows[static_cast<std::size_t>(c)]);
      ++c;
    }
    nmod_mat_clear(a);
    pivots = std::move(next);
    done += take;
    block = std::max(done, q);  // doubling
    progress(static_cast<double>(done) / static_cast<double>(total));
  }
  progress(1.0);
  rows_used = done;
  return pivots;
}

/// The floating-point J_X (N q x d) and its numerical rank, or why not.
void numerical_part(const RowPlan& plan, const FunctionalDimensionOptions& options,
                    FunctionalDimension& fd) {
  using When = NumericalRankOptions::When;
  const NumericalRankOptions& no = options.numerical;
  if (no.when == When::never) {
    fd.numerical_note = "not asked for";
    return;
  }
  const double rows = static_cast<double>(fd.rows);
  const double d = static_cast<double>(fd.d);
  // LAPACK reduces the long side by QR first, then the SVD of the small square factor.
  const double small = std::min(rows, d);
  const double flops = 2 * std::max(rows, d) * small * small + 6 * small * small * small;
  if (no.when == When::automatic && flops > no.automatic_max_flops) {
    fd.numerical_note =
        fmt::format("skipped: the SVD of the {} x {} J_X needs about {:.2g} flops, above {:.2g}",
                    fd.rows, fd.d, flops, no.automatic_max_flops);
    fd.numerical_skipped = true;
    return;
  }
  const double bytes = 2 * rows * d * sizeof(double);  // J_X and LAPACK's copy of its factor
  const auto limit = effective_max_memory(options.engine.max_memory);
  if (bytes > static_cast<double>(limit)) {
    fd.numerical_note = fmt::format(
        "skipped: the dense {} x {} J_X and its SVD need {}, above the memory limit of {}", fd.rows,
        fd.d, format_bytes(bytes), format_bytes(static_cast<double>(limit)));
    return;
  }
  Eigen::MatrixXd j(fd.rows, fd.d);
  const Index q = plan.q;
  detail::run_team(resolve_threads(options.engine.threads), fd.n > 1, [&] {
    SampleRows<RealRing> rows_of(plan, RealRing{});
    std::vector<double> values;
#pragma omp for schedule(dynamic, 4)
    for (Index i = 0; i < fd.n; ++i) {
      rows_of.compute(i, values);
      for (Index k = 0; k < fd.d; ++k) {
        for (Index t = 0; t < q; ++t) {
          j(i * q + t, k) = values[static_cast<std::size_t>(k * q + t)];
        }
      }
    }
  });
  if (options.engine.progress) {
    options.engine.progress("singular values of J_X", -1.0);
  }
  fd.numerical = numerical_rank(std::move(j), no);
  if (options.engine.progress) {
    options.engine.progress("singular values of J_X", 1.0);
  }
}

/// The bound on the probability that the rank mod a random prime in [2^60, 2^61) is below the
/// rank over Q (docs/functional-dimension.md#monte-carlo). Every factor of a term of an entry
/// of J_X (a sample's value, a weight, a slope) is a double m 2^-1074 with |m| < 2^2098, and a
/// term has at most F = 1 + 2 L factors (L the longest path, in edges), so 2^(1074 F) J_X is
/// an integer matrix whose entries, sums of at most T = P L terms (P paths), are below
/// T 2^(2098 F). A rank r above the rank mod p needs a non-zero r x r minor that p divides;
/// by Hadamard's inequality its absolute value is below 2^B, B = r (log2 T + 2098 F +
/// log2(r) / 2), with r <= rank_bound, so at most B / 60 primes of the range divide it.
double monte_carlo_error(const Network& net, Index rank_bound) {
  const detail::DagView g(net);
  const std::vector<int> depth = detail::dag_forward(g, detail::LongestPaths{});
  int longest = 1;
  for (const NodeId o : net.outputs()) {
    longest = std::max(longest, depth[static_cast<std::size_t>(o)]);
  }
  const double factors = 1.0 + 2.0 * longest;
  const double log2_terms =
      std::max(0.0, count_paths_total(net).log10() / std::log10(2.0)) + std::log2(longest);
  const double r = static_cast<double>(std::max<Index>(rank_bound, 1));
  const double log2_minor = r * (log2_terms + 2098.0 * factors + 0.5 * std::log2(r));
  return std::min(1.0, std::floor(log2_minor / 60.0) / random_prime_count);
}

std::string binding_bound(const FunctionalDimension& fd) {
  if (fd.upper == fd.upper_rows) {
    return fmt::format("q x distinct samples = {} x {}", fd.q, fd.distinct_samples);
  }
  if (fd.upper == fd.upper_dphi) {
    return "the certified rank of dPhi (J_X = L(X) dPhi)";
  }
  return "d minus the known kernel (the parameters on no active path, and the symmetries of "
         "the batch's linear blocks)";
}

void explain(FunctionalDimension& fd) {
  const std::string rows = fd.rows_to_rank == fd.rows
                               ? fmt::format("all {} rows", fd.rows)
                               : fmt::format("the first {} of {} rows", fd.rows_to_rank, fd.rows);
  std::string s;
  if (fd.lower == fd.upper) {
    s = fmt::format("rank J_X = {} certified: the rank mod p of {} meets the upper bound, {}",
                    fd.lower, rows, binding_bound(fd));
  } else {
    s = fmt::format(
        "{} <= rank J_X <= {}: the rank mod p of all {} rows is {} (a certified lower bound); "
        "the upper bound is {}. The gap is a drop of the functional dimension below that bound "
        "(J_X has more kernel than pathlift knows), or, rarely, an "
        "unlucky prime",
        fd.lower, fd.upper, fd.rows, fd.lower, binding_bound(fd));
    if (fd.monte_carlo_rank) {
      s += fmt::format(
          ". With the prime drawn at random, rank J_X = {} except with probability at most "
          "{:.1e} (Monte Carlo)",
          *fd.monte_carlo_rank, *fd.monte_carlo_error);
    }
  }
  if (fd.columns_used < fd.upper && fd.lower < fd.upper) {
    s +=
        fmt::format(" (the lower bound is the rank of the {} columns eliminated)", fd.columns_used);
  }
  if (!fd.pattern_certified) {
    s = fmt::format(
        "the activation pattern is not certain ({}); at the pattern the forward "
        "pass chose: {}",
        fd.pattern_note, s);
  } else if (fd.on_kink) {
    s += "; some pre-activation is exactly 0 (ReLU'(0) = 0 is used, as in PyTorch)";
  }
  fd.explanation = s;
}

}  // namespace

std::string_view to_string(FunctionalDimensionStatus status) {
  return detail::enum_name(k_status_names, status);
}

FunctionalDimension functional_dimension(const Model& model, std::span<const double> theta,
                                         const Eigen::Ref<const Eigen::MatrixXd>& X,
                                         const FunctionalDimensionOptions& options) {
  if (options.prime != 0) {
    detail::modular_require_prime(options.prime, "functional_dimension");
  }
  if (options.prime == 2) {
    throw std::invalid_argument(
        "functional_dimension: the prime must be odd (the inputs and weights are dyadic "
        "rationals, 2 is not invertible mod 2)");
  }
  check_theta(model, theta);
  for (const Index k : options.columns) {
    if (k < 0 || k >= model.num_params()) {
      throw std::invalid_argument(fmt::format(
          "functional_dimension: column {} is not a parameter (d = {})", k, model.num_params()));
    }
  }
  const std::shared_ptr<const Network> dag = model.unrolled(options.engine);
  const Network& net = *dag;
  const ForwardResult fw = forward(net, theta, X, options.engine);
  const ActivationPattern pattern = activation_pattern(net, fw);
  const PatternCertificate pc =
      certify_activation_pattern(net, theta, X, fw, pattern, options.engine);

  FunctionalDimension fd;
  fd.n = X.rows();
  fd.q = static_cast<Index>(net.outputs().size());
  fd.d = net.num_params();
  fd.rows = fd.n * fd.q;
  fd.prime_random = options.prime == 0;
  fd.prime = fd.prime_random ? random_prime() : options.prime;
  fd.margin = pattern.margin;
  fd.on_kink = pattern.on_kink;
  fd.pattern_certified = pc.certified;
  if (!pc.certified) {
    const bool is_max = net.activation(pc.node).kind == ActivationKind::max;
    fd.pattern_note = fmt::format(
        "{} (sample, node) pair{} within rounding of a kink; the first: sample {}, node {}, {} "
        "{:.3g} against an error bound of {:.3g}",
        pc.uncertain, pc.uncertain == 1 ? "" : "s", pc.sample, net.node_name(pc.node),
        is_max ? "max-pool gap" : "pre-activation", pc.value, pc.error_bound);
  }

  const std::vector<double> weights = net.edge_weights(theta);
  RowPlan plan{.net = net,
               .pattern = pattern,
               .X = X,
               .weights = weights,
               .data_column = data_columns(net),
               .q = fd.q,
               .d = fd.d};

  const std::vector<Index> classes = detail::sample_classes(X, fd.distinct_samples);
  fd.upper_rows = fd.q * fd.distinct_samples;
  fd.upper_dphi = dphi_bound(model, theta, fd.prime, options);
  const detail::Activity act = detail::activity(plan, classes);
  const std::vector<char> param_active = detail::active_params(plan, act.edges);
  fd.upper_kernel = detail::kernel_bound(plan, param_active, act.live_samples, fd.prime);
  std::vector<char> eliminated = param_active;
  if (!options.columns.empty()) {
    std::vector<char> asked(eliminated.size(), 0);
    for (const Index k : options.columns) {
      asked[static_cast<std::size_t>(k)] = 1;
    }
    for (std::size_t k = 0; k < eliminated.size(); ++k) {
      eliminated[k] = static_cast<char>(eliminated[k] != 0 && asked[k] != 0);
    }
  }
  fd.columns_used = std::count(eliminated.begin(), eliminated.end(), 1);
  fd.upper = std::min({fd.upper_rows, fd.upper_dphi, fd.upper_kernel});

  const detail::ModField field(fd.prime);
  const ModRing ring{field};
  // The rank of the columns eliminated is at most their number: no need to go further.
  fd.pivot_rows = eliminate_rows(plan, ring, eliminated, std::min(fd.upper, fd.columns_used),
                                 options, fd.rows_used);
  fd.lower = static_cast<Index>(fd.pivot_rows.size());
  fd.rows_to_rank = fd.pivot_rows.empty() ? 0 : fd.pivot_rows.back() + 1;
  fd.status = !fd.pattern_certified  ? FunctionalDimensionStatus::pattern_uncertain
              : fd.lower == fd.upper ? FunctionalDimensionStatus::certified
                                     : FunctionalDimensionStatus::bounds;
  // Every row eliminated unless the rank reached `upper`, so `lower` is the rank mod p of J_X.
  if (fd.prime_random && options.columns.empty() &&
      (fd.rows_used == fd.rows || fd.lower == fd.upper)) {
    fd.monte_carlo_rank = fd.lower;
    fd.monte_carlo_error = fd.lower == fd.upper ? 0.0 : monte_carlo_error(net, fd.upper);
  }
  numerical_part(plan, options, fd);
  explain(fd);
  return fd;
}

std::string to_json(const FunctionalDimension& fd, int indent) {
  using detail::Json;
  using detail::number_or_null;
  Json j;
  PATHLIFT_JSON_MEMBERS(j, fd, n, q, d, rows);
  j["functional_dimension"] = detail::json_value(fd.rank());
  PATHLIFT_JSON_MEMBERS(j, fd, lower, upper, status, explanation, upper_rows, upper_dphi,
                        upper_kernel, distinct_samples, rows_to_rank, rows_used, columns_used,
                        pivot_rows, prime, prime_random, monte_carlo_rank, monte_carlo_error,
                        margin, on_kink, pattern_certified);
  j["pattern_note"] = detail::text_or_null(fd.pattern_note);
  // The numerical rank's keys: null when it was skipped or failed.
  const NumericalRank* nr = fd.numerical && fd.numerical->status != NumericalRankStatus::failed
                                ? &*fd.numerical
                                : nullptr;
  const auto sigma = [&](Index k) { return nr ? number_or_null(nr->sigma(k)) : Json(); };
  j["numerical_rank"] = nr ? Json(nr->rank) : Json();
  j["numerical_status"] = nr             ? std::string(to_string(nr->status))
                          : fd.numerical ? "failed"
                                         : "not_computed";
  j["numerical_tolerance"] = nr ? number_or_null(nr->tolerance) : Json();
  j["numerical_gap"] = nr ? number_or_null(nr->gap) : Json();
  j["sigma_max"] = sigma(1);
  j["sigma_at_rank"] = sigma(fd.lower);
  j["sigma_after_rank"] = sigma(fd.lower + 1);
  Json tail;  // the smallest eight singular values
  if (nr) {
    tail = Json::array();
    const auto count = static_cast<Index>(nr->singular_values.size());
    for (Index k = std::max<Index>(0, count - 8); k < count; ++k) {
      tail.push_back(number_or_null(nr->singular_values[static_cast<std::size_t>(k)]));
    }
  }
  j["smallest_singular_values"] = tail;
  j["numerical_note"] = detail::text_or_null(fd.numerical_note);
  return j.dump(indent);
}

}  // namespace pathlift
