// The theorem check on a model (rank.hpp): a layer graph's rank without unrolling.

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "pathlift/error.hpp"
#include "pathlift/layer_dp.hpp"
#include "pathlift/path_free.hpp"
#include "pathlift/path_memory.hpp"
#include "pathlift/rank.hpp"
#include "pathlift/symmetry.hpp"
#include "src/layers/layer_kinds.hpp"
#include "src/rank/detail/shared_rank.hpp"

namespace pathlift {

namespace {

/// Whether the enumerated route is taken automatically: B and dPhi within max_memory (from
/// P and nnz(B), counted by the layer DP's one pass in dual numbers), and the numerical rank of
/// dPhi, which only the paths give, would run (detail::enumeration_adds), and no parameter is
/// carried twice by one path of the unrolled DAG (detail::skeleton_possible).
bool layer_enumeration(const Model& model, std::size_t max_memory,
                       const NumericalRankOptions& numerical, std::string& why) {
  try {
    const Count paths = count_paths_total(model, {.max_memory = max_memory});
    const Count nnz = skeleton_nnz(*model.layer_graph(), {.max_memory = max_memory});
    const std::size_t bytes = estimate_bytes(paths, nnz, model.num_params(), PathObject::path_set) +
                              estimate_bytes(paths, nnz, model.num_params(), PathObject::jacobian);
    require_memory(paths, nnz, model.num_params(), bytes, max_memory,
                   "the paths and the Jacobian dPhi with its pattern B");
    if (!detail::enumeration_adds(paths, nnz, model.num_params(), numerical, why) ||
        !detail::skeleton_possible(*model.unrolled({.max_memory = max_memory}), why)) {
      return false;
    }
  } catch (const TooLarge& e) {
    why = e.what();
    return false;
  }
  return true;
}

/// A zero parameter or a fixed weight 0 (a scale by 0).
bool has_zero_weight(const LayerGraph& graph, std::span<const double> theta) {
  return std::find(theta.begin(), theta.end(), 0.0) != theta.end() ||
         std::any_of(graph.layers.begin(), graph.layers.end(), [](const Layer& l) {
           return detail::form_of(l.kind) == detail::Form::scaled && l.factor == 0.0;
         });
}

}  // namespace

RankReport check_rank_theorem(const Model& model, std::span<const double> theta,
                              const RankOptions& options, const NumericalRankOptions& numerical,
                              RankRoute route) {
  if (const Network* net = model.dag()) {
    return check_rank_theorem(*net, theta, options, numerical, route);
  }
  const LayerGraph& graph = *model.layer_graph();
  std::string why = "the path-free route was asked for";
  if (route == RankRoute::enumerate ||
      (route == RankRoute::automatic &&
       layer_enumeration(model, options.engine.max_memory, numerical, why))) {
    return check_rank_theorem(*model.unrolled(options.engine), theta, options, numerical,
                              RankRoute::enumerate);
  }
  if (options.method != RankMethod::automatic && options.method != RankMethod::symmetry) {
    throw std::invalid_argument(fmt::format(
        "the rank method {} needs the unrolled network; a layer graph's rank(B) is certified "
        "without unrolling by the symmetry theorem (method symmetry, the default)",
        to_string(options.method)));
  }
  if (!theta.empty()) {
    check_theta(model, theta);
  }
  const auto phase = [&](double x) {
    if (options.engine.progress) {
      options.engine.progress("rescaling symmetries of the layer graph", x);
    }
  };
  phase(-1.0);
  const RankCertificate cert = certify_rank_by_symmetry(model, options);
  const detail::RankSubject subject{model.num_params(),
                                    unrolled_hidden_nodes(graph, options.engine), false};
  phase(1.0);
  std::optional<JacobianRankCertificate> exact;
  std::string note = fmt::format(
      "the numerical rank of dPhi needs the paths, which were not enumerated ({})", why);
  if (!theta.empty()) {
    if (!has_zero_weight(graph, theta)) {
      JacobianRankCertificate j;
      j.method = JacobianRankMethod::identity;
      j.prime = 0;
      j.lower = cert.lower;
      j.upper = cert.upper;
      exact = j;
    } else {
      try {
        if (const auto z = jacobian_rank_by_zero_pattern(graph, theta, options.engine)) {
          exact = detail::zero_pattern_certificate(*z, cert);
        } else {
          const auto dag = model.unrolled(options.engine);
          exact = detail::jacobian_rank_from_zero_pattern(*dag, theta, cert, options);
        }
      } catch (const TooLarge& e) {
        JacobianRankCertificate j;
        j.upper = cert.upper;
        j.zero_weights = static_cast<Index>(std::count(theta.begin(), theta.end(), 0.0));
        exact = j;
        note = fmt::format(
            "rank(dPhi) at this theta is certified by its zero pattern, on the layer graph when "
            "its zeros are biases, else on the unrolled network, which does not fit: {}",
            e.what());
      }
    }
  }
  RankReport rep = detail::shared_rank_report(subject, cert, exact, std::nullopt, theta);
  rep.rank_J_note = note;
  return rep;
}

}  // namespace pathlift
