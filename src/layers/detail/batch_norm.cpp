// batch_norm_coefficients() and fold_batch_norm() of layer_graph_builder.hpp: an eval-mode
// batch norm as the affine map y = a x + b per channel.

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "pathlift/error.hpp"
#include "pathlift/layer_graph_builder.hpp"

namespace pathlift {

BatchNormCoefficients batch_norm_coefficients(std::span<const double> mean,
                                              std::span<const double> var, double eps,
                                              std::string_view where) {
  if (mean.size() != var.size()) {
    throw std::invalid_argument(fmt::format("{}: {} running means but {} running variances", where,
                                            mean.size(), var.size()));
  }
  if (!std::isfinite(eps)) {
    throw NetworkError(fmt::format("{}: epsilon {} is not finite", where, eps));
  }
  BatchNormCoefficients c;
  c.std.resize(mean.size());
  c.mean.assign(mean.begin(), mean.end());
  for (std::size_t k = 0; k < mean.size(); ++k) {
    const double v = var[k] + eps;
    if (!std::isfinite(mean[k]) || !(v > 0) || !std::isfinite(v)) {
      throw NetworkError(fmt::format(
          "{}: channel {} has running mean {} and running variance {} (+ epsilon {}): the "
          "variance plus epsilon must be positive and both finite",
          where, k, mean[k], var[k], eps));
    }
    c.std[k] = std::sqrt(v);
  }
  return c;
}

BatchNormAffine fold_batch_norm(std::span<const double> gamma, std::span<const double> beta,
                                std::span<const double> mean, std::span<const double> var,
                                double eps, std::string_view where) {
  if (gamma.size() != mean.size() || beta.size() != mean.size()) {
    throw NetworkError(
        fmt::format("{}: scale, bias, mean and variance have {}, {}, {} and {} "
                    "entries (one per channel each)",
                    where, gamma.size(), beta.size(), mean.size(), var.size()));
  }
  const BatchNormCoefficients c = batch_norm_coefficients(mean, var, eps, where);
  BatchNormAffine f;
  f.a.resize(gamma.size());
  f.b.resize(gamma.size());
  for (std::size_t k = 0; k < gamma.size(); ++k) {
    f.a[k] = gamma[k] / c.std[k];
    f.b[k] = beta[k] - f.a[k] * c.mean[k];
  }
  return f;
}

}  // namespace pathlift
