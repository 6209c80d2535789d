// The public entry points of the executed proof: the claim texts, the printed matrices,
// prove_rank (build each step, then check it) and check_proof (check a recorded certificate).
// The pieces live in src/detail/: proof_claims (texts, issues), proof_context (a step's network
// with its paths and rank certificate), proof_steps (the proof's definitions and operations),
// proof_checks and proof_induction_checks (one checker per claim).

#include "pathlift/proof.hpp"

#include <fmt/format.h>

#include <memory>
#include <stdexcept>

#include "pathlift/error.hpp"
#include "pathlift/limits.hpp"
#include "src/core/json.hpp"
#include "src/core/modular_field.hpp"
#include "src/rank/detail/proof_checks.hpp"
#include "src/rank/detail/proof_claims.hpp"
#include "src/rank/detail/proof_context.hpp"
#include "src/rank/detail/proof_steps.hpp"

namespace pathlift {

using namespace detail::proof;

std::string_view claim_id(ProofClaim claim) {
  return claim_text(claim).id;
}

std::string_view claim_statement(ProofClaim claim) {
  return claim_text(claim).statement;
}

Eigen::Matrix<std::int64_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> displayed(
    const ProofMatrix& m, const EngineOptions& options) {
  const auto rows = static_cast<Index>(m.row_order.size());
  const auto cols = static_cast<Index>(m.col_order.size());
  require_dense(rows, cols, sizeof(std::int64_t), options.max_memory,
                fmt::format("printing {}", m.name));
  Eigen::Matrix<std::int64_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> out(rows, cols);
  for (Index i = 0; i < rows; ++i) {
    for (Index j = 0; j < cols; ++j) {
      out(i, j) = m.matrix.at(at(m.row_order, i), at(m.col_order, j));
    }
  }
  return out;
}

namespace {

bool has_all_matrices(const ProofStep& s, const std::vector<ProofMatrix>& mats) {
  return mats.size() == (s.kind == ProofStepKind::base ? 2U : 6U);
}

}  // namespace

ProofCertificate prove_rank(const Network& net, const ProveOptions& options) {
  detail::modular_require_prime(options.prime, "prove_rank");
  if (!net.one_parameter_per_edge()) {
    throw NetworkError(fmt::format(
        "the proof of Theorem 1 is about one parameter per edge; this network has {} parameters "
        "on {} edges (shared or fixed): `rank` certifies its rank against d - h_sym instead",
        net.num_params(), net.num_edges()));
  }
  ProofCertificate cert;
  cert.d = net.num_edges();
  cert.h = net.num_hidden();
  auto ctx =
      std::make_unique<StepContext>(net.with_weights(std::nullopt), options.engine, options.prime);
  std::vector<EdgeId> original = identity_order<EdgeId>(net.num_edges());
  for (Index index = 0;; ++index) {
    if (options.engine.progress) {
      options.engine.progress("induction steps",
                              static_cast<double>(index) / static_cast<double>(cert.h + 1));
    }
    ProofStep step(ctx->net);
    step.original_edge = original;
    const StepPlan plan = plan_step(*ctx);
    Reduction reduction;
    try {
      reduction = build_step(step, *ctx, plan);
    } catch (const NetworkError& ex) {
      cert.failure =
          make_issue(step, index, ProofClaim::reduced_network,
                     fmt::format("the reduced network is not a valid network: {}", ex.what()));
      cert.steps.push_back(std::move(step));
      return cert;
    }
    std::vector<ProofMatrix> mats;
    try {
      mats = compute_matrices(step, *ctx, plan, options.engine.max_memory);
    } catch (const std::invalid_argument&) {
      // Operations that could not be applied (a lemma failed): the checker names the claim.
    }
    std::unique_ptr<StepContext> next;
    if (reduction.net) {
      next = std::make_unique<StepContext>(*reduction.net, options.engine, options.prime);
      if (mats.size() == 6) {
        finish_induction_step(step, plan, mats, *next);
      }
    }
    if (options.check_rank_after && has_all_matrices(step, mats)) {
      step.rank_after = modular_rank_after(step, mats, next.get(), options.prime);
    }
    std::vector<ProofIssue> findings;
    std::optional<ProofIssue> failure = check_step({
        .step = step,
        .index = index,
        .ctx = *ctx,
        .plan = plan,
        .mats = mats,
        .next = next.get(),
        .derived = true,
        .reduction = &reduction,
        .prime = options.prime,
        .check_rank_after = options.check_rank_after,
        .rank_after = step.rank_after >= 0 ? std::optional<Index>(step.rank_after) : std::nullopt,
        .findings = &findings,
    });
    step.findings = findings;
    cert.findings.insert(cert.findings.end(), findings.begin(), findings.end());
    if (options.keep_matrices) {
      step.matrices = std::move(mats);
    }
    const bool base = step.kind == ProofStepKind::base;
    if (!base && !failure) {
      original = compose_original(step);
    }
    cert.steps.push_back(std::move(step));
    if (failure) {
      cert.failure = std::move(failure);
      return cert;
    }
    if (base) {
      break;
    }
    ctx = std::move(next);
  }
  if (options.engine.progress) {
    options.engine.progress("induction steps", 1.0);
  }
  cert.rank = cert.steps.front().rank;
  if (cert.rank != cert.d - cert.h) {
    cert.failure =
        certificate_issue(0, ProofClaim::rank_equality,
                          fmt::format("the steps give rank(B) = {} but d - h = {} - {} = {}",
                                      cert.rank, cert.d, cert.h, cert.d - cert.h));
  }
  return cert;
}

ProofCheck check_proof(const ProofCertificate& cert, const ProofCheckOptions& options) {
  detail::modular_require_prime(options.prime, "check_proof");
  ProofCheck result;
  const auto fail = [&](Index step, ProofClaim claim, std::string message) {
    result.failure = certificate_issue(step, claim, std::move(message));
    return result;
  };
  if (cert.steps.empty()) {
    return fail(-1, ProofClaim::choice, "the certificate has no step");
  }
  std::unique_ptr<StepContext> ctx;
  try {
    ctx = std::make_unique<StepContext>(cert.steps.front().network, options.engine, options.prime);
  } catch (const TooLarge&) {
    throw;
  } catch (const std::exception& ex) {
    return fail(0, ProofClaim::skeleton_definition,
                fmt::format("step 0: the network's paths cannot be enumerated: {}", ex.what()));
  }
  if (cert.d != ctx->net.num_edges() || cert.h != ctx->net.num_hidden()) {
    return fail(0, ProofClaim::choice,
                fmt::format("the certificate is for d = {}, h = {} but its first network has "
                            "d = {}, h = {}",
                            cert.d, cert.h, ctx->net.num_edges(), ctx->net.num_hidden()));
  }
  std::vector<EdgeId> original = identity_order<EdgeId>(cert.d);
  for (std::size_t i = 0; i < cert.steps.size(); ++i) {
    const auto index = static_cast<Index>(i);
    const ProofStep& s = cert.steps[i];
    if (s.original_edge != original) {
      return fail(index, ProofClaim::reduced_network,
                  fmt::format("step {}: the map to the original edges is not the composition of "
                              "the reductions",
                              index));
    }
    std::unique_ptr<StepContext> next;
    if (s.kind == ProofStepKind::induction) {
      if (i + 1 >= cert.steps.size()) {
        return fail(index, ProofClaim::reduced_network,
                    fmt::format("step {} is an induction step but no step follows it", index));
      }
      next =
          std::make_unique<StepContext>(cert.steps[i + 1].network, options.engine, options.prime);
    }
    const StepPlan plan = plan_step(*ctx);
    std::vector<ProofMatrix> computed;
    if (s.matrices.empty()) {
      try {
        computed = compute_matrices(s, *ctx, plan, options.engine.max_memory);
      } catch (const TooLarge&) {
        throw;
      } catch (const std::exception& ex) {
        return fail(index,
                    s.kind == ProofStepKind::base ? ProofClaim::algorithm1_rows
                                                  : ProofClaim::algorithm2_rows,
                    fmt::format("step {}: the recorded operations cannot be applied: {}", index,
                                ex.what()));
      }
    }
    const StepCheck check{
        .step = s,
        .index = index,
        .ctx = *ctx,
        .plan = plan,
        .mats = s.matrices.empty() ? computed : s.matrices,
        .next = next.get(),
        .derived = s.matrices.empty(),
        .reduction = nullptr,
        .prime = options.prime,
        .check_rank_after = true,
        .rank_after = std::nullopt,
        .findings = &result.findings,
    };
    std::optional<ProofIssue> failure;
    try {
      failure = check_step(check);
    } catch (const TooLarge&) {
      throw;
    } catch (const std::exception& ex) {
      return fail(
          index, ProofClaim::reordering,
          fmt::format("step {}: the recorded data cannot be applied: {}", index, ex.what()));
    }
    if (failure) {
      result.failure = std::move(failure);
      return result;
    }
    if (s.kind == ProofStepKind::base) {
      if (i + 1 != cert.steps.size()) {
        return fail(index, ProofClaim::choice,
                    fmt::format("step {} is the base case but more steps follow", index));
      }
      break;
    }
    original = compose_original(s);
    ctx = std::move(next);
  }
  if (cert.steps.back().kind != ProofStepKind::base) {
    return fail(static_cast<Index>(cert.steps.size()) - 1, ProofClaim::choice,
                "the certificate does not end with the base case");
  }
  if (cert.steps.front().rank != cert.d - cert.h || cert.rank != cert.steps.front().rank) {
    return fail(0, ProofClaim::rank_equality,
                fmt::format("the certificate says rank(B) = {} (step 0: {}) but d - h = {}",
                            cert.rank, cert.steps.front().rank, cert.d - cert.h));
  }
  return result;
}

ProofCheck check_proof(const ProofCertificate& cert, std::uint64_t prime) {
  ProofCheckOptions options;
  options.prime = prime;
  return check_proof(cert, options);
}

bool displayable(const ProofMatrix& m) {
  return static_cast<Index>(m.row_order.size()) <= proof_matrix_displayed_rows &&
         static_cast<Index>(m.col_order.size()) <= proof_matrix_displayed_cols;
}

namespace {

using detail::Json;

Json issue_json(const ProofIssue& i) {
  Json j;
  j["step"] = i.step;
  j["claim"] = std::string(claim_id(i.claim));
  j["path"] = i.path >= 0 ? Json(i.path) : Json(nullptr);
  j["edge"] = i.edge >= 0 ? Json(i.edge) : Json(nullptr);
  j["message"] = i.message;
  return j;
}

Json matrices_json(const std::vector<ProofMatrix>& matrices) {
  Json mats = Json::object();
  for (const ProofMatrix& m : matrices) {
    Json mj;
    mj["rows"] = m.row_order;
    mj["cols"] = m.col_order;
    if (displayable(m)) {
      const auto dense = displayed(m);
      Json data = Json::array();
      for (Index r = 0; r < dense.rows(); ++r) {
        data.push_back(std::vector<std::int64_t>(dense.row(r).begin(), dense.row(r).end()));
      }
      mj["data"] = data;
    } else {
      mj["data"] = nullptr;
    }
    mats[m.name] = mj;
  }
  return mats;
}

Json step_json(const ProofStep& s, Index index) {
  const Network& n = s.network;
  Json j;
  j["step"] = index;
  j["kind"] = s.kind == ProofStepKind::base ? "base" : "induction";
  j["d"] = s.d;
  j["h"] = s.h;
  j["paths"] = s.num_paths;
  j["rank"] = s.rank;
  j["original_edge"] = s.original_edge;
  if (s.kind == ProofStepKind::induction) {
    j["u"] = n.node_name(s.u);
    j["k"] = n.node_name(s.k);
    j["e"] = s.e;
    j["E_minus_u"] = s.e_minus_u;
    j["E_plus_u"] = s.e_plus_u;
    j["E_minus_k"] = s.e_minus_k;
    j["E_end"] = s.e_end;
    PATHLIFT_JSON_MEMBERS(j, s, reduced_rank, null_rows, repeated_rows);
    Json dropped = Json::array();
    for (const NodeId v : s.dropped_nodes) {
      dropped.push_back(n.node_name(v));
    }
    j["dropped_nodes"] = dropped;
  }
  j["row_operations"] = s.row_operations.size();
  j["rank_after"] = s.rank_after >= 0 ? Json(s.rank_after) : Json(nullptr);
  if (!s.matrices.empty()) {
    j["matrices"] = matrices_json(s.matrices);
  }
  return j;
}

}  // namespace

std::string to_json(const ProofCertificate& cert, int indent) {
  Json j;
  j["d"] = cert.d;
  j["h"] = cert.h;
  j["expected"] = cert.d - cert.h;
  j["proved"] = cert.proved();
  j["rank"] = cert.proved() ? Json(cert.rank) : Json(nullptr);
  Json steps = Json::array();
  for (std::size_t i = 0; i < cert.steps.size(); ++i) {
    steps.push_back(step_json(cert.steps[i], static_cast<Index>(i)));
  }
  j["steps"] = steps;
  Json findings = Json::array();
  for (const auto& f : cert.findings) {
    findings.push_back(issue_json(f));
  }
  j["findings"] = findings;
  j["failure"] = cert.failure ? issue_json(*cert.failure) : Json(nullptr);
  return j.dump(indent);
}

}  // namespace pathlift
