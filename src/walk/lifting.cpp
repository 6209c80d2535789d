#include "pathlift/lifting.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "pathlift/error.hpp"
#include "pathlift/limits.hpp"
#include "pathlift/path_memory.hpp"
#include "src/core/parallel.hpp"
#include "src/core/progress.hpp"
#include "src/network/parameters.hpp"
#include "src/network/theta_check.hpp"
#include "src/walk/detail/engine.hpp"
#include "src/walk/detail/sinks.hpp"

namespace pathlift {

namespace {

template <class T>
void require(const detail::WalkTables& t, Index d, PathObject object, const EngineOptions& options,
             const char* what) {
  const Count p(static_cast<std::uint64_t>(t.num_paths));
  const Count nnz(static_cast<std::uint64_t>(t.nnz));
  require_memory(p, nnz, d, estimate_bytes(p, nnz, d, object, sizeof(T)), options.max_memory, what);
}

/// Refuses work on a path set that allocates `new_bytes` while the caller holds the path set and
/// `held` more bytes (its inputs, e.g. Phi): the peak of the call, not its result alone.
void require_on_paths(const PathSet& paths, double new_bytes, double held,
                      const EngineOptions& options, std::string_view what) {
  const double path_set =
      static_cast<double>(paths.offsets->size()) * sizeof(Index) +
      static_cast<double>(paths.edges->size()) * sizeof(EdgeId) +
      static_cast<double>(paths.start.size() + paths.end.size()) * sizeof(NodeId);
  require_bytes(new_bytes + held + path_set, options.max_memory,
                fmt::format("{} (P = {} paths, nnz = {}; with the path set and inputs it reads)",
                            what, paths.size(), paths.nnz()));
}

/// The bytes of dPhi's values, and of its column indices when skeleton(paths) must copy them.
template <class T>
double jacobian_bytes(const PathSet& paths) {
  const auto nnz = static_cast<double>(paths.nnz());
  return nnz * sizeof(T) + (paths.walk_order_sorted && !paths.params ? 0.0 : nnz * sizeof(EdgeId));
}

/// theta for a path set: d finite numbers (a NaN would silently spread to every path through
/// it). The path set has no node names, so the message gives the index alone.
template <class T>
void check_paths_theta(const PathSet& paths, std::span<const T> theta) {
  detail::check_parameters(theta, paths.num_params(), nullptr, "theta");
}

/// One row of dPhi from a path's edges e (walk order): out[k] = (product of the weights
/// before k) * (product of those after k), without division, so exact at zero weights.
/// Prefix products first, then the suffix sweep.
template <class T>
void jacobian_row(const EdgeId* __restrict e, const T* __restrict th, T* __restrict out, Index n) {
  T prefix = T(1);
  for (Index k = 0; k < n; ++k) {
    out[k] = prefix;
    prefix *= th[e[k]];
  }
  T suffix = T(1);
  for (Index k = n - 1; k >= 0; --k) {
    out[k] *= suffix;
    suffix *= th[e[k]];
  }
}

/// The N edge ids at e, read two at a time (one 64-bit load for two ids): the kernels below are
/// bound by their loads, and this removes two of the eight a path of 4 edges had.
template <int N>
[[gnu::always_inline]] inline void load_edges(const EdgeId* __restrict e, std::uint32_t (&id)[N]) {
  static_assert(sizeof(EdgeId) == 4);
  int k = 0;
  if constexpr (std::endian::native == std::endian::little) {
    for (; k + 1 < N; k += 2) {
      std::uint64_t two = 0;
      std::memcpy(&two, e + k, sizeof two);
      id[k] = static_cast<std::uint32_t>(two);
      id[k + 1] = static_cast<std::uint32_t>(two >> 32);
    }
  }
  for (; k < N; ++k) {
    id[k] = static_cast<std::uint32_t>(e[k]);
  }
}

/// jacobian_row for a length known at compile time (unrolled; bit-identical to the run-time
/// version above).
template <int N, class T>
[[gnu::always_inline]] inline void jacobian_row(const EdgeId* __restrict e, const T* __restrict th,
                                                T* __restrict out) {
  std::uint32_t id[N];
  load_edges<N>(e, id);
  T w[N];
  for (int k = 0; k < N; ++k) {
    w[k] = th[id[k]];
  }
  T pre[N];
  pre[0] = T(1);
  for (int k = 1; k < N; ++k) {
    pre[k] = pre[k - 1] * w[k - 1];
  }
  T suffix = T(1);
  for (int k = N - 1; k >= 0; --k) {
    out[k] = pre[k] * suffix;
    suffix *= w[k];
  }
}

/// Phi of one path: the product of its weights in walk order (n known at run time, or N at
/// compile time: the same multiplications in the same order).
template <class T>
T path_product(const EdgeId* __restrict e, const T* __restrict th, Index n) {
  T prod = T(1);
  for (Index k = 0; k < n; ++k) {
    prod *= th[e[k]];
  }
  return prod;
}

template <int N, class T>
[[gnu::always_inline]] inline T path_product(const EdgeId* __restrict e, const T* __restrict th) {
  std::uint32_t id[N];
  load_edges<N>(e, id);
  T prod = T(1);
  for (int k = 0; k < N; ++k) {
    prod *= th[id[k]];
  }
  return prod;
}

/// What path_rows writes: Phi (one value a path, indexed by path) or the rows of dPhi (one value
/// an edge of the path set, indexed like its edges).
enum class Rows { phi, jacobian };

/// GCC's vectorizer turns the product loops into 2-lane "gathers" built from shuffles and moves
/// between vector and integer registers, 1.4-2.5x slower than the scalar loads they replace
/// (measured on Phi and dPhi from a path set of ff:5,8,8,8,2).
#if defined(__GNUC__) && !defined(__clang__)
#define PATHLIFT_SCALAR_LOOPS [[gnu::optimize("no-tree-loop-vectorize")]]
#else
#define PATHLIFT_SCALAR_LOOPS
#endif

/// Rows p, p + 1, ... of length N, up to row p1 or the first row of another length, whose index
/// it returns. The length test rides along with the products (each row's end offset is the next
/// row's start), so finding a run costs no separate pass over the offsets.
template <Rows R, int N, class T>
PATHLIFT_SCALAR_LOOPS Index run_of_length(const Index* __restrict off,
                                          const EdgeId* __restrict edges, const T* __restrict th,
                                          T* __restrict out, Index p, Index p1) {
  Index begin = off[p];
  for (; p < p1; ++p) {
    const Index end = off[p + 1];
    if (end - begin != N) {
      break;
    }
    if constexpr (R == Rows::phi) {
      out[p] = path_product<N>(edges + begin, th);
    } else {
      jacobian_row<N>(edges + begin, th, out + begin);
    }
    begin = end;
  }
  return p;
}

/// The longest path length with an unrolled kernel (run_of_length); longer paths take the
/// run-time loops.
constexpr int k_max_unrolled = 8;

/// run_of_length<R, n> for the length n of row p when 1 <= n <= k_max_unrolled (p advances to
/// the end of the run); false for another length. Shorter = 0, 1, ..., k_max_unrolled - 1: the
/// lengths minus one.
template <Rows R, class T, int... Shorter>
bool unrolled_run(std::integer_sequence<int, Shorter...> /*lengths*/, Index n,
                  const Index* __restrict off, const EdgeId* __restrict edges,
                  const T* __restrict th, T* __restrict out, Index& p, Index p1) {
  return (
      (n == Shorter + 1 && (p = run_of_length<R, Shorter + 1>(off, edges, th, out, p, p1), true)) ||
      ...);
}

/// Rows [p0, p1) of a path set: Phi or dPhi values (see Rows). Paths come in runs of equal
/// length (all the paths of one input of a layered network have the same length), and each run
/// is computed by a loop with the length known at compile time: the same products in the same
/// order as path by path, without a length dispatch per path.
template <Rows R, class T>
void path_rows(const Index* __restrict off, const EdgeId* __restrict edges, const T* __restrict th,
               T* __restrict out, Index p0, Index p1) {
  Index p = p0;
  while (p < p1) {
    const Index n = off[p + 1] - off[p];
    if (unrolled_run<R, T>(std::make_integer_sequence<int, k_max_unrolled>{}, n, off, edges, th,
                           out, p, p1)) {
      continue;
    }
    if constexpr (R == Rows::phi) {
      out[p] = path_product(edges + off[p], th, n);
    } else {
      jacobian_row(edges + off[p], th, out + off[p], n);
    }
    ++p;
  }
}

/// This thread's share [first, last) of the np rows of a CSR layout with row offsets `off`:
/// contiguous, in thread order, about equal in entries (the rows are computed the same way
/// whichever thread takes them, so the result does not depend on the team size).
std::pair<Index, Index> team_share(const Index* off, Index np) {
  const auto t = static_cast<Index>(omp_get_thread_num());
  const auto nt = static_cast<Index>(omp_get_num_threads());
  const Index nnz = off[np];
  const auto bound = [&](Index k) -> Index {
    if (k == nt) {
      return np;
    }
    const Index target = nnz / nt * k + std::min(k, nnz % nt);
    return std::lower_bound(off, off + np, target) - off;
  };
  return {bound(t), bound(t + 1)};
}

}  // namespace

template <class T>
Buffer<T> path_lifting(const Network& net, std::span<const T> theta_in,
                       const EngineOptions& options) {
  check_theta(net, theta_in);
  const detail::EdgeTheta<T> theta(net.parameter_map().get(), theta_in);
  const detail::WalkTables t = detail::make_walk_tables(net, /*memo_structure=*/false);
  require<T>(t, net.num_edges(), PathObject::path_lifting, options, "the path-lifting Phi");
  Buffer<T> memo_phi;
  detail::compute_memo_values<T>(t, theta.data(), memo_phi, nullptr);
  Buffer<T> phi(static_cast<std::size_t>(t.num_paths));
  const bool stream = phi.size() * sizeof(T) >= detail::k_stream_min_bytes;
  const detail::WalkPlan plan = detail::plan_walk(t, detail::walk_grain(t.num_paths));
  detail::run_plan<T>(
      t, plan, theta.data(), options.threads,
      detail::phase_callback(options.progress, "computing Phi"), [&](const detail::WalkTask& task) {
        return detail::PhiSink<T>{&t, memo_phi.data(), phi.data(), task.first_path, stream};
      });
  return phi;
}

template <class T>
Buffer<T> path_lifting(const PathSet& paths, std::span<const T> theta_in,
                       const EngineOptions& options) {
  check_paths_theta(paths, theta_in);
  const detail::EdgeTheta<T> theta(paths.params.get(), theta_in);
  const Index np = paths.size();
  require_on_paths(paths, static_cast<double>(np) * sizeof(T), 0, options, "the path-lifting Phi");
  Buffer<T> phi(static_cast<std::size_t>(np));
  const Index* off = paths.offsets->data();
  const EdgeId* edges = paths.edges->data();
  T* out = phi.data();
  detail::run_team(resolve_threads(options.threads), paths.nnz() >= detail::k_parallel_min_entries,
                   [&] {
                     const auto [first, last] = team_share(off, np);
                     path_rows<Rows::phi, T>(off, edges, theta.data(), out, first, last);
                   });
  return phi;
}

CsrPattern skeleton(const PathSet& paths, const EngineOptions& options) {
  if (paths.params) {
    PathSet edges_only = paths;
    edges_only.params = nullptr;
    return detail::gather_pattern(nullptr, *paths.params, skeleton(edges_only, options),
                                  options.threads);
  }
  CsrPattern b;
  b.rows = paths.size();
  b.cols = paths.num_edges;
  b.row_offsets = paths.offsets;
  if (paths.walk_order_sorted) {
    b.col_indices = paths.edges;
    return b;
  }
  auto cols = std::make_shared<Buffer<EdgeId>>(*paths.edges);
  const Index np = paths.size();
  const Index* off = paths.offsets->data();
  EdgeId* c = cols->data();
  detail::run_team(resolve_threads(options.threads), paths.nnz() >= detail::k_parallel_min_entries,
                   [&] {
#pragma omp for schedule(static)
                     for (Index p = 0; p < np; ++p) {
                       detail::sort_row<double>(c + off[p], nullptr, off[p + 1] - off[p]);
                     }
                   });
  b.col_indices = std::move(cols);
  return b;
}

CsrPattern skeleton(const Network& net, const EngineOptions& options) {
  const detail::WalkTables t = detail::make_walk_tables(net);
  require<double>(t, net.num_edges(), PathObject::skeleton, options, "the skeleton B");
  auto offsets = std::make_shared<Buffer<Index>>(static_cast<std::size_t>(t.num_paths) + 1);
  auto cols = std::make_shared<Buffer<EdgeId>>(static_cast<std::size_t>(t.nnz));
  (*offsets)[0] = 0;
  const detail::WalkPlan plan = detail::plan_walk(t, detail::walk_grain(t.num_paths));
  detail::run_plan<double>(
      t, plan, nullptr, options.threads, detail::phase_callback(options.progress, "computing B"),
      [&](const detail::WalkTask& task) {
        return detail::JacobianSink<double>{
            &t,      nullptr, nullptr,         nullptr,          offsets->data(), cols->data(),
            nullptr, nullptr, task.first_path, task.first_entry, !t.sorted};
      });
  CsrPattern b;
  b.rows = t.num_paths;
  b.cols = net.num_edges();
  b.row_offsets = std::move(offsets);
  b.col_indices = std::move(cols);
  if (const auto& map = net.parameter_map()) {
    return detail::gather_pattern(&net, *map, b, options.threads);
  }
  return b;
}

template <class T>
CsrMatrix<T> jacobian(const Network& net, std::span<const T> theta_in,
                      const EngineOptions& options) {
  check_theta(net, theta_in);
  const detail::EdgeTheta<T> theta(net.parameter_map().get(), theta_in);
  const detail::WalkTables t = detail::make_walk_tables(net);
  require<T>(t, net.num_edges(), PathObject::jacobian, options, "the Jacobian dPhi");
  Buffer<T> memo_phi;
  Buffer<T> memo_others;
  detail::compute_memo_values<T>(t, theta.data(), memo_phi, &memo_others);
  auto offsets = std::make_shared<Buffer<Index>>(static_cast<std::size_t>(t.num_paths) + 1);
  auto cols = std::make_shared<Buffer<EdgeId>>(static_cast<std::size_t>(t.nnz));
  Buffer<T> values(static_cast<std::size_t>(t.nnz));
  (*offsets)[0] = 0;
  const detail::WalkPlan plan = detail::plan_walk(t, detail::walk_grain(t.num_paths));
  detail::run_plan<T>(
      t, plan, theta.data(), options.threads,
      detail::phase_callback(options.progress, "computing dPhi"),
      [&](const detail::WalkTask& task) {
        return detail::JacobianSink<T>{
            &t,           theta.data(),  memo_phi.data(), memo_others.data(), offsets->data(),
            cols->data(), values.data(), nullptr,         task.first_path,    task.first_entry,
            !t.sorted};
      });
  CsrMatrix<T> j;
  j.pattern.rows = t.num_paths;
  j.pattern.cols = net.num_edges();
  j.pattern.row_offsets = std::move(offsets);
  j.pattern.col_indices = std::move(cols);
  j.values = std::move(values);
  if (const auto& map = net.parameter_map()) {
    return detail::gather_columns(*map, j, options.threads);
  }
  return j;
}

template <class T>
CsrMatrix<T> jacobian(const PathSet& paths, std::span<const T> theta,
                      const EngineOptions& options) {
  check_paths_theta(paths, theta);
  require_on_paths(paths, jacobian_bytes<T>(paths), 0, options, "the Jacobian dPhi");
  if (paths.params) {
    PathSet edges_only = paths;
    edges_only.params = nullptr;
    const std::vector<T> w = paths.params->edge_weights(theta);
    return detail::gather_columns(
        *paths.params, jacobian<T>(edges_only, std::span<const T>(w), options), options.threads);
  }
  CsrMatrix<T> j;
  j.pattern = skeleton(paths, options);
  const Index np = paths.size();
  j.values.resize(static_cast<std::size_t>(paths.nnz()));
  const Index* off = paths.offsets->data();
  const EdgeId* walk = paths.edges->data();
  T* val = j.values.data();
  const bool sorted = paths.walk_order_sorted;
  detail::run_team(resolve_threads(options.threads), paths.nnz() >= detail::k_parallel_min_entries,
                   [&] {
                     const auto [first, last] = team_share(off, np);
                     path_rows<Rows::jacobian, T>(off, walk, theta.data(), val, first, last);
                     if (!sorted) {  // rows in column order, values carried along
                       std::vector<EdgeId> cols;
                       for (Index p = first; p < last; ++p) {
                         cols.assign(walk + off[p], walk + off[p + 1]);
                         detail::sort_row(cols.data(), val + off[p], off[p + 1] - off[p]);
                       }
                     }
                   });
  return j;
}

template <class T>
CsrMatrix<T> jacobian_paper_formula(const PathSet& paths, std::span<const T> phi,
                                    std::span<const T> theta, const EngineOptions& options) {
  check_paths_theta(paths, theta);
  if (phi.size() != static_cast<std::size_t>(paths.size())) {
    throw std::invalid_argument(
        fmt::format("phi has {} entries but there are {} paths", phi.size(), paths.size()));
  }
  require_on_paths(paths, jacobian_bytes<T>(paths), static_cast<double>(phi.size()) * sizeof(T),
                   options, "the Jacobian dPhi by the paper's formula");
  CsrMatrix<T> j;
  j.pattern = skeleton(paths, options);
  const Index np = paths.size();
  j.values.resize(static_cast<std::size_t>(j.pattern.nnz()));  // per parameter
  const Index* off = j.pattern.row_offsets->data();
  const EdgeId* cols = j.pattern.col_indices->data();
  T* val = j.values.data();
  detail::run_team(resolve_threads(options.threads), paths.nnz() >= detail::k_parallel_min_entries,
                   [&] {
#pragma omp for schedule(static)
                     for (Index p = 0; p < np; ++p) {
                       const T f = phi[static_cast<std::size_t>(p)];
                       for (Index k = off[p]; k < off[p + 1]; ++k) {
                         val[k] = f * (T(1) / theta[static_cast<std::size_t>(cols[k])]);
                       }
                     }
                   });
  return j;
}

template <class T>
Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> dense_jacobian(
    const PathSet& paths, std::span<const T> theta_in, const EngineOptions& options) {
  check_paths_theta(paths, theta_in);
  const detail::EdgeTheta<T> theta(paths.params.get(), theta_in);
  const Index* param = paths.params ? paths.params->edge_params.data() : nullptr;
  const Index np = paths.size();
  const Index d = paths.num_params();
  require_dense(
      np, d, sizeof(T), options.max_memory,
      fmt::format("the dense Jacobian dPhi (P = {} paths, d = {}, nnz = {})", np, d, paths.nnz()));
  Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> out(np, d);
  const Index* off = paths.offsets->data();
  const EdgeId* walk = paths.edges->data();
  T* base = out.data();
  detail::run_team(resolve_threads(options.threads), np * d >= detail::k_parallel_min_entries, [&] {
    std::vector<T> pre;
#pragma omp for schedule(static)
    for (Index p = 0; p < np; ++p) {
      T* row = base + p * d;
      std::fill(row, row + d, T(0));
      const Index n = off[p + 1] - off[p];
      const EdgeId* e = walk + off[p];
      pre.resize(static_cast<std::size_t>(n) + 1);
      pre[0] = T(1);
      for (Index k = 0; k < n; ++k) {
        pre[static_cast<std::size_t>(k) + 1] =
            pre[static_cast<std::size_t>(k)] * theta.data()[e[k]];
      }
      T suffix = T(1);
      for (Index k = n - 1; k >= 0; --k) {
        if (param == nullptr) {
          row[e[k]] = pre[static_cast<std::size_t>(k)] * suffix;
        } else if (const Index c = param[e[k]]; c >= 0) {  // the chain rule over shared edges
          row[c] += pre[static_cast<std::size_t>(k)] * suffix;
        }
        suffix *= theta.data()[e[k]];
      }
    }
  });
  return out;
}

#define PATHLIFT_LIFTING_INSTANTIATE(T)                                                      \
  template Buffer<T> path_lifting(const Network&, std::span<const T>, const EngineOptions&); \
  template Buffer<T> path_lifting(const PathSet&, std::span<const T>, const EngineOptions&); \
  template CsrMatrix<T> jacobian(const Network&, std::span<const T>, const EngineOptions&);  \
  template CsrMatrix<T> jacobian(const PathSet&, std::span<const T>, const EngineOptions&);  \
  template CsrMatrix<T> jacobian_paper_formula(const PathSet&, std::span<const T>,           \
                                               std::span<const T>, const EngineOptions&);    \
  template Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> dense_jacobian( \
      const PathSet&, std::span<const T>, const EngineOptions&);
PATHLIFT_LIFTING_INSTANTIATE(double)
PATHLIFT_LIFTING_INSTANTIATE(float)
#undef PATHLIFT_LIFTING_INSTANTIATE

}  // namespace pathlift
