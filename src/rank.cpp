#include "pathlift/rank.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <stdexcept>

#include "pathlift/counting.hpp"
#include "pathlift/error.hpp"
#include "pathlift/kernel.hpp"
#include "pathlift/lifting.hpp"
#include "pathlift/limits.hpp"
#include "pathlift/paths.hpp"
#include "src/detail/modular_elimination.hpp"
#include "src/detail/modular_field.hpp"
#include "src/detail/parallel.hpp"

namespace pathlift {

// ---------------------------------------------------------------------------------------------
// SparseIntMatrix
// ---------------------------------------------------------------------------------------------

SparseIntMatrix::SparseIntMatrix(Index num_rows, Index num_cols)
    : cols(num_cols), row_entries(static_cast<std::size_t>(num_rows)) {
  if (num_rows < 0 || num_cols < 0) {
    throw std::invalid_argument(
        fmt::format("a sparse matrix cannot have {} rows and {} columns", num_rows, num_cols));
  }
}

Index SparseIntMatrix::nnz() const {
  Index n = 0;
  for (const auto& row : row_entries) {
    n += static_cast<Index>(row.size());
  }
  return n;
}

namespace {

void check_entry(const SparseIntMatrix& m, Index r, Index c) {
  if (r < 0 || r >= m.rows() || c < 0 || c >= m.cols) {
    throw std::out_of_range(
        fmt::format("entry ({}, {}) is outside the {} x {} matrix", r, c, m.rows(), m.cols));
  }
}

}  // namespace

std::int64_t SparseIntMatrix::at(Index r, Index c) const {
  check_entry(*this, r, c);
  const auto& row = row_entries[static_cast<std::size_t>(r)];
  const auto it = std::lower_bound(row.begin(), row.end(), c,
                                   [](const IntEntry& e, Index col) { return e.col < col; });
  return (it != row.end() && it->col == c) ? it->value : 0;
}

void SparseIntMatrix::set(Index r, Index c, std::int64_t value) {
  check_entry(*this, r, c);
  auto& row = row_entries[static_cast<std::size_t>(r)];
  const auto it = std::lower_bound(row.begin(), row.end(), c,
                                   [](const IntEntry& e, Index col) { return e.col < col; });
  if (it != row.end() && it->col == c) {
    if (value == 0) {
      row.erase(it);
    } else {
      it->value = value;
    }
  } else if (value != 0) {
    row.insert(it, IntEntry{static_cast<EdgeId>(c), value});
  }
}

SparseIntMatrix SparseIntMatrix::from_pattern(const CsrPattern& pattern) {
  SparseIntMatrix m(pattern.rows, pattern.cols);
  for (Index r = 0; r < pattern.rows; ++r) {
    auto& row = m.row_entries[static_cast<std::size_t>(r)];
    const auto cols = pattern.row(r);
    row.reserve(cols.size());
    for (const EdgeId c : cols) {
      row.push_back({c, 1});
    }
  }
  return m;
}

bool is_prime(std::uint64_t n) {
  return detail::modular_is_prime(n);
}

// ---------------------------------------------------------------------------------------------
// Modular rank
// ---------------------------------------------------------------------------------------------

Index modular_rank(const SparseIntMatrix& m, const ModularRankOptions& options) {
  for (Index r = 0; r < m.rows(); ++r) {
    for (const auto& e : m.row_entries[static_cast<std::size_t>(r)]) {
      if (e.col < 0 || e.col >= m.cols) {
        throw std::out_of_range(
            fmt::format("modular rank: row {} has column {} outside 0..{}", r, e.col, m.cols - 1));
      }
    }
  }
  const detail::ModularRowLoader load = [&](Index r, auto& out) {
    for (const auto& e : m.row_entries[static_cast<std::size_t>(r)]) {
      out.emplace_back(e.col, e.value);
    }
  };
  return detail::modular_eliminate(m.rows(), m.cols, load, options.prime, options.column_order,
                                   options.stop_at)
      .rank;
}

namespace {

detail::ModularEliminationResult eliminate_pattern(const CsrPattern& pattern,
                                                   const ModularRankOptions& options) {
  const detail::ModularRowLoader load = [&](Index r, auto& out) {
    for (const EdgeId c : pattern.row(r)) {
      out.emplace_back(c, 1);
    }
  };
  return detail::modular_eliminate(pattern.rows, pattern.cols, load, options.prime,
                                   options.column_order, options.stop_at);
}

int thread_count(int threads) {
  return threads > 0 ? threads : omp_get_max_threads();
}

}  // namespace

Index modular_rank(const CsrPattern& pattern, const ModularRankOptions& options) {
  return eliminate_pattern(pattern, options).rank;
}

Index modular_rank(const ModMatrix& m, int threads) {
  detail::modular_require_prime(m.prime, "modular rank of a dense matrix");
  if (m.rows < 0 || m.cols < 0 || static_cast<Index>(m.data.size()) != m.rows * m.cols) {
    throw std::invalid_argument(
        fmt::format("modular rank: a {} x {} matrix needs {} residues, it has {}", m.rows, m.cols,
                    m.rows * m.cols, m.data.size()));
  }
  const detail::ModField f(m.prime);
  const auto n_rows = static_cast<std::size_t>(m.rows);
  const auto n_cols = static_cast<std::size_t>(m.cols);
  std::vector<std::uint64_t> a(m.data.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i] = f.from_residue(m.data[i] % m.prime);
  }
  const int nthreads = thread_count(threads);
  std::size_t rank = 0;
  for (std::size_t c = 0; c < n_cols && rank < n_rows; ++c) {
    std::size_t piv = rank;
    while (piv < n_rows && a[piv * n_cols + c] == 0) {
      ++piv;
    }
    if (piv == n_rows) {
      continue;
    }
    if (piv != rank) {
      std::swap_ranges(a.begin() + static_cast<std::ptrdiff_t>(piv * n_cols + c),
                       a.begin() + static_cast<std::ptrdiff_t>((piv + 1) * n_cols),
                       a.begin() + static_cast<std::ptrdiff_t>(rank * n_cols + c));
    }
    const std::uint64_t inv = f.inv(a[rank * n_cols + c]);
    const std::uint64_t* pivot_row = a.data() + rank * n_cols;
    const auto first = static_cast<std::ptrdiff_t>(rank + 1);
    const auto last = static_cast<std::ptrdiff_t>(n_rows);
    // Threads only pay off on large updates (a barrier per pivot otherwise dominates).
    const bool parallel = (n_rows - rank) * (n_cols - c) > (std::size_t{1} << 20);
    detail::run_team(nthreads, parallel, [&] {
#pragma omp for schedule(static)
      for (std::ptrdiff_t i = first; i < last; ++i) {
        std::uint64_t* row = a.data() + static_cast<std::size_t>(i) * n_cols;
        if (row[c] == 0) {
          continue;
        }
        const std::uint64_t factor = f.mul(row[c], inv);
        for (std::size_t j = c; j < n_cols; ++j) {
          row[j] = f.sub(row[j], f.mul(factor, pivot_row[j]));
        }
      }
    });
    ++rank;
  }
  return static_cast<Index>(rank);
}

