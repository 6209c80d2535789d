// The block operations of block_basis.hpp.

#include "src/dp/detail/block_basis.hpp"

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace pathlift::detail {

Index row_tasks(Index d) {
  return (d + k_rows_per_task - 1) / k_rows_per_task;
}

Eigen::MatrixXd cross(const ConstCols& a, const ConstCols& b, int threads) {
  return block_sum(a.rows(), a.cols(), b.cols(), threads,
                   [&](Index r0, Index nr, Eigen::MatrixXd& p) {
                     p.noalias() = a.middleRows(r0, nr).transpose() * b.middleRows(r0, nr);
                   });
}

void subtract(Cols x, const ConstCols& a, const Eigen::MatrixXd& c, int threads) {
  for_row_blocks(x.rows(), threads, [&](Index r0, Index nr) {
    x.middleRows(r0, nr).noalias() -= a.middleRows(r0, nr) * c;
  });
}

Eigen::MatrixXd subtract_cross(Cols x, const ConstCols& a, const Eigen::MatrixXd& c, int threads) {
  return block_sum(x.rows(), a.cols(), x.cols(), threads,
                   [&](Index r0, Index nr, Eigen::MatrixXd& p) {
                     auto xb = x.middleRows(r0, nr);
                     const auto ab = a.middleRows(r0, nr);
                     xb.noalias() -= ab * c;
                     p.noalias() = ab.transpose() * xb;
                   });
}

bool reorthogonalize(Cols x, const ConstCols& a, const Eigen::MatrixXd& c, double norm,
                     int threads) {
  if (x.cols() > 1) {
    // A block's next basis columns come from x by whitening, which may amplify a cosine by up
    // to 1e5 (directions down to 1e-5 of the largest are kept): the full pass.
    subtract(x, a, c, threads);
    return true;
  }
  std::vector<Index> lean;
  for (Index j = 0; j < c.rows(); ++j) {
    if (!(std::fabs(c(j, 0)) <= 1e-12 * norm)) {  // NaN: kept
      lean.push_back(j);
    }
  }
  if (lean.size() == static_cast<std::size_t>(a.cols())) {
    subtract(x, a, c, threads);
    return true;
  }
  if (lean.empty()) {
    return false;
  }
  for_row_blocks(x.rows(), threads, [&](Index r0, Index nr) {
    auto xb = x.middleRows(r0, nr);
    for (const Index j : lean) {
      xb.noalias() -= a.col(j).segment(r0, nr) * c.row(j);
    }
  });
  return true;
}

void transform(Cols x, const Eigen::MatrixXd& c, int threads) {
  for_row_blocks(x.rows(), threads, [&](Index r0, Index nr) {
    const Eigen::MatrixXd rows = x.middleRows(r0, nr);
    x.block(r0, 0, nr, c.cols()).noalias() = rows * c;
    x.block(r0, c.cols(), nr, x.cols() - c.cols()).setZero();
  });
}

Eigen::MatrixXd whitening(const Eigen::MatrixXd& g, double drop) {
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(g);
  const Eigen::VectorXd& e = es.eigenvalues();
  const double top = e.size() > 0 ? e.maxCoeff() : 0.0;
  std::vector<Index> keep;
  for (Index i = e.size(); i-- > 0;) {
    if (e(i) > drop * top && e(i) > 1e-28) {
      keep.push_back(i);
    }
  }
  Eigen::MatrixXd t(g.rows(), static_cast<Index>(keep.size()));
  for (std::size_t j = 0; j < keep.size(); ++j) {
    t.col(static_cast<Index>(j)) = es.eigenvectors().col(keep[j]) / std::sqrt(e(keep[j]));
  }
  return t;
}

Index orthonormalize(Cols w, const ConstCols& x, const ConstCols& p, int threads) {
  Index nw = w.cols();
  for (int round = 0; round < 2 && nw > 0; ++round) {
    auto wa = w.leftCols(nw);
    subtract(wa, x, cross(x, wa, threads), threads);
    if (p.cols() > 0) {
      subtract(wa, p, cross(p, wa, threads), threads);
    }
    for (Index j = 0; j < nw; ++j) {
      const double norm = wa.col(j).norm();
      wa.col(j) *= norm > 0 ? 1 / norm : 0.0;
    }
    const Eigen::MatrixXd t = whitening(cross(wa, wa, threads), 1e-12);
    transform(wa, t, threads);
    nw = t.cols();
  }
  return nw;
}

double pair_bound(const EigenOptions& options, Index d, double lambda_j, double lambda_0) {
  const double roundoff =
      64 * std::numeric_limits<double>::epsilon() * std::sqrt(static_cast<double>(d));
  return options.tolerance * std::fabs(lambda_j) + roundoff * std::max(lambda_0, 0.0);
}

}  // namespace pathlift::detail
