#include "pathlift/certificate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "pathlift/error.hpp"
#include "pathlift/lifting.hpp"
#include "pathlift/limits.hpp"
#include "src/core/enum_names.hpp"
#include "src/core/modular_field.hpp"
#include "src/core/progress.hpp"
#include "src/network/one_parameter_per_edge.hpp"
#include "src/rank/detail/modular_elimination.hpp"
#include "src/rank/detail/shared_rank.hpp"

namespace pathlift {

// ---------------------------------------------------------------------------------------------
// Rescaling vectors, anchors, pivot order
// ---------------------------------------------------------------------------------------------

std::vector<EdgeId> rank_anchor_edges(const Network& net) {
  detail::require_one_parameter_per_edge(net, "rank_anchor_edges");
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

namespace {
// The first name of each value is the one to_string gives; the others are the CLI's and
// Python's spellings.
constexpr std::array k_rank_method_names{
    detail::EnumName<RankMethod>{RankMethod::automatic, "automatic"},
    detail::EnumName<RankMethod>{RankMethod::automatic, "auto"},
    detail::EnumName<RankMethod>{RankMethod::skeleton, "skeleton"},
    detail::EnumName<RankMethod>{RankMethod::gram, "gram"},
    detail::EnumName<RankMethod>{RankMethod::path_basis, "path_basis"},
    detail::EnumName<RankMethod>{RankMethod::path_basis, "path-basis"},
    detail::EnumName<RankMethod>{RankMethod::symmetry, "symmetry"}};
}  // namespace

std::string_view to_string(RankMethod method) {
  return detail::enum_name(k_rank_method_names, method);
}

RankMethod parse_rank_method(std::string_view name) {
  return detail::parse_enum(k_rank_method_names, name, "rank method");
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
void check_kernel_on_rows(const Network& net, const CsrPattern& b, RankCertificate& cert,
                          const std::function<void(double)>& progress) {
  const auto m = static_cast<std::size_t>(net.num_nodes());
  std::vector<std::int64_t> acc(m, 0);
  std::vector<std::uint8_t> failed(m, 0);
  std::vector<NodeId> touched;
  const auto src = net.sources();
  const auto dst = net.targets();
  for (Index r = 0; r < b.rows; ++r) {
    if (progress && (r & 0xFFFF) == 0) {
      progress(static_cast<double>(r) / static_cast<double>(b.rows));
    }
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
  if (progress) {
    progress(1.0);
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

void require_columns(const Network& net, const CsrPattern& b, const char* what) {
  if (b.cols != net.num_edges()) {
    throw std::invalid_argument(
        fmt::format("{}: the skeleton has {} columns but the network has {} edges", what, b.cols,
                    net.num_edges()));
  }
}

}  // namespace

RankCertificate certify_rank(const Network& net, const CsrPattern& b, const RankOptions& options) {
  detail::modular_require_prime(options.prime, "certify_rank");
  if (!net.one_parameter_per_edge()) {
    return detail::certify_shared_rank(net, b, options);
  }
  require_columns(net, b, "certify_rank");
  RankCertificate cert = blank_certificate(net, options.prime);
  check_kernel_on_rows(net, b, cert,
                       detail::phase_callback(options.engine.progress, "checking B z_v = 0"));
  set_upper_bound(net, cert);

  if (options.method == RankMethod::gram) {
    cert.method = RankMethod::gram;
    const ModMatrix g = skeleton_gram_mod(b, options.prime, options.engine);
    cert.lower = modular_rank(g);
    cert.rows_eliminated = cert.d;
    return cert;
  }
  if (options.method == RankMethod::path_basis) {
    RankCertificate basis = certify_rank_by_path_basis(net, options);
    basis.kernel_failures = cert.kernel_failures;
    basis.kernel_failure_row = cert.kernel_failure_row;
    set_upper_bound(net, basis);
    return basis;
  }
  cert.method = RankMethod::skeleton;
  const detail::ModularRowLoader load = [&](Index r, auto& out) {
    for (const EdgeId c : b.row(r)) {
      out.emplace_back(c, 1);
    }
  };
  const auto result = detail::modular_eliminate(
      b.rows, b.cols, load, options.prime, rank_column_order(net), cert.upper,
      detail::phase_callback(options.engine.progress, "eliminating B mod p"));
  cert.lower = result.rank;
  cert.rows_eliminated = result.rows_used;
  return cert;
}

RankCertificate certify_rank(const Network& net, const RankOptions& options) {
  if (options.method == RankMethod::path_basis && net.one_parameter_per_edge()) {
    return certify_rank_by_path_basis(net, options);
  }
  return certify_rank(net, skeleton(net, options.engine), options);
}

RankCertificate certify_rank_from_gram(const Network& net, const ModMatrix& gram) {
  detail::modular_require_prime(gram.prime, "certify_rank_from_gram");
  detail::require_one_parameter_per_edge(net, "certify_rank_from_gram");
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
  cert.lower = modular_rank(gram);
  cert.rows_eliminated = d;
  return cert;
}

// ---------------------------------------------------------------------------------------------
// The triangular path basis
// ---------------------------------------------------------------------------------------------

std::vector<EdgeId> path_basis_path(const Network& net, EdgeId edge) {
  detail::require_one_parameter_per_edge(net, "path_basis_path");
  if (edge < 0 || edge >= net.num_edges()) {
    throw std::out_of_range(
        fmt::format("path_basis_path: edge {} is outside 0..{}", edge, net.num_edges() - 1));
  }
  std::vector<EdgeId> path;
  for (NodeId x = net.source(edge); !net.in_edges(x).empty();) {
    const EdgeId e = net.in_edges(x).front();
    path.push_back(e);
    x = net.source(e);
  }
  std::reverse(path.begin(), path.end());
  path.push_back(edge);
  for (NodeId y = net.target(edge); net.is_hidden(y);) {
    const EdgeId a = net.out_edges(y).front();
    path.push_back(a);
    y = net.target(a);
  }
  return path;
}

RankCertificate certify_rank_by_path_basis(const Network& net, const RankOptions& options) {
  detail::require_one_parameter_per_edge(net, "the path basis");
  RankCertificate cert = blank_certificate(net, options.prime);
  cert.method = RankMethod::path_basis;
  set_upper_bound(net, cert);
  const Index d = net.num_edges();
  const auto progress = detail::phase_callback(options.engine.progress, "checking the path basis");

  const std::vector<EdgeId> order = rank_column_order(net);
  constexpr Index none = std::numeric_limits<Index>::max();
  std::vector<Index> position(static_cast<std::size_t>(d));
  for (std::size_t i = 0; i < order.size(); ++i) {
    position[static_cast<std::size_t>(order[i])] = static_cast<Index>(i);
  }
  std::vector<std::uint8_t> is_anchor(static_cast<std::size_t>(d), 0);
  for (const EdgeId a : rank_anchor_edges(net)) {
    is_anchor[static_cast<std::size_t>(a)] = 1;
  }

  // back[v]: smallest pivot position on the chain of first in-edges from an input to v (none
  // for an input); back_ok[v]: that chain exists and starts at an input. fwd[v], fwd_ok[v]: the
  // same for the anchor chain from v to an output. Each chain step goes to a node earlier
  // (later) in topological order, which is checked, so the chains are paths of the DAG.
  const auto topo = net.topological_order();
  const auto m = static_cast<std::size_t>(net.num_nodes());
  std::vector<Index> back(m, none);
  std::vector<Index> fwd(m, none);
  std::vector<std::uint8_t> back_ok(m, 0);
  std::vector<std::uint8_t> fwd_ok(m, 0);
  for (const NodeId v : topo) {
    const auto i = static_cast<std::size_t>(v);
    const auto in = net.in_edges(v);
    if (in.empty()) {
      back_ok[i] = net.is_input(v) ? 1 : 0;
      continue;
    }
    const NodeId u = net.source(in.front());
    const auto j = static_cast<std::size_t>(u);
    back_ok[i] = (back_ok[j] != 0 && net.topological_position(u) < net.topological_position(v));
    back[i] = std::min(back[j], position[static_cast<std::size_t>(in.front())]);
  }
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    const NodeId v = *it;
    const auto i = static_cast<std::size_t>(v);
    if (net.is_output(v)) {
      fwd_ok[i] = 1;
      continue;
    }
    if (!net.is_hidden(v) || net.out_edges(v).empty()) {
      continue;
    }
    const EdgeId a = net.out_edges(v).front();
    const NodeId w = net.target(a);
    const auto j = static_cast<std::size_t>(w);
    fwd_ok[i] = (fwd_ok[j] != 0 && net.topological_position(w) > net.topological_position(v));
    fwd[i] = std::min(fwd[j], position[static_cast<std::size_t>(a)]);
  }

  // One row of B per non-anchor edge; its leading column (smallest position) must be new.
  std::vector<std::uint8_t> lead_used(static_cast<std::size_t>(d), 0);
  Index rows = 0;
  Index distinct = 0;
  for (EdgeId e = 0; e < d; ++e) {
    if (progress && (e & 0xFFFFF) == 0) {
      progress(static_cast<double>(e) / static_cast<double>(d));
    }
    if (is_anchor[static_cast<std::size_t>(e)] != 0) {
      continue;
    }
    const auto x = static_cast<std::size_t>(net.source(e));
    const auto y = static_cast<std::size_t>(net.target(e));
    if (back_ok[x] == 0 || fwd_ok[y] == 0) {
      continue;  // no such path: this edge contributes no row
    }
    ++rows;
    const Index lead = std::min({position[static_cast<std::size_t>(e)], back[x], fwd[y]});
    if (lead_used[static_cast<std::size_t>(lead)] == 0) {
      lead_used[static_cast<std::size_t>(lead)] = 1;
      ++distinct;
    }
  }
  if (progress) {
    progress(1.0);
  }
  cert.lower = distinct;
  cert.rows_eliminated = rows;
  return cert;
}

// ---------------------------------------------------------------------------------------------
// The exact rank of dPhi(theta)
// ---------------------------------------------------------------------------------------------

namespace {
constexpr std::array k_jacobian_rank_method_names{
    detail::EnumName<JacobianRankMethod>{JacobianRankMethod::none, "none"},
    detail::EnumName<JacobianRankMethod>{JacobianRankMethod::identity, "identity"},
    detail::EnumName<JacobianRankMethod>{JacobianRankMethod::elimination, "elimination"},
    detail::EnumName<JacobianRankMethod>{JacobianRankMethod::zero_pattern, "zero_pattern"}};
}  // namespace

std::string_view to_string(JacobianRankMethod method) {
  return detail::enum_name(k_jacobian_rank_method_names, method);
}

JacobianRankMethod parse_jacobian_rank_method(std::string_view name) {
  return detail::parse_enum(k_jacobian_rank_method_names, name, "Jacobian rank method");
}

JacobianRankCertificate certify_jacobian_rank(const Network& net, std::span<const double> theta,
                                              const RankCertificate& rank_b, const CsrPattern* b,
                                              const RankOptions& options) {
  if (!net.one_parameter_per_edge()) {
    return detail::certify_shared_jacobian_rank(net, theta, rank_b, options);
  }
  check_theta(net, theta);
  JacobianRankCertificate cert;
  cert.prime = options.prime;
  cert.upper = rank_b.upper;
  cert.zero_weights = static_cast<Index>(std::count(theta.begin(), theta.end(), 0.0));
  if (cert.zero_weights == 0) {
    cert.method = JacobianRankMethod::identity;
    cert.lower = rank_b.lower;
    return cert;
  }
  if (b == nullptr) {
    return detail::jacobian_rank_from_zero_pattern(net, theta, rank_b, options);
  }
  if (options.prime == 2) {
    return cert;
  }
  require_columns(net, *b, "certify_jacobian_rank");
  detail::modular_require_prime(options.prime, "certify_jacobian_rank");
  std::vector<std::uint64_t> residue(theta.size());
  for (std::size_t k = 0; k < theta.size(); ++k) {
    residue[k] = dyadic_residue(theta[k], options.prime);
  }
  // dPhi_{p,k} = product of theta over the other edges of p: prefix times suffix products, no
  // division (exact at zeros).
  const detail::ModField f(options.prime);
  std::vector<std::uint64_t> suffix;
  const detail::ModularRowLoader load = [&](Index r, auto& out) {
    const auto row = b->row(r);
    suffix.assign(row.size() + 1, f.one());
    for (std::size_t i = row.size(); i-- > 0;) {
      suffix[i] = f.mul(suffix[i + 1], f.from_residue(residue[static_cast<std::size_t>(row[i])]));
    }
    std::uint64_t prefix = f.one();
    for (std::size_t i = 0; i < row.size(); ++i) {
      const std::uint64_t value = f.to_residue(f.mul(prefix, suffix[i + 1]));
      if (value != 0) {
        out.emplace_back(row[i], static_cast<std::int64_t>(value));
      }
      prefix = f.mul(prefix, f.from_residue(residue[static_cast<std::size_t>(row[i])]));
    }
  };
  const auto result = detail::modular_eliminate(
      b->rows, b->cols, load, options.prime, rank_column_order(net), cert.upper,
      detail::phase_callback(options.engine.progress, "eliminating dPhi mod p"));
  cert.method = JacobianRankMethod::elimination;
  cert.lower = result.rank;
  return cert;
}

}  // namespace pathlift