ModMatrix skeleton_gram(const CsrPattern& b, std::uint64_t prime, std::size_t max_memory) {
  detail::modular_require_prime(prime, "skeleton_gram");
  const Index d = b.cols;
  const double bytes = static_cast<double>(d) * static_cast<double>(d) * sizeof(std::uint64_t);
  const std::size_t limit = effective_max_memory(max_memory);
  if (bytes > static_cast<double>(limit)) {
    throw TooLarge(fmt::format("B^T B needs a dense {} x {} matrix ({}), over the limit of {}", d,
                               d, format_bytes(bytes), format_bytes(static_cast<double>(limit))));
  }
  ModMatrix g;
  g.prime = prime;
  g.rows = d;
  g.cols = d;
  g.data.assign(static_cast<std::size_t>(d * d), 0);
  const auto n = static_cast<std::size_t>(d);
  // Counts are at most P < 2^64, so they are accumulated exactly and reduced at the end.
  for (Index r = 0; r < b.rows; ++r) {
    const auto row = b.row(r);
    for (const EdgeId i : row) {
      for (const EdgeId j : row) {
        ++g.data[static_cast<std::size_t>(i) * n + static_cast<std::size_t>(j)];
      }
    }
  }
  for (auto& x : g.data) {
    x %= prime;
  }
  return g;
}

