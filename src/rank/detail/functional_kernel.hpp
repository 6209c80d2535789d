#pragma once
// The certified upper bound of the functional dimension that comes from J_X's kernel
// (FunctionalDimension::upper_kernel), and what the rows of J_X need of the network: the
// equal samples, where J_X can be non-zero, the batch's linear blocks and the kernel vectors
// known exactly. functional_dimension.cpp computes the rows and the lower bound.

#include <Eigen/Core>
#include <cstdint>
#include <span>
#include <vector>

#include "pathlift/forward.hpp"
#include "pathlift/network.hpp"
#include "pathlift/types.hpp"

namespace pathlift::detail {

/// What the rows of J_X need of the network, once.
struct RowPlan {
  const Network& net;
  const ActivationPattern& pattern;
  const Eigen::Ref<const Eigen::MatrixXd>& X;
  std::span<const double> weights;  ///< per edge
  std::vector<Index> data_column;   ///< per node: its column of X, -1 (bias, other)
  Index q = 0;
  Index d = 0;
};

/// Each sample's class among equal samples (equal rows of X), numbered 0, 1, ... in order of
/// first appearance; `distinct` is set to the number of classes.
std::vector<Index> sample_classes(const Eigen::Ref<const Eigen::MatrixXd>& X, Index& distinct);

/// Where J_X can be non-zero, structurally at the pattern.
struct Activity {
  /// Per edge: active on some sample (the source's value and the derivative of some output
  /// with respect to the target's pre-activation can be non-zero). The columns of J_X of the
  /// parameters without an active edge are exactly zero.
  std::vector<char> edges;
  /// Per node: the distinct samples on which its slope is not 0 and some output sees it (the
  /// rows of J_X its incoming edges' columns can be non-zero on, up to equal samples).
  std::vector<Index> live_samples;
};

/// The activity of the batch; `classes` from sample_classes().
Activity activity(const RowPlan& plan, const std::vector<Index>& classes);

/// The parameters that carry an active edge (the others' columns of J_X are zero).
std::vector<char> active_params(const RowPlan& plan, const std::vector<char>& active_edges);

/// The kernel bound (FunctionalDimension::upper_kernel), from the kernel vectors of J_X known
/// exactly, their rank taken mod `prime` (docs/functional-dimension.md).
Index kernel_bound(const RowPlan& plan, const std::vector<char>& param_active,
                   const std::vector<Index>& live_samples, std::uint64_t prime);

}  // namespace pathlift::detail
