// rank.hpp: the certified rank of B (modular lower bound, rescaling-vector upper bound), the
// numerical rank of dPhi, the theorem check, and pathlift.rank(): the CLI's `rank --json` as a
// dict, choosing the path-free Gram route when the paths do not fit in memory.

#include <fmt/format.h>

#include "pathlift/symmetry.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common.hpp"
#include "pathlift/builtins.hpp"
#include "pathlift/counting.hpp"
#include "pathlift/error.hpp"
#include "pathlift/kernel.hpp"
#include "pathlift/lifting.hpp"
#include "pathlift/limits.hpp"
#include "pathlift/rank.hpp"
#include "rank_args.hpp"
#include "results.hpp"

namespace pathlift::python {

namespace {

RankOptions rank_options(const std::string& method, std::uint64_t prime, int threads,
                         std::size_t max_memory, const py::object& progress = py::bool_(false)) {
  RankOptions o;
  o.method = parse_rank_method(method);
  o.prime = prime;
  o.engine = engine_options(threads, max_memory, progress, "rank");
  return o;
}

NumericalRankOptions numerical_options(const std::string& method, double tolerance, double min_gap,
                                       std::size_t max_memory) {
  if (!(min_gap > 0) || !std::isfinite(min_gap)) {
    throw std::invalid_argument(fmt::format("min_gap must be > 0 (got {})", min_gap));
  }
  if (!std::isfinite(tolerance) || tolerance < 0) {
    throw std::invalid_argument(
        fmt::format("tolerance must be >= 0 (0: the default), got {}", tolerance));
  }
  NumericalRankOptions o;
  o.method = parse_numerical_rank_method(method);
  o.tolerance = tolerance;
  o.min_gap = min_gap;
  o.engine.max_memory = max_memory;
  return o;
}

/// theta for the rank check: the argument, else the network's weights, else
/// normal_weights(d, 0).
std::vector<double> rank_theta(const py::object& theta, const NetworkArg& net) {
  if (theta.is_none() && net.model_weights().is_none()) {
    return normal_weights(net.model().num_params(), 0);
  }
  const auto t = theta_argument<double>(theta, net);
  return {t.data(), t.data() + t.size()};
}

/// `h` as a C-contiguous array of T (converted); ValueError when it cannot be.
template <class T>
py::array_t<T, py::array::c_style | py::array::forcecast> checked_array(const py::handle& h,
                                                                        const char* what) {
  auto a = py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(h);
  if (!a) {
    PyErr_Clear();
    throw std::invalid_argument(fmt::format("{} cannot be read as an array of numbers", what));
  }
  return a;
}

/// numpy's dtype.kind of an array: 'u', 'i', 'b', 'f', ...
char dtype_kind(const py::handle& array) {
  const auto kind = py::str(array.attr("dtype").attr("kind")).cast<std::string>();
  return kind.empty() ? '?' : kind.front();
}

/// Before entries are reduced modulo `prime`: 0 or 1 is no prime (and x % 0 would trap); the
/// library says whether a larger one is.
void require_modulus(std::uint64_t prime) {
  if (prime < 2) {
    throw std::invalid_argument(fmt::format("prime must be a prime < 2^63 (got {})", prime));
  }
}

/// An integer matrix (numpy or scipy) reduced modulo `prime` into a dense ModMatrix.
ModMatrix mod_matrix_argument(const py::object& obj, std::uint64_t prime, const char* what) {
  py::module_ np = py::module_::import("numpy");
  py::object dense = obj;
  if (py::hasattr(obj, "toarray") && !py::isinstance<py::array>(obj)) {
    dense = obj.attr("toarray")();
  }
  const py::object a = np.attr("asarray")(array_of(dense, what));
  const auto ndim = a.attr("ndim").cast<Index>();
  if (ndim != 2) {
    throw std::invalid_argument(
        fmt::format("{} must be a 2-D integer matrix, got {} dims", what, ndim));
  }
  const char kind = dtype_kind(a);
  const auto shape = py::tuple(a.attr("shape"));
  ModMatrix out;
  out.prime = prime;
  out.rows = shape[0].cast<Index>();
  out.cols = shape[1].cast<Index>();
  out.data.resize(static_cast<std::size_t>(out.rows * out.cols));
  require_modulus(prime);
  if (kind == 'u') {
    const auto u = checked_array<std::uint64_t>(a, what);
    for (std::size_t i = 0; i < out.data.size(); ++i) {
      out.data[i] = u.data()[i] % prime;
    }
  } else if (kind == 'i' || kind == 'b') {
    const auto s = checked_array<std::int64_t>(a, what);
    const auto p = static_cast<std::int64_t>(prime);
    for (std::size_t i = 0; i < out.data.size(); ++i) {
      std::int64_t r = s.data()[i] % p;
      out.data[i] = static_cast<std::uint64_t>(r < 0 ? r + p : r);
    }
  } else if (kind == 'f') {
    const auto f = checked_array<double>(a, what);
    const auto p = static_cast<std::int64_t>(prime);
    for (std::size_t i = 0; i < out.data.size(); ++i) {
      const double x = f.data()[i];
      if (!(std::fabs(x) < 9.2e18) || std::trunc(x) != x) {
        throw std::invalid_argument(
            fmt::format("{} must have integer entries, it has {}", what, x));
      }
      const std::int64_t r = static_cast<std::int64_t>(x) % p;
      out.data[i] = static_cast<std::uint64_t>(r < 0 ? r + p : r);
    }
  } else {
    throw std::invalid_argument(
        fmt::format("{} must have integer entries, got dtype {}", what, repr_of(a.attr("dtype"))));
  }
  return out;
}

/// An integer matrix (scipy sparse, or anything it accepts) as a SparseIntMatrix. Floating
/// values must be integers; unsigned values beyond int64 are reduced modulo `prime`.
SparseIntMatrix int_matrix_argument(const py::object& obj, std::uint64_t prime, const char* what) {
  py::module_ sparse = py::module_::import("scipy.sparse");
  py::object csr;
  try {
    csr = sparse.attr("csr_matrix")(obj, py::arg("copy") = true);
  } catch (const py::error_already_set& e) {
    throw std::invalid_argument(
        fmt::format("{} must be a scipy.sparse matrix or a 2-D array ({})", what, e.what()));
  }
  csr.attr("sum_duplicates")();
  csr.attr("eliminate_zeros")();
  const auto shape = py::tuple(csr.attr("shape"));
  SparseIntMatrix out(shape[0].cast<Index>(), shape[1].cast<Index>());
  const auto indptr = checked_array<std::int64_t>(csr.attr("indptr"), what);
  const auto indices = checked_array<std::int64_t>(csr.attr("indices"), what);
  const py::object data = csr.attr("data");
  const char kind = dtype_kind(data);
  std::vector<std::int64_t> values(static_cast<std::size_t>(indices.size()));
  if (kind == 'u') {
    require_modulus(prime);
    const auto u = checked_array<std::uint64_t>(data, what);
    for (std::size_t i = 0; i < values.size(); ++i) {
      const std::uint64_t x = u.data()[i];
      values[i] = static_cast<std::int64_t>(
          x > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) ? x % prime : x);
    }
  } else if (kind == 'i' || kind == 'b') {
    const auto s = checked_array<std::int64_t>(data, what);
    std::copy(s.data(), s.data() + s.size(), values.begin());
  } else if (kind == 'f') {
    const auto f = checked_array<double>(data, what);
    for (std::size_t i = 0; i < values.size(); ++i) {
      const double x = f.data()[i];
      if (!(std::fabs(x) < 9.2e18) || std::trunc(x) != x) {
        throw std::invalid_argument(
            fmt::format("{} must have integer entries, it has {}", what, x));
      }
      values[i] = static_cast<std::int64_t>(x);
    }
  } else {
    throw std::invalid_argument(fmt::format("{} must have integer entries, got dtype {}", what,
                                            repr_of(data.attr("dtype"))));
  }
  for (Index r = 0; r < out.rows(); ++r) {
    auto& row = out.row_entries[static_cast<std::size_t>(r)];
    for (std::int64_t i = indptr.data()[r]; i < indptr.data()[r + 1]; ++i) {
      row.push_back({static_cast<EdgeId>(indices.data()[i]), values[static_cast<std::size_t>(i)]});
    }
  }
  return out;
}

std::vector<EdgeId> column_order_argument(const py::object& order) {
  std::vector<EdgeId> out;
  if (order.is_none()) {
    return out;
  }
  const auto a = checked_array<std::int64_t>(order, "column_order");
  if (a.ndim() != 1) {
    throw std::invalid_argument("column_order must be a 1-D sequence of column indices");
  }
  for (py::ssize_t i = 0; i < a.size(); ++i) {
    out.push_back(static_cast<EdgeId>(a.data()[i]));
  }
  return out;
}

constexpr const char* rank_engine_doc =
    "\n\nmethod: the lower bound of rank(B): 'auto' (B, sparse, fill-free pivot order, when "
    "enumerated; else the path basis, or with shared parameters and on a layer network the "
    "symmetry theorem), 'skeleton' (B), 'gram' (B^T B, dense, FLINT), 'path_basis' (d - h paths "
    "with distinct leading columns, no enumeration) or 'symmetry' (rank(B) = d - h_sym, ker B "
    "being the rescaling changes; h_sym exact, on a layer network never unrolled). prime: a "
    "prime < "
    "2^63 (default 2^61 - "
    "1). threads: 0 = all cores. max_memory: bytes, 0 = half of RAM (TooLarge, a MemoryError, "
    "over it). The GIL is released.";

void bind_modular_ranks(py::module_& m) {
  m.def("is_prime", &is_prime, py::arg("n"),
        "Whether n is prime (deterministic Miller-Rabin, exact for every 64-bit n).");
  m.def(
      "rank_anchor_edges",
      [](const NetworkArg& arg) {
        const Network& net = arg.dag(0);
        return index_array(rank_anchor_edges(net));
      },
      py::arg("net"),
      "The anchor edge of each hidden node (its out-edge of smallest index), in net.hidden "
      "order: the h x h triangular block that makes the z_v independent.");
  m.def(
      "rank_column_order",
      [](const NetworkArg& arg) {
        const Network& net = arg.dag(0);
        return index_array(rank_column_order(net));
      },
      py::arg("net"),
      "A fill-free pivot order for B (non-anchor edges by decreasing topological position of "
      "their target, then the anchors): pass it as modular_rank(B, column_order=...).");

  m.def(
      "modular_rank",
      [](const py::object& matrix, Prime prime, const py::object& column_order, Index stop_at,
         int threads) -> Index {
        if (threads < 0) {
          throw std::invalid_argument(
              fmt::format("threads must be >= 0 (0 = all cores), got {}", threads));
        }
        if (py::isinstance<py::array>(matrix)) {
          if (!column_order.is_none() || stop_at != -1) {
            throw std::invalid_argument(
                "column_order and stop_at apply to sparse elimination: pass a scipy.sparse "
                "matrix");
          }
          const ModMatrix mm = mod_matrix_argument(matrix, prime, "matrix");
          py::gil_scoped_release release;
          return modular_rank(mm);
        }
        ModularRankOptions o;
        o.prime = prime;
        o.column_order = column_order_argument(column_order);
        o.stop_at = stop_at;
        const SparseIntMatrix sm = int_matrix_argument(matrix, prime, "matrix");
        py::gil_scoped_release release;
        return modular_rank(sm, o);
      },
      py::arg("matrix"), py::kw_only(), py::arg("prime") = default_prime,
      py::arg("column_order") = py::none(), py::arg("stop_at") = -1, py::arg("threads") = 0,
      R"doc(The rank of an integer matrix modulo a prime: a certified lower bound of its rank over Q.
A scipy.sparse matrix (or a list of lists) goes through sparse Gaussian elimination
(column_order: the pivot order, e.g. rank_column_order(net) for B; stop_at: stop once the
rank reaches it); a 2-D numpy integer array (e.g. skeleton_gram) through dense elimination
(entries reduced modulo prime; `threads` OpenMP threads). Float entries must be integers.
prime: a prime < 2^63 (default 2^61 - 1); ValueError otherwise.
Complexity: O(nnz) to O(rows * rank * cols) sparse; O(rows * cols * rank) dense.)doc");

  m.def(
      "certify_rank",
      [](const NetworkArg& arg, const py::object& b, const std::string& method, Prime prime,
         int threads, std::size_t max_memory) {
        const Network& net = arg.dag(max_memory);
        const RankOptions o = rank_options(method, prime, threads, max_memory);
        if (b.is_none()) {
          py::gil_scoped_release release;
          return certify_rank(net, o);
        }
        if (py::isinstance<PathSet>(b)) {
          const auto paths = b.cast<std::shared_ptr<PathSet>>();
          py::gil_scoped_release release;
          return certify_rank(net, skeleton(*paths, o.engine), o);
        }
        const CsrPattern pattern = pattern_argument(b, "B");
        py::gil_scoped_release release;
        return certify_rank(net, pattern, o);
      },
      py::arg("net"), py::arg("B") = py::none(), py::kw_only(), py::arg("method") = "auto",
      py::arg("prime") = default_prime, py::arg("threads") = 0, py::arg("max_memory") = 0,
      (std::string(R"doc(Certifies rank(B) exactly, with no probability involved (Theorem 1 says
d - h): a lower bound from Gaussian elimination modulo a prime, an upper bound from the h
rescaling vectors checked in the kernel (B z_v = 0 on every row) and independent. Returns a
RankCertificate (lower, upper, certified, rank, method, ...).

B: None (the paths are enumerated: TooLarge when B does not fit), a PathSet of net, or the
skeleton as a 0/1 matrix (scipy.sparse or numpy; P x d) -- e.g. a modified B, whose kernel
failures the certificate then reports. ValueError when B has not d columns or is not 0/1.
Complexity: O(nnz(B)) for the skeleton method.)doc") +
       rank_engine_doc)
          .c_str());