// ---------------------------------------------------------------------------------------------
// Rescaling vectors, anchors, pivot order
// ---------------------------------------------------------------------------------------------

std::vector<int> rescaling_vector(const Network& net, NodeId v) {
  if (v < 0 || v >= net.num_nodes() || !net.is_hidden(v)) {
    throw std::invalid_argument(fmt::format("rescaling_vector: node {} is not a hidden node", v));
  }
  std::vector<int> z(static_cast<std::size_t>(net.num_edges()), 0);
  for (const EdgeId e : net.in_edges(v)) {
    z[static_cast<std::size_t>(e)] = 1;
  }
  for (const EdgeId e : net.out_edges(v)) {
    z[static_cast<std::size_t>(e)] = -1;
  }
  return z;
}

std::vector<EdgeId> rank_anchor_edges(const Network& net) {
  std::vector<EdgeId> anchors;
  anchors.reserve(net.hidden().size());
  for (const NodeId v : net.hidden()) {
    anchors.push_back(net.out_edges(v).front());  // a hidden node is not a sink
  }
  return anchors;
}

std::vector<EdgeId> rank_column_order(const Network& net) {
  const Index d = net.num_edges();
  std::vector<std::uint8_t> is_anchor(static_cast<std::size_t>(d), 0);
  for (const EdgeId a : rank_anchor_edges(net)) {
    is_anchor[static_cast<std::size_t>(a)] = 1;
  }
  std::vector<EdgeId> order(static_cast<std::size_t>(d));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](EdgeId x, EdgeId y) {
    const auto ax = is_anchor[static_cast<std::size_t>(x)];
    const auto ay = is_anchor[static_cast<std::size_t>(y)];
    if (ax != ay) {
      return ax < ay;
    }
    return net.topological_position(net.target(x)) > net.topological_position(net.target(y));
  });
  return order;
}

