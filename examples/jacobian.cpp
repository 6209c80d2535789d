// The Jacobian dPhi(theta) of a small ReLU MLP, in CSR form (one row per path, one column per
// parameter), checked against the skeleton B: both have the same pattern, and the row of a
// path holds the product of its other weights.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <span>
#include <vector>

#include <pathlift/pathlift.hpp>

int main() {
  // 3 inputs, hidden layers of 4 and 4 neurons, 2 outputs, with biases.
  const pathlift::Network net = pathlift::feed_forward(3, {4, 4}, 2);
  const std::vector<double> theta = pathlift::normal_weights(net.num_edges(), 1);
  const std::span<const double> t(theta);

  const pathlift::CsrMatrix<double> jac = pathlift::jacobian<double>(net, t);
  const pathlift::CsrPattern b = pathlift::skeleton(net);
  const auto phi = pathlift::path_lifting<double>(net, t);
  std::printf("P = %lld paths, d = %lld parameters, nnz = %lld\n",
              static_cast<long long>(jac.rows()), static_cast<long long>(jac.cols()),
              static_cast<long long>(jac.nnz()));

  // dPhi_p / dtheta_k = Phi_p / theta_k on the edges k of path p (no zero weight here).
  double worst = 0;
  const auto offsets = jac.pattern.offsets();
  for (pathlift::Index p = 0; p < jac.rows(); ++p) {
    const auto cols = jac.pattern.row(p);
    const auto b_cols = b.row(p);
    if (!std::equal(cols.begin(), cols.end(), b_cols.begin(), b_cols.end())) {
      std::printf("row %lld: the pattern of dPhi differs from B\n", static_cast<long long>(p));
      return 1;
    }
    for (std::size_t j = 0; j < cols.size(); ++j) {
      const auto k = static_cast<std::size_t>(cols[j]);
      const double value = jac.values[static_cast<std::size_t>(offsets[p]) + j];
      const double expected = phi[static_cast<std::size_t>(p)] / theta[k];
      worst = std::max(worst, std::abs(value - expected) / std::max(1.0, std::abs(expected)));
    }
  }
  std::printf("largest relative |dPhi_pk - Phi_p / theta_k| = %.3g\n", worst);
  return worst < 1e-12 ? 0 : 1;
}
