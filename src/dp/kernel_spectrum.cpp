// The top eigenvalues of the path kernel K (kernel.hpp): dense (Eigen's SelfAdjointEigenSolver
// on K), or block Lanczos or LOBPCG (block_eigen.hpp) on the matrix-free product K V of
// kernel.cpp. Apart from kernel.cpp so that Eigen's eigensolvers compile in their own
// translation unit.

#include <fmt/format.h>

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "pathlift/error.hpp"
#include "pathlift/kernel.hpp"
#include "pathlift/limits.hpp"
#include "src/core/enum_names.hpp"
#include "src/core/json.hpp"
#include "src/core/progress.hpp"
#include "src/dp/detail/block_eigen.hpp"
#include "src/dp/lanczos.hpp"
#include "src/network/parameters.hpp"

namespace pathlift {

namespace {

/// RangeError for K beyond float64 (`where`: the entry or product): its eigenvalues are too.
[[noreturn]] void throw_kernel_overflow(const std::string& where) {
  throw RangeError(fmt::format(
      "{}: K overflows float64, and its eigenvalues are beyond float64; scale theta down (K "
      "scales as theta^(2 (depth - 1)))",
      where));
}

using detail::ProgressScope;
}  // namespace

// ---------------------------------------------------------------------------------------------
// Top eigenvalues

namespace {

constexpr std::array k_eigen_status_names{
    detail::EnumName<EigenStatus>{EigenStatus::converged, "converged"},
    detail::EnumName<EigenStatus>{EigenStatus::not_converged, "not_converged"},
    detail::EnumName<EigenStatus>{EigenStatus::numerical_issue, "numerical_issue"}};

constexpr std::array k_eigen_method_names{
    detail::EnumName<EigenMethod>{EigenMethod::automatic, "automatic"},
    detail::EnumName<EigenMethod>{EigenMethod::automatic, "auto"},
    detail::EnumName<EigenMethod>{EigenMethod::lanczos, "lanczos"},
    detail::EnumName<EigenMethod>{EigenMethod::dense, "dense"},
    detail::EnumName<EigenMethod>{EigenMethod::lobpcg, "lobpcg"}};

}  // namespace

std::string_view to_string(EigenStatus status) {
  return detail::enum_name(k_eigen_status_names, status);
}

EigenStatus parse_eigen_status(std::string_view name) {
  return detail::parse_enum(k_eigen_status_names, name, "eigenvalue status");
}

std::string_view to_string(EigenMethod method) {
  return detail::enum_name(k_eigen_method_names, method);
}

EigenMethod parse_eigen_method(std::string_view name) {
  return detail::parse_enum(k_eigen_method_names, name, "eigenvalue method");
}

std::string to_json(const KernelEigenvalues& result, int indent) {
  detail::Json values = detail::Json::array();
  for (const double x : result.values) {
    values.push_back(detail::number_or_null(x));
  }
  detail::Json j;
  j["eigenvalues"] = std::move(values);
  j["status"] = std::string(to_string(result.status));
  j["method"] = std::string(to_string(result.method));
  j["products"] = result.products;
  j["iterations"] = result.iterations;
  if (result.residuals.size() == 0) {
    j["residuals"] = nullptr;
  } else {
    detail::Json residuals = detail::Json::array();
    for (const double x : result.residuals) {
      residuals.push_back(detail::number_or_null(x));
    }
    j["residuals"] = std::move(residuals);
  }
  return j.dump(indent);
}

namespace {

/// Whether two non-input nodes have the same activation and equal weights on edges from the
/// same sources (detail::any_equal_rows): a permutation symmetry of the network needs such a
/// pair at the first layer it moves.
bool has_twin_units(const Network& net, std::span<const double> theta) {
  const std::vector<double> w = net.edge_weights(theta);
  std::vector<NodeId> units;
  for (NodeId v = 0; v < static_cast<NodeId>(net.num_nodes()); ++v) {
    if (!net.is_input(v)) {
      units.push_back(v);
    }
  }
  return detail::any_equal_rows(static_cast<Index>(units.size()), [&](Index i,
                                                                      std::vector<double>& row) {
    const NodeId v = units[static_cast<std::size_t>(i)];
    std::vector<std::pair<NodeId, double>> in;
    for (const EdgeId e : net.in_edges(v)) {
      in.emplace_back(net.source(e), w[static_cast<std::size_t>(e)]);
    }
    std::sort(in.begin(), in.end(), [](const auto& a, const auto& b) {
      return a.first != b.first
                 ? a.first < b.first
                 : std::bit_cast<std::uint64_t>(a.second) < std::bit_cast<std::uint64_t>(b.second);
    });
    const Activation& act = net.activation(v);
    row.assign({static_cast<double>(act.kind), act.negative_slope});
    for (const auto& [u, x] : in) {
      row.push_back(static_cast<double>(u));
      row.push_back(x);
    }
    return std::span<const double>(row);
  });
}

KernelEigenvalues dense_top_eigenvalues(const Network& net, std::span<const double> theta,
                                        Index count, const EigenOptions& options) {
  const Index d = net.num_params();
  const DenseMatrix k = kernel(net, theta, options.engine);
  for (Index i = 0; i < k.size(); ++i) {
    if (!std::isfinite(k.data()[i])) {
      throw_kernel_overflow(fmt::format("K[{}, {}] is {}", i / d, i % d, k.data()[i]));
    }
  }
  const ProgressScope progress(
      options.engine.progress,
      "eigenvalues of K (dense)");  // the O(d^3) eigensolver reports nothing
  // K is symmetric: its row-major storage read column-major is K itself.
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(
      Eigen::Map<const Eigen::MatrixXd>(k.data(), d, d),
      options.vectors ? Eigen::ComputeEigenvectors : Eigen::EigenvaluesOnly);
  KernelEigenvalues r;
  r.dense = true;
  r.method = EigenMethod::dense;
  if (es.info() != Eigen::Success) {
    r.status = EigenStatus::numerical_issue;
    return r;
  }
  r.values = es.eigenvalues().reverse().head(count);
  if (options.vectors) {
    r.vectors = es.eigenvectors().rowwise().reverse().leftCols(count);
    detail::fix_signs(r.vectors);
    const KernelOperator op(net, theta);
    r.residuals = detail::eigen_residuals(
        [&op](const double* x, double* y, Index c) { op.apply(x, y, c); }, r.values, r.vectors);
  }
  return r;
}

}  // namespace

namespace detail {

KernelEigenvalues matrix_free_top_eigenpairs(Index d, const BlockProduct& apply, Index count,
                                             bool twins, const EigenOptions& options) {
  // A product beyond float64 (K's entries overflow: a scale factor of 1e200, weights of 1e80)
  // is a result beyond float64, not a numerical issue of the iteration.
  const BlockProduct checked = [&apply, d](const double* v, double* out, Index k) {
    apply(v, out, k);
    const Index n = d * k;
    for (Index i = 0; i < n; ++i) {
      if (!std::isfinite(out[i])) {
        throw_kernel_overflow(fmt::format("K v: entry {} of a product is {}", i % d, out[i]));
      }
    }
  };
  if (options.method == EigenMethod::lobpcg) {
    return lobpcg_top_eigenpairs(d, checked, count, options);
  }
  return lanczos_top_eigenpairs(d, checked, count, twins ? count : 1, options);
}

}  // namespace detail

KernelEigenvalues kernel_top_eigenvalues(const Network& net, std::span<const double> theta,
                                         Index count, const EigenOptions& options) {
  check_theta_size(net, theta.size());
  const Index d = net.num_params();
  if (count < 1 || count > d) {
    throw std::invalid_argument(fmt::format(
        "asked for {} eigenvalues of K, which is {} x {}: ask for 1 to {}", count, d, d, d));
  }
  const bool small = d <= 256 || count > d / 2;
  if (options.method == EigenMethod::dense || (options.method == EigenMethod::automatic && small)) {
    return dense_top_eigenvalues(net, theta, count, options);
  }
  const KernelOperator op(net, theta);
  KernelEigenvalues r = detail::matrix_free_top_eigenpairs(
      d, [&op](const double* x, double* y, Index k) { op.apply(x, y, k); }, count,
      options.method != EigenMethod::lobpcg && has_twin_units(net, theta), options);
  if (options.method == EigenMethod::automatic && r.status != EigenStatus::converged &&
      dense_bytes(d, d, sizeof(double)) <= effective_max_memory(options.engine.max_memory)) {
    // The iteration was inconclusive (typically rank(K) < count) and K fits: the dense solver
    // decides.
    const Index products = r.products;
    r = dense_top_eigenvalues(net, theta, count, options);
    r.products += products;
  }
  return r;
}

}  // namespace pathlift