std::string_view to_string(RankMethod method) {
  switch (method) {
    case RankMethod::automatic:
      return "automatic";
    case RankMethod::skeleton:
      return "skeleton";
    case RankMethod::gram:
      return "gram";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------------
// Certified rank of B
// ---------------------------------------------------------------------------------------------

namespace {

/// The anchors' h x h block of the z_v is triangular with -1 on its diagonal when the hidden
/// nodes are taken in topological order: z_w[a(v)] != 0 only for w = v (-1) and for w the
/// target of a(v), which comes later. Checked here rather than assumed.
bool rescaling_vectors_independent(const Network& net) {
  const auto anchors = rank_anchor_edges(net);
  const auto hidden = net.hidden();
  for (std::size_t i = 0; i < hidden.size(); ++i) {
    const NodeId v = hidden[i];
    const EdgeId a = anchors[i];
    if (net.source(a) != v ||
        net.topological_position(net.target(a)) <= net.topological_position(v)) {
      return false;
    }
  }
  return true;
}

/// B z_v for every hidden v, row by row: records the nodes whose z_v fails.
void check_kernel_on_rows(const Network& net, const CsrPattern& b, RankCertificate& cert) {
  const auto m = static_cast<std::size_t>(net.num_nodes());
  std::vector<std::int64_t> acc(m, 0);
  std::vector<std::uint8_t> failed(m, 0);
  std::vector<NodeId> touched;
  const auto src = net.sources();
  const auto dst = net.targets();
  for (Index r = 0; r < b.rows; ++r) {
    touched.clear();
    for (const EdgeId e : b.row(r)) {
      const auto s = static_cast<std::size_t>(src[static_cast<std::size_t>(e)]);
      const auto t = static_cast<std::size_t>(dst[static_cast<std::size_t>(e)]);
      --acc[s];
      ++acc[t];
      touched.push_back(static_cast<NodeId>(s));
      touched.push_back(static_cast<NodeId>(t));
    }
    for (const NodeId v : touched) {
      const auto i = static_cast<std::size_t>(v);
      if (acc[i] != 0 && net.is_hidden(v) && failed[i] == 0) {
        failed[i] = 1;
        cert.kernel_failures.push_back(v);
        if (cert.kernel_failure_row < 0) {
          cert.kernel_failure_row = r;
        }
      }
    }
    for (const NodeId v : touched) {
      acc[static_cast<std::size_t>(v)] = 0;
    }
  }
  std::sort(cert.kernel_failures.begin(), cert.kernel_failures.end());
}

RankCertificate blank_certificate(const Network& net, std::uint64_t prime) {
  RankCertificate cert;
  cert.d = net.num_edges();
  cert.h = net.num_hidden();
  cert.expected = cert.d - cert.h;
  cert.prime = prime;
  return cert;
}

void set_upper_bound(const Network& net, RankCertificate& cert) {
  const Index verified = cert.h - static_cast<Index>(cert.kernel_failures.size());
  cert.upper = rescaling_vectors_independent(net) ? cert.d - verified : cert.d;
}

}  // namespace

RankCertificate certify_rank(const Network& net, const CsrPattern& b, const RankOptions& options) {
  detail::modular_require_prime(options.prime, "certify_rank");
  if (b.cols != net.num_edges()) {
    throw std::invalid_argument(
        fmt::format("certify_rank: the skeleton has {} columns but the network has {} edges",
                    b.cols, net.num_edges()));
  }
  RankCertificate cert = blank_certificate(net, options.prime);
  check_kernel_on_rows(net, b, cert);
  set_upper_bound(net, cert);

  if (options.method == RankMethod::gram) {
    cert.method = RankMethod::gram;
    const ModMatrix g = skeleton_gram(b, options.prime, options.engine.max_memory);
    cert.lower = modular_rank(g, options.engine.threads);
    cert.rows_eliminated = cert.d;
    return cert;
  }
  cert.method = RankMethod::skeleton;
  ModularRankOptions mo;
  mo.prime = options.prime;
  mo.column_order = rank_column_order(net);
  mo.stop_at = cert.upper;
  const auto result = eliminate_pattern(b, mo);
  cert.lower = result.rank;
  cert.rows_eliminated = result.rows_used;
  return cert;
}

RankCertificate certify_rank(const Network& net, const RankOptions& options) {
  return certify_rank(net, skeleton(net, options.engine), options);
}

RankCertificate certify_rank_from_gram(const Network& net, const ModMatrix& gram, int threads) {
  detail::modular_require_prime(gram.prime, "certify_rank_from_gram");
  const Index d = net.num_edges();
  if (gram.rows != d || gram.cols != d || static_cast<Index>(gram.data.size()) != d * d) {
    throw std::invalid_argument(fmt::format(
        "certify_rank_from_gram: the Gram matrix is {} x {} with {} residues; the network has "
        "d = {} edges, so B^T B is {} x {}",
        gram.rows, gram.cols, gram.data.size(), d, d, d));
  }
  RankCertificate cert = blank_certificate(net, gram.prime);
  cert.method = RankMethod::gram;
  const detail::ModField f(gram.prime);
  const auto n = static_cast<std::size_t>(d);
  for (const NodeId v : net.hidden()) {
    bool ok = true;
    for (std::size_t i = 0; i < n && ok; ++i) {
      const std::uint64_t* row = gram.data.data() + i * n;
      std::uint64_t s = 0;
      for (const EdgeId e : net.in_edges(v)) {
        s = f.add(s, row[static_cast<std::size_t>(e)] % gram.prime);
      }
      for (const EdgeId e : net.out_edges(v)) {
        s = f.sub(s, row[static_cast<std::size_t>(e)] % gram.prime);
      }
      if (s != 0) {
        ok = false;
        if (cert.kernel_failure_row < 0) {
          cert.kernel_failure_row = static_cast<Index>(i);
        }
      }
    }
    if (!ok) {
      cert.kernel_failures.push_back(v);
    }
  }
  std::sort(cert.kernel_failures.begin(), cert.kernel_failures.end());
  set_upper_bound(net, cert);
  cert.lower = modular_rank(gram, threads);
  cert.rows_eliminated = d;
  return cert;
}

// ---------------------------------------------------------------------------------------------
// Numerical rank
// ---------------------------------------------------------------------------------------------

std::string_view to_string(NumericalRankMethod method) {
  switch (method) {
    case NumericalRankMethod::automatic:
      return "automatic";
    case NumericalRankMethod::svd:
      return "svd";
    case NumericalRankMethod::gram_eigenvalues:
      return "gram_eigenvalues";
  }
  return "?";
}

std::string_view to_string(NumericalRankStatus status) {
  switch (status) {
    case NumericalRankStatus::conclusive:
      return "conclusive";
    case NumericalRankStatus::inconclusive:
      return "inconclusive";
  }
  return "?";
}

namespace {

/// Rank, gap and status from descending singular values and a tolerance.
void classify(NumericalRank& nr, double min_gap) {
  const auto& s = nr.singular_values;
  const double tol = nr.tolerance;
  Index r = 0;
  while (r < static_cast<Index>(s.size()) && s[static_cast<std::size_t>(r)] > tol) {
    ++r;
  }
  nr.rank = r;
  const double inf = std::numeric_limits<double>::infinity();
  const double last_kept = r > 0 ? s[static_cast<std::size_t>(r - 1)] : 0.0;
  const double first_dropped =
      r < static_cast<Index>(s.size()) ? s[static_cast<std::size_t>(r)] : 0.0;
  const double kept_margin = r > 0 ? last_kept / tol : inf;
  if (r == 0) {
    nr.gap = first_dropped == 0 ? inf : 0.0;  // the zero matrix has rank 0 exactly
  } else if (first_dropped > 0) {
    nr.gap = last_kept / first_dropped;
  } else {
    nr.gap = kept_margin;
  }
  nr.status =
      nr.gap < min_gap ? NumericalRankStatus::inconclusive : NumericalRankStatus::conclusive;
}

void require_dense(Index rows, Index cols, std::size_t max_memory, const char* what) {
  const double bytes = static_cast<double>(rows) * static_cast<double>(cols) * sizeof(double);
  const std::size_t limit = effective_max_memory(max_memory);
  if (bytes > static_cast<double>(limit)) {
    throw TooLarge(fmt::format("{} needs a dense {} x {} matrix ({}), over the limit of {}", what,
                               rows, cols, format_bytes(bytes),
                               format_bytes(static_cast<double>(limit))));
  }
}

}  // namespace

NumericalRank numerical_rank(const CsrMatrix<double>& j, const NumericalRankOptions& options) {
  const Index p = j.rows();
  const Index d = j.cols();
  const Index n = std::min(p, d);
  NumericalRank nr;
  NumericalRankMethod method = options.method;
  if (method == NumericalRankMethod::automatic) {
    method = (static_cast<double>(p) * static_cast<double>(d) <=
              static_cast<double>(options.svd_max_entries))
                 ? NumericalRankMethod::svd
                 : NumericalRankMethod::gram_eigenvalues;
  }
  nr.method = method;
  const double eps = std::numeric_limits<double>::epsilon();
  const double size = static_cast<double>(std::max(p, d));
  if (n == 0) {
    nr.tolerance = 0;
    classify(nr, options.min_gap);
    return nr;
  }
  if (method == NumericalRankMethod::svd) {
    require_dense(p, d, options.max_memory, "the SVD of dPhi");
    Eigen::MatrixXd a = to_dense(j, options.max_memory);
    if (p > 2 * d) {
      // A tall matrix has the singular values of its d x d factor R (A = QR): cheaper SVD.
      Eigen::HouseholderQR<Eigen::Ref<Eigen::MatrixXd>> qr(a);
      a = Eigen::MatrixXd(qr.matrixQR().topRows(d).triangularView<Eigen::Upper>());
    }
    Eigen::BDCSVD<Eigen::MatrixXd> svd(a);
    const auto& sv = svd.singularValues();
    nr.singular_values.assign(sv.data(), sv.data() + sv.size());
    const double smax = nr.singular_values.empty() ? 0.0 : nr.singular_values.front();
    nr.tolerance = options.tolerance > 0 ? options.tolerance : size * eps * smax;
  } else {
    require_dense(d, d, options.max_memory, "dPhi^T dPhi");
    Eigen::MatrixXd k = Eigen::MatrixXd::Zero(d, d);
    const auto offsets = j.pattern.offsets();
    const auto cols = j.pattern.indices();
    for (Index r = 0; r < p; ++r) {
      const auto b = static_cast<std::size_t>(offsets[static_cast<std::size_t>(r)]);
      const auto e = static_cast<std::size_t>(offsets[static_cast<std::size_t>(r) + 1]);
      for (std::size_t x = b; x < e; ++x) {
        const double vx = j.values[x];
        for (std::size_t y = b; y <= x; ++y) {
          // Column indices increase within a row: (cols[x], cols[y]) is in the lower triangle.
          k(cols[x], cols[y]) += vx * j.values[y];
        }
      }
    }
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(k, Eigen::EigenvaluesOnly);
    if (eig.info() != Eigen::Success) {
      throw std::runtime_error("the eigenvalues of dPhi^T dPhi did not converge");
    }
    const auto& ev = eig.eigenvalues();  // ascending
    nr.singular_values.resize(static_cast<std::size_t>(n));
    for (Index i = 0; i < n; ++i) {
      nr.singular_values[static_cast<std::size_t>(i)] = std::sqrt(std::max(0.0, ev(d - 1 - i)));
    }
    const double smax = nr.singular_values.front();
    nr.tolerance = options.tolerance > 0 ? options.tolerance
                                         : 10 * std::sqrt(static_cast<double>(d) * eps) * smax;
  }
  classify(nr, options.min_gap);
  return nr;
}

// ---------------------------------------------------------------------------------------------
// Theorem check
// ---------------------------------------------------------------------------------------------

std::string_view to_string(RankStatus status) {
  switch (status) {
    case RankStatus::verified:
      return "verified";
    case RankStatus::theta_in_null_set:
      return "theta_in_null_set";
    case RankStatus::rank_J_inconclusive:
      return "rank_J_inconclusive";
    case RankStatus::rank_J_not_computed:
      return "rank_J_not_computed";
    case RankStatus::rank_B_uncertified:
      return "rank_B_uncertified";
    case RankStatus::theorem_fails:
      return "theorem_fails";
  }
  return "?";
}

bool is_failure(RankStatus status) {
  return status == RankStatus::rank_B_uncertified || status == RankStatus::theorem_fails;
}

RankReport rank_report(const Network& net, const RankCertificate& rank_b,
                       const std::optional<NumericalRank>& rank_j, std::span<const double> theta) {
  RankReport rep;
  rep.d = net.num_edges();
  rep.h = net.num_hidden();
  rep.expected = rep.d - rep.h;
  rep.rank_B = rank_b;
  rep.rank_J = rank_j;
  for (std::size_t k = 0; k < theta.size(); ++k) {
    if (theta[k] == 0.0) {
      rep.zero_weights.push_back(static_cast<EdgeId>(k));
    }
  }
  if (!rank_b.certified()) {
    rep.status = RankStatus::rank_B_uncertified;
    rep.explanation = fmt::format(
        "rank(B) is only bounded: {} <= rank(B) <= {} (rank mod p = {}{}); try another prime",
        rank_b.lower, rank_b.upper, rank_b.prime,
        rank_b.kernel_failures.empty()
            ? ""
            : fmt::format(", {} rescaling vectors failed the kernel check",
                          rank_b.kernel_failures.size()));
    return rep;
  }
  const Index rb = *rank_b.rank();
  if (rb != rep.expected) {
    rep.status = RankStatus::theorem_fails;
    rep.explanation = fmt::format("certified rank(B) = {} but d - h = {} - {} = {} (Theorem 1)", rb,
                                  rep.d, rep.h, rep.expected);
    return rep;
  }
  if (!rank_j) {
    rep.status = RankStatus::rank_J_not_computed;
    rep.explanation = fmt::format(
        "rank(B) = d - h = {} certified; rank(dPhi) not computed (the paths were not enumerated)",
        rb);
    return rep;
  }
  if (rank_j->status == NumericalRankStatus::inconclusive) {
    rep.status = RankStatus::rank_J_inconclusive;
    rep.explanation = fmt::format(
        "rank(B) = d - h = {} certified; the singular values of dPhi have no clear gap at the "
        "tolerance {:.3g} (gap {:.3g}), so its numerical rank ({}) is not conclusive",
        rb, rank_j->tolerance, rank_j->gap, rank_j->rank);
    return rep;
  }
  if (rank_j->rank == rep.expected) {
    rep.status = RankStatus::verified;
    rep.explanation = fmt::format("rank(dPhi) = rank(B) = d - h = {} (Theorem 1, Corollary 2)", rb);
    return rep;
  }
  if (!rep.zero_weights.empty()) {
    rep.status = RankStatus::theta_in_null_set;
    std::string edges;
    for (std::size_t i = 0; i < rep.zero_weights.size() && i < 5; ++i) {
      edges += fmt::format("{}{} ({})", i == 0 ? "" : ", ", rep.zero_weights[i],
                           net.edge_label(rep.zero_weights[i]));
    }
    if (rep.zero_weights.size() > 5) {
      edges += ", ...";
    }
    rep.explanation = fmt::format(
        "rank(dPhi) = {} < d - h = {} at this theta, which has {} zero coordinate(s) (edges {}): "
        "theta lies in the null set that Corollary 2 excludes, not a failure of the theorem",
        rank_j->rank, rep.expected, rep.zero_weights.size(), edges);
    return rep;
  }
  rep.status = RankStatus::theorem_fails;
  rep.explanation = fmt::format(
      "rank(dPhi) = {} but d - h = {} although no theta_k is 0 (Corollary 2 says they agree "
      "almost surely, and always when no theta_k is 0)",
      rank_j->rank, rep.expected);
  return rep;
}

namespace {

/// Whether B and dPhi fit in max_memory, from the DP counts; `why` quotes the sizes when not.
bool jacobian_fits(const Network& net, std::size_t max_memory, std::string& why) {
  const PathCounts counts = count_paths(net);
  try {
    const std::size_t bytes =
        estimate_bytes(counts.paths, counts.nnz, net.num_edges(), PathObject::jacobian);
    require_memory(counts.paths, counts.nnz, net.num_edges(), bytes, max_memory,
                   "the Jacobian dPhi with its pattern B");
  } catch (const TooLarge& e) {
    why = e.what();
    return false;
  }
  return true;
}

}  // namespace

RankReport check_rank_theorem(const Network& net, std::span<const double> theta,
                              const RankOptions& options, const NumericalRankOptions& numerical,
                              RankRoute route) {
  std::string why_path_free = "the path-free route was asked for";
  const bool enumerate = route == RankRoute::enumerate ||
                         (route == RankRoute::automatic &&
                          jacobian_fits(net, options.engine.max_memory, why_path_free));
  if (!enumerate) {
    const ModMatrix gram = skeleton_gram_mod(net, options.prime, options.engine);
    const RankCertificate cert = certify_rank_from_gram(net, gram, options.engine.threads);
    RankReport rep = rank_report(net, cert, std::nullopt, {});
    if (rep.status == RankStatus::rank_J_not_computed) {
      rep.explanation = fmt::format(
          "rank(B) = d - h = {} certified from B^T B; rank(dPhi) not computed: it needs the "
          "paths, which were not enumerated ({})",
          rep.expected, why_path_free);
    }
    return rep;
  }
  check_theta_size(net, theta.size());
  const PathSet paths = enumerate_paths(net, options.engine);
  const RankCertificate cert = certify_rank(net, skeleton(paths, options.engine), options);
  NumericalRankOptions nopt = numerical;
  if (nopt.max_memory == 0) {
    nopt.max_memory = options.engine.max_memory;
  }
  std::optional<NumericalRank> rank_j;
  std::string why_no_j;
  try {
    rank_j = numerical_rank(jacobian<double>(paths, theta, options.engine), nopt);
  } catch (const TooLarge& e) {
    why_no_j = e.what();
  }
  RankReport rep = rank_report(net, cert, rank_j, theta);
  if (!rank_j && rep.status == RankStatus::rank_J_not_computed) {
    rep.explanation = fmt::format("rank(B) = d - h = {} certified; rank(dPhi) not computed: {}",
                                  rep.expected, why_no_j);
  }
  return rep;
}

}  // namespace pathlift
