// The top eigenvalues of the path kernel K (kernel.hpp): dense (Eigen's SelfAdjointEigenSolver
// on K) or restarted Lanczos (Spectra) on the matrix-free product K v of kernel.cpp. Apart from
// kernel.cpp so that the two heavy template libraries compile in their own translation unit.

#include <fmt/format.h>

#include <Spectra/SymEigsSolver.h>
#include <Eigen/Eigenvalues>
#include <algorithm>
#include <array>
#include <exception>
#include <functional>
#include <stdexcept>

#include "pathlift/error.hpp"
#include "pathlift/kernel.hpp"
#include "pathlift/limits.hpp"
#include "src/core/detail/enum_names.hpp"
#include "src/core/detail/json.hpp"
#include "src/core/detail/progress.hpp"
#include "src/dp/detail/block_eigen.hpp"
#include "src/dp/detail/lanczos.hpp"
#include "src/model/detail/parameters.hpp"

namespace pathlift {

namespace {
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

/// Spectra's view of K: y = K x through a matrix-free product.
class SpectraKernelOp {
 public:
  using Scalar = double;
  SpectraKernelOp(Index d, const detail::BlockProduct& apply) : m_d(d), m_apply(&apply) {}
  [[nodiscard]] Eigen::Index rows() const { return m_d; }
  [[nodiscard]] Eigen::Index cols() const { return m_d; }
  void perform_op(const double* x, double* y) const {
    (*m_apply)(x, y, 1);
    ++m_products;
  }
  [[nodiscard]] Index products() const { return m_products; }

 private:
  Index m_d;
  const detail::BlockProduct* m_apply;
  mutable Index m_products = 0;
};

}  // namespace

namespace {

KernelEigenvalues dense_top_eigenvalues(const Network& net, std::span<const double> theta,
                                        Index count, const EigenOptions& options) {
  const Index d = net.num_params();
  const DenseMatrix k = kernel(net, theta, options.engine);
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

KernelEigenvalues lanczos_top_eigenvalues(Index d, const BlockProduct& apply, Index count,
                                          const EigenOptions& options) {
  if (count >= d) {
    throw std::invalid_argument(fmt::format(
        "Lanczos finds at most d - 1 = {} eigenvalues of K; use the dense method for all {}", d - 1,
        d));
  }
  if (options.max_iterations < 1 || !(options.tolerance > 0)) {
    throw std::invalid_argument(
        fmt::format("Lanczos needs max_iterations >= 1 and tolerance > 0 (got {} and {})",
                    options.max_iterations, options.tolerance));
  }
  Index ncv = options.subspace > 0 ? options.subspace : std::max(2 * count + 1, count + 20);
  ncv = std::min(ncv, d);
  if (ncv <= count) {
    throw std::invalid_argument(fmt::format(
        "Lanczos subspace {} must exceed the number of eigenvalues {} (and be <= d = {})", ncv,
        count, d));
  }
  SpectraKernelOp sop(d, apply);
  Spectra::SymEigsSolver<SpectraKernelOp> eigs(sop, count, ncv);
  KernelEigenvalues r;
  r.method = EigenMethod::lanczos;
  // The restarts run until convergence: the extent is unknown (a negative fraction).
  const ProgressScope progress(options.engine.progress, "eigenvalues of K (Lanczos)");
  try {
    eigs.init();
    eigs.compute(Spectra::SortRule::LargestAlge, options.max_iterations, options.tolerance,
                 Spectra::SortRule::LargestAlge);
  } catch (const std::exception&) {
    // Spectra throws when its small eigenproblem fails, e.g. when rank(K) < count and the
    // Krylov space collapses: inconclusive, reported as a status.
    r.status = EigenStatus::numerical_issue;
    r.products = sop.products();
    return r;
  }
  r.iterations = eigs.num_iterations();
  r.products = sop.products();
  switch (eigs.info()) {
    case Spectra::CompInfo::Successful:
      r.status = EigenStatus::converged;
      break;
    case Spectra::CompInfo::NotConverging:
      r.status = EigenStatus::not_converged;
      break;
    default:
      r.status = EigenStatus::numerical_issue;
      break;
  }
  r.values = eigs.eigenvalues();
  if (options.vectors && r.values.size() > 0) {
    r.vectors = eigs.eigenvectors(r.values.size());
    fix_signs(r.vectors);
    r.residuals = eigen_residuals(apply, r.values, r.vectors);
    r.products += r.values.size();
  }
  return r;
}

KernelEigenvalues matrix_free_top_eigenpairs(Index d, const BlockProduct& apply, Index count,
                                             const EigenOptions& options) {
  if (options.method == EigenMethod::lanczos) {
    return lanczos_top_eigenvalues(d, apply, count, options);
  }
  const Index block = lobpcg_block(count, options);
  // Automatic: Lanczos when LOBPCG's block does not fit d, or its two d x 3 block matrices
  // would exceed the memory limit (Lanczos keeps one d x ncv basis).
  if (options.method == EigenMethod::automatic &&
      (3 * block > d || lobpcg_bytes(d, block) >
                            static_cast<double>(effective_max_memory(options.engine.max_memory)))) {
    EigenOptions lanczos = options;
    lanczos.subspace = 0;  // the caller's subspace was LOBPCG's block, not Lanczos's ncv
    return lanczos_top_eigenvalues(d, apply, count, lanczos);
  }
  return lobpcg_top_eigenpairs(d, apply, count, options);
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
      d, [&op](const double* x, double* y, Index k) { op.apply(x, y, k); }, count, options);
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