  m.def(
      "certify_rank_from_gram",
      [](const NetworkArg& arg, const py::object& gram, Prime prime, int threads) {
        const Network& net = arg.dag(0);
        if (threads < 0) {
          throw std::invalid_argument(
              fmt::format("threads must be >= 0 (0 = all cores), got {}", threads));
        }
        const ModMatrix g = mod_matrix_argument(gram, prime, "gram");
        py::gil_scoped_release release;
        return certify_rank_from_gram(net, g);
      },
      py::arg("net"), py::arg("gram"), py::arg("prime") = default_prime, py::kw_only(),
      py::arg("threads") = 0,
      R"doc(Certifies rank(B) from its Gram matrix B^T B (d x d integers, e.g. skeleton_gram(net) or
skeleton_gram_mod(net, prime); reduced modulo prime), built without enumerating a path:
lower bound rank(B^T B mod p), upper bound d - #{v : (B^T B) z_v = 0 mod p}. Returns a
RankCertificate. ValueError for a matrix that is not d x d or a prime that is not a prime
< 2^63. threads: accepted for compatibility (the elimination runs on one thread).
Complexity: O(d^2 h + d^3). The GIL is released.)doc");

  m.def(
      "certify_rank_by_path_basis",
      [](const NetworkArg& arg) {
        const Network& net = arg.dag(0);
        py::gil_scoped_release release;
        return certify_rank_by_path_basis(net);
      },
      py::arg("net"),
      R"doc(Certifies rank(B) = d - h without enumerating a path and without elimination: for every
non-anchor edge e = (x -> y) the path (first in-edges back from x to an input) + e + (anchors
from y to an output) is a row of B; their leading columns in rank_column_order(net) are checked
distinct (a unit-triangular (d - h) x (d - h) submatrix), each path checked to be an
input-to-output path by one dynamic programme. Returns a RankCertificate (method
'path_basis'). Complexity: O(m + d log d): ff:784,2048,2048,2048,10 (d = 10 M) in about a
second. The GIL is released.)doc");

  m.def(
      "path_basis_path",
      [](const NetworkArg& arg, EdgeId edge) {
        const Network& net = arg.dag(0);
        return index_array(path_basis_path(net, edge));
      },
      py::arg("net"), py::arg("edge"),
      "The path of the triangular path basis for a non-anchor edge (int64 edge ids, from an "
      "input to an output): first in-edges back to an input, the edge, anchors to an output.");
}

