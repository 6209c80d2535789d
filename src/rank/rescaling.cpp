#include "pathlift/rescaling.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstddef>
#include <limits>
#include <memory>
#include <stdexcept>

#include "pathlift/error.hpp"
#include "pathlift/layer_dp.hpp"
#include "pathlift/norms.hpp"
#include "src/network/one_parameter_per_edge.hpp"

namespace pathlift {

namespace detail {
void require_one_parameter_per_edge(const Network& net, const char* what) {
  if (!net.one_parameter_per_edge()) {
    throw NetworkError(fmt::format(
        "{} is about one parameter per edge; this network has {} parameters on {} edges "
        "(shared or fixed): certify_rank / check_rank_theorem bound its rank by d - h_sym",
        what, net.num_params(), net.num_edges()));
  }
}
}  // namespace detail

namespace {

/// Column of each node in the rescaling matrix: its position in net.hidden(), or -1.
std::vector<Index> hidden_columns(const Network& net) {
  std::vector<Index> col(static_cast<std::size_t>(net.num_nodes()), -1);
  const auto hidden = net.hidden();
  for (std::size_t j = 0; j < hidden.size(); ++j) {
    col[static_cast<std::size_t>(hidden[j])] = static_cast<Index>(j);
  }
  return col;
}

/// Whether two rescaling factors agree to a relative 1e-12.
bool same_factor(double a, double b) {
  return std::abs(a - b) <= 1e-12 * std::max(std::abs(a), std::abs(b));
}

}  // namespace

std::vector<int> rescaling_vector(const Network& net, NodeId v) {
  detail::require_one_parameter_per_edge(net, "rescaling_vector");
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

CsrMatrix<double> rescaling_matrix(const Network& net) {
  detail::require_one_parameter_per_edge(net, "rescaling_matrix");
  const std::vector<Index> col = hidden_columns(net);
  const auto d = static_cast<std::size_t>(net.num_edges());
  Buffer<Index> offsets(d + 1, Index{0});
  Index nnz = 0;
  for (std::size_t e = 0; e < d; ++e) {
    const auto id = static_cast<EdgeId>(e);
    nnz += (col[static_cast<std::size_t>(net.source(id))] >= 0 ? 1 : 0) +
           (col[static_cast<std::size_t>(net.target(id))] >= 0 ? 1 : 0);
    offsets[e + 1] = nnz;
  }
  Buffer<EdgeId> indices(static_cast<std::size_t>(nnz));
  CsrMatrix<double> z;
  z.values = Buffer<double>(static_cast<std::size_t>(nnz));
  std::size_t at = 0;
  for (std::size_t e = 0; e < d; ++e) {
    const auto id = static_cast<EdgeId>(e);
    const Index out = col[static_cast<std::size_t>(net.source(id))];  // -1 from u
    const Index in = col[static_cast<std::size_t>(net.target(id))];   // +1 into v
    // Columns increasing in each row (a DAG edge never has out == in).
    const auto put = [&](Index c, double value) {
      if (c >= 0) {
        indices[at] = static_cast<EdgeId>(c);
        z.values[at] = value;
        ++at;
      }
    };
    if (out < in) {
      put(out, -1.0);
      put(in, 1.0);
    } else {
      put(in, 1.0);
      put(out, -1.0);
    }
  }
  z.pattern.rows = static_cast<Index>(d);
  z.pattern.cols = net.num_hidden();
  z.pattern.row_offsets = std::make_shared<const Buffer<Index>>(std::move(offsets));
  z.pattern.col_indices = std::make_shared<const Buffer<EdgeId>>(std::move(indices));
  return z;
}

std::vector<double> rescale(const Network& net, std::span<const double> theta,
                            std::span<const double> lambdas) {
  check_theta(net, theta);
  const auto h = static_cast<std::size_t>(net.num_hidden());
  if (lambdas.size() != h) {
    throw std::invalid_argument(fmt::format(
        "lambdas has {} entries but the network has {} hidden nodes (one factor each, in "
        "hidden-node order)",
        lambdas.size(), h));
  }
  const auto hidden = net.hidden();
  std::vector<double> lambda(static_cast<std::size_t>(net.num_nodes()), 1.0);
  for (std::size_t j = 0; j < h; ++j) {
    if (!(std::isfinite(lambdas[j]) && lambdas[j] > 0)) {
      throw std::invalid_argument(
          fmt::format("lambdas[{}] (node {}) must be finite and > 0, got {}", j,
                      printable(net.node_name(hidden[j])), lambdas[j]));
    }
    lambda[static_cast<std::size_t>(hidden[j])] = lambdas[j];
  }
  const auto factor_of = [&](EdgeId e) {
    return lambda[static_cast<std::size_t>(net.target(e))] /
           lambda[static_cast<std::size_t>(net.source(e))];
  };
  std::vector<double> out(theta.begin(), theta.end());
  if (net.one_parameter_per_edge()) {
    for (EdgeId e = 0; e < net.num_edges(); ++e) {
      out[static_cast<std::size_t>(e)] *= factor_of(e);
    }
    return out;
  }
  // Shared parameters: one factor per parameter, 1 on fixed edges.
  constexpr double unset = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> factor(static_cast<std::size_t>(net.num_params()), unset);
  std::vector<EdgeId> first(static_cast<std::size_t>(net.num_params()), -1);
  for (EdgeId e = 0; e < net.num_edges(); ++e) {
    const double f = factor_of(e);
    const Index k = net.edge_param(e);
    if (k == kFixedEdge) {
      if (!same_factor(f, 1.0)) {
        throw std::invalid_argument(fmt::format(
            "these lambdas are not a symmetry of the network: the fixed edge {} (weight {}) "
            "would be scaled by {}",
            net.edge_label(e), net.fixed_weight(e), f));
      }
      continue;
    }
    const auto kk = static_cast<std::size_t>(k);
    if (first[kk] < 0) {
      first[kk] = e;
      factor[kk] = f;
    } else if (!same_factor(f, factor[kk])) {
      throw std::invalid_argument(fmt::format(
          "these lambdas are not a symmetry of the network: parameter {} is shared by edge {} "
          "(factor {}) and edge {} (factor {})",
          k, net.edge_label(first[kk]), factor[kk], net.edge_label(e), f));
    }
  }
  for (std::size_t k = 0; k < out.size(); ++k) {
    if (first[k] >= 0) {
      out[k] *= factor[k];
    }
  }
  return out;
}

}  // namespace pathlift