void bind_rank_theorem(py::module_& m) {
  m.def(
      "certify_jacobian_rank",
      [](const NetworkArg& arg, const py::object& theta, const RankCertificate& rank_b,
         const py::object& b, Prime prime) {
        const Network& net = arg.dag(0);
        const auto t = theta_argument<double>(theta, arg);
        RankOptions o;
        o.prime = prime;
        std::optional<CsrPattern> pattern;
        if (!b.is_none()) {
          pattern = py::isinstance<PathSet>(b) ? skeleton(*b.cast<std::shared_ptr<PathSet>>())
                                               : pattern_argument(b, "B");
        }
        py::gil_scoped_release release;
        return certify_jacobian_rank(net, as_span<double>(t), rank_b, pattern ? &*pattern : nullptr,
                                     o);
      },
      py::arg("net"), py::arg("theta"), py::arg("rank_B"), py::arg("B") = py::none(), py::kw_only(),
      py::arg("prime") = default_prime,
      R"doc(Certifies rank(dPhi(theta)) exactly from a RankCertificate of B (certify_rank): with no
zero theta_k rank(dPhi) = rank(B) (method 'identity'); with zero weights and B given (a
PathSet or the 0/1 skeleton), elimination modulo `prime` (odd) of the exact entries of dPhi
(method 'elimination': a lower bound, which meets the upper bound unless the rank drops);
with zero weights and no B, or shared parameters, the exact rank by the zero pattern (method
'zero_pattern', no path enumerated); with prime 2 and B given, lower bound 0 (method 'none').
Upper bound: rank_B.upper. rank() certifies a drop that the elimination leaves bounded by the
zero pattern. Returns a JacobianRankCertificate. The GIL is released.)doc");

  m.def(
      "dyadic_residue", [](double x, Prime prime) { return dyadic_residue(x, prime); },
      py::arg("x"), py::arg("prime") = default_prime,
      "The residue modulo an odd prime of a finite double x = m 2^e (the ring map "
      "Z[1/2] -> Z/pZ). ValueError for a non-finite x or a prime that is not odd.");

  m.def(
      "numerical_rank",
      [](const py::object& j, const std::string& method, double tolerance, double min_gap,
         Index svd_max_entries, std::size_t max_memory) {
        NumericalRankOptions o = numerical_options(method, tolerance, min_gap, max_memory);
        o.svd_max_entries = svd_max_entries;
        const CsrMatrix<double> jm = csr_argument(j, "J");
        py::gil_scoped_release release;
        return numerical_rank(jm, o);
      },
      py::arg("J"), py::kw_only(), py::arg("method") = "auto", py::arg("tolerance") = 0.0,
      py::arg("min_gap") = NumericalRankOptions{}.min_gap,
      py::arg("svd_max_entries") = NumericalRankOptions{}.svd_max_entries,
      py::arg("max_memory") = 0,
      R"doc(The numerical rank of J (dPhi: a scipy.sparse matrix or a dense array, copied once) from
its singular values: dense SVD ('svd', when P * d <= svd_max_entries under 'auto') or the
eigenvalues of J^T J ('eig'). tolerance: absolute, on the singular values; 0 = the default
(max(P, d) eps sigma_max for svd, 10 sqrt(d eps) sigma_max for eig). The status is
'inconclusive' when the gap at the cut is below min_gap. Returns a NumericalRank (rank,
tolerance, gap, status, method, singular_values). TooLarge (MemoryError) when the dense
matrix needed exceeds max_memory. The GIL is released.)doc");

  m.def(
      "check_rank_theorem",
      [](const NetworkArg& arg, const py::object& theta, const std::string& method, Prime prime,
         const std::string& jacobian_method, double tolerance, double min_gap,
         const py::object& numerical, int threads, std::size_t max_memory) {
        const Network& net = arg.dag(max_memory);
        const RankOptions ro = rank_options(method, prime, threads, max_memory);
        NumericalRankOptions no =
            numerical_options(jacobian_method, tolerance, min_gap, max_memory);
        no.when = numerical_when(numerical);
        const auto t = theta_argument<double>(theta, arg);
        py::gil_scoped_release release;
        return check_rank_theorem(net, as_span<double>(t), ro, no);
      },
      py::arg("net"), py::arg("theta") = py::none(), py::kw_only(), py::arg("method") = "auto",
      py::arg("prime") = default_prime, py::arg("jacobian_method") = "auto",
      py::arg("tolerance") = 0.0, py::arg("min_gap") = NumericalRankOptions{}.min_gap,
      py::arg("numerical") = py::none(), py::arg("threads") = 0, py::arg("max_memory") = 0,
      (std::string(R"doc(Theorem 1 at theta: enumerates the paths, certifies rank(B) and
rank(dPhi(theta)), computes the numerical rank of dPhi, and concludes. Returns a RankReport
(d, h, h_sym, expected, rank_B, rank_J_exact, rank_J, rank_J_note, zero_weights, status,
explanation, failed; to_dict()). With shared parameters or fixed edges (a CNN, a skip) the
bound is d - h_sym and a rank below it is status below_symmetry_bound (docs/rank.md). numerical: None skips the numerical rank when its dense
linear algebra would take more than about 10 s, True always computes it, False never. theta: d finite numbers, None
for the stored weights. jacobian_method, tolerance, min_gap: as in numerical_rank. TooLarge
(MemoryError) when B does not fit: rank() then takes the path-free route.)doc") +
       rank_engine_doc)
          .c_str());

  m.def(
      "rank",
      [](const NetworkArg& arg, const py::object& theta, const py::object& enumerate,
         const std::string& method, Prime prime, const std::string& jacobian_method,
         double tolerance, double min_gap, const py::object& numerical, int threads,
         const py::object& progress, std::size_t max_memory) {
        // A LayerNetwork's own limit bounds its unrolling (and the enumeration) by default.
        const RankOptions ro =
            rank_options(method, prime, threads, arg.unroll_limit(max_memory), progress);
        NumericalRankOptions no =
            numerical_options(jacobian_method, tolerance, min_gap, ro.engine.max_memory);
        no.when = numerical_when(numerical);
        const std::vector<double> t = rank_theta(theta, arg);
        const RankRoute route = enumerate.is_none()      ? RankRoute::automatic
                                : enumerate.cast<bool>() ? RankRoute::enumerate
                                                         : RankRoute::path_free;
        if (route == RankRoute::enumerate) {
          (void)arg.dag(max_memory);  // unrolled within the LayerNetwork's limit, kept
        }
        RankReport rep;
        {
          py::gil_scoped_release release;
          rep = check_rank_theorem(arg.model(), t, ro, no, route);
        }
        if (rep.rank_J_skipped) {
          rep.rank_J_note += " (numerical=True computes it)";
        }
        return from_json(to_json(rep, -1));
      },
      py::arg("net"), py::arg("theta") = py::none(), py::kw_only(),
      py::arg("enumerate") = py::none(), py::arg("method") = "auto",
      py::arg("prime") = default_prime, py::arg("jacobian_method") = "auto",
      py::arg("tolerance") = 0.0, py::arg("min_gap") = NumericalRankOptions{}.min_gap,
      py::arg("numerical") = py::none(), py::arg("threads") = 0, py::arg("progress") = py::none(),
      py::arg("max_memory") = 0,
      (std::string(R"doc(`pathlift rank --json` as a dict, with exactly the CLI's keys (the
library's JSON form of the report, docs/rank.md): d, h, h_sym, expected (d - h_sym, which is
d - h with one parameter per edge), rank_B (certified,
else None), rank_B_lower, rank_B_upper, rank_B_certified, rank_J (numerical rank of dPhi at
theta, or None), rank_J_tolerance, rank_J_gap, status (see RankReport), explanation,
rank_J_exact, rank_J_exact_lower, rank_J_exact_upper, rank_J_certified, and more.

enumerate: None (default) enumerates the paths when B and dPhi fit in max_memory (judged from
the DP counts; with shared parameters, when the numerical rank would run and no path carries
a parameter twice) and otherwise certifies rank(B) without a path: the triangular path basis, or
with shared parameters and fixed edges (a CNN) rank(B) = d - h_sym by the symmetry theorem,
h_sym computed on the layer graph without unrolling (resnet18 at 3x224x224 in about a second).
rank_J is then None; rank(dPhi) is certified by the identity when no theta_k is 0, else by the
zero pattern (exact; on a layer network when its zeros are biases, else on the unrolled DAG
when it fits);
True forces enumeration (TooLarge when it does not fit, NetworkError when a path carries a
parameter twice), False the path-free route.
numerical: None skips the numerical rank of dPhi when its dense linear algebra would take more
than about 10 s (saying so in rank_J_note), True always computes it, False never.
theta: d finite numbers; None uses the stored weights, else normal_weights(d, 0) (the CLI's
default). jacobian_method, tolerance, min_gap: as in numerical_rank.

Example::

    pathlift.rank(pathlift.feed_forward(5, [16, 16], 2))["rank_B"]   # 402 - 32 = 370)doc") +
       rank_engine_doc)
          .c_str());
}

}  // namespace

void bind_rank(py::module_& m) {
  bind_modular_ranks(m);
  bind_rank_theorem(m);
}

}  // namespace pathlift::python
