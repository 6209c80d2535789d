// pathlift prove: the paper's proof of Theorem 1 executed on the network, step by step, with
// every lemma and rank equality checked.

#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "../common.hpp"
#include "../registry.hpp"
#include "pathlift/error.hpp"
#include "pathlift/proof.hpp"

namespace pathlift::cli {

namespace {

struct ProveCommandOptions : NetworkCommandOptions {
  bool verbose = false;
  std::uint64_t prime = default_prime;
};

/// Matrices are printed only when they are small enough to read.
constexpr Index max_printed_rows = 200;
constexpr Index max_printed_cols = 60;

std::string edge_list(const ProofStep& s, const std::vector<EdgeId>& edges) {
  std::string out;
  for (const EdgeId x : edges) {
    out += fmt::format("{}{} ({})", out.empty() ? "" : ", ", x, s.network.edge_label(x));
  }
  return "{" + out + "}";
}

void print_matrix(const ProofMatrix& m) {
  const Index rows = static_cast<Index>(m.row_order.size());
  const Index cols = static_cast<Index>(m.col_order.size());
  if (rows > max_printed_rows || cols > max_printed_cols) {
    fmt::print("    {} ({} x {}): too large to print\n", m.name, rows, cols);
    return;
  }
  const auto dense = displayed(m);
  fmt::print("    {} (rows: paths, columns: edges)\n", m.name);
  std::string header = fmt::format("    {:>6}", "");
  for (const EdgeId c : m.col_order) {
    header += fmt::format(" {:>3}", c);
  }
  fmt::print("{}\n", header);
  for (Index i = 0; i < rows; ++i) {
    std::string line =
        fmt::format("    {:>6}", fmt::format("p{}", m.row_order[static_cast<std::size_t>(i)]));
    for (Index j = 0; j < cols; ++j) {
      line += fmt::format(" {:>3}", dense(i, j));
    }
    fmt::print("{}\n", line);
  }
}

void print_step(const ProofStep& s, Index index, bool verbose) {
  const Network& n = s.network;
  if (s.kind == ProofStepKind::base) {
    fmt::print(
        "step {}: base case (h = 0): d = {}, P = {}; Algorithm 1: {} row operation(s) "
        "(Lemma 2 on every path); rank(B) = d = {}\n",
        index, s.d, s.num_paths, s.row_operations.size(), s.rank);
  } else {
    fmt::print(
        "step {}: u = {} becomes an output; k = {}, e = {} ({}); rank(B) = {} = #E_end {} "
        "+ rank(B_reduced) {}\n",
        index, printable(n.node_name(s.u)), printable(n.node_name(s.k)), s.e, n.edge_label(s.e),
        s.rank, s.e_end.size(), s.reduced_rank);
    fmt::print("    network d = {}, h = {}, P = {}; E-u = {}, E+u = {}, E-k = {}\n", s.d, s.h,
               s.num_paths, edge_list(s, s.e_minus_u), edge_list(s, s.e_plus_u),
               edge_list(s, s.e_minus_k));
    std::string dropped;
    for (const NodeId v : s.dropped_nodes) {
      dropped += fmt::format("{}{}", dropped.empty() ? "" : ", ", printable(n.node_name(v)));
    }
    fmt::print(
        "    removed e and E_end = {}; Algorithm 2: {} row operation(s) (Lemma 4); [H; D]: "
        "{} null, {} repeated row(s){}\n",
        edge_list(s, s.e_end), s.row_operations.size(), s.null_rows, s.repeated_rows,
        dropped.empty() ? "" : "; nodes dropped: " + dropped);
  }
  if (verbose) {
    for (const ProofMatrix& m : s.matrices) {
      print_matrix(m);
    }
  }
}

nlohmann::ordered_json issue_json(const ProofIssue& i) {
  nlohmann::ordered_json j;
  j["step"] = i.step;
  j["claim"] = std::string(claim_id(i.claim));
  j["path"] = i.path >= 0 ? nlohmann::ordered_json(i.path) : nlohmann::ordered_json(nullptr);
  j["edge"] = i.edge >= 0 ? nlohmann::ordered_json(i.edge) : nlohmann::ordered_json(nullptr);
  j["message"] = i.message;
  return j;
}

nlohmann::ordered_json step_json(const ProofStep& s, Index index, bool verbose) {
  const Network& n = s.network;
  nlohmann::ordered_json j;
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
    j["reduced_rank"] = s.reduced_rank;
    j["null_rows"] = s.null_rows;
    j["repeated_rows"] = s.repeated_rows;
    nlohmann::ordered_json dropped = nlohmann::ordered_json::array();
    for (const NodeId v : s.dropped_nodes) {
      dropped.push_back(n.node_name(v));
    }
    j["dropped_nodes"] = dropped;
  }
  j["row_operations"] = s.row_operations.size();
  j["rank_after"] =
      s.rank_after >= 0 ? nlohmann::ordered_json(s.rank_after) : nlohmann::ordered_json(nullptr);
  if (verbose) {
    nlohmann::ordered_json mats = nlohmann::ordered_json::object();
    for (const ProofMatrix& m : s.matrices) {
      nlohmann::ordered_json mj;
      mj["rows"] = m.row_order;
      mj["cols"] = m.col_order;
      if (static_cast<Index>(m.row_order.size()) <= max_printed_rows &&
          static_cast<Index>(m.col_order.size()) <= max_printed_cols) {
        const auto dense = displayed(m);
        nlohmann::ordered_json data = nlohmann::ordered_json::array();
        for (Index r = 0; r < dense.rows(); ++r) {
          std::vector<std::int64_t> row(dense.row(r).begin(), dense.row(r).end());
          data.push_back(row);
        }
        mj["data"] = data;
      } else {
        mj["data"] = nullptr;
      }
      mats[m.name] = mj;
    }
    j["matrices"] = mats;
  }
  return j;
}

void run_prove(const ProveCommandOptions& opts) {
  const LoadedNetwork loaded = load_network(opts.network, opts.compute);
  const Network& net = *loaded.dag;
  const std::string& description = loaded.description;
  ProveOptions po;
  po.keep_matrices = opts.verbose;
  po.prime = opts.prime;
  po.engine = engine_options(opts.compute, "prove");
  po.engine.progress = phase_progress();  // one bar, for the steps (their enumerations are quiet)
  const ProofCertificate cert = prove_rank(net, po);
  po.engine.progress("induction steps", 1.0);  // clears the bar after a proof that stopped early

  if (opts.json) {
    nlohmann::ordered_json j = json_header("prove", 1, description, std::nullopt);
    j["d"] = cert.d;
    j["h"] = cert.h;
    j["expected"] = cert.d - cert.h;
    j["proved"] = cert.proved();
    j["rank"] = cert.proved() ? nlohmann::ordered_json(cert.rank) : nlohmann::ordered_json(nullptr);
    nlohmann::ordered_json steps = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < cert.steps.size(); ++i) {
      steps.push_back(step_json(cert.steps[i], static_cast<Index>(i), opts.verbose));
    }
    j["steps"] = steps;
    nlohmann::ordered_json findings = nlohmann::ordered_json::array();
    for (const auto& f : cert.findings) {
      findings.push_back(issue_json(f));
    }
    j["findings"] = findings;
    j["failure"] = cert.failure ? issue_json(*cert.failure) : nlohmann::ordered_json(nullptr);
    print_json(j);
  } else {
    fmt::print("network {}: d = {}, h = {}, d - h = {}\n", description, cert.d, cert.h,
               cert.d - cert.h);
    if (opts.verbose) {
      fmt::print(
          "(paths p0, p1, ... and edges 0, 1, ... are numbered from 0 in each step's "
          "network, in canonical order; the paper numbers them from 1)\n");
    }
    for (std::size_t i = 0; i < cert.steps.size(); ++i) {
      print_step(cert.steps[i], static_cast<Index>(i), opts.verbose);
    }
    for (const auto& f : cert.findings) {
      fmt::print("finding: {}\n", f.message);
    }
    if (cert.proved()) {
      fmt::print(
          "verdict: proved, rank(B) = d - h = {} - {} = {} ({} induction step(s) and the "
          "base case, every claim checked{})\n",
          cert.d, cert.h, cert.rank, cert.steps.size() - 1,
          cert.findings.empty()
              ? ""
              : fmt::format("; {} claim(s) of the paper false as stated, not needed",
                            cert.findings.size()));
    } else {
      fmt::print("verdict: FAILED: {}\n", cert.failure ? cert.failure->message : "no step");
    }
  }
  if (!cert.proved()) {
    throw CheckFailed(
        fmt::format("the proof failed: {}", cert.failure ? cert.failure->message : "no step"));
  }
}

void add_prove_command(CLI::App& app) {
  auto opts = std::make_shared<ProveCommandOptions>();
  auto* cmd = add_network_command(
      app, "prove",
      "Run the paper's proof of Theorem 1 (rank(B) = d - h) on the network: one line per "
      "induction step, every lemma and rank equality checked (exit 1 if one fails)",
      *opts, TakesTheta::no, "Print the certificate as one JSON object");
  cmd->add_flag("--verbose", opts->verbose,
                "Also print each step's matrices (B, B', B'', B~, B~', B~''; B, B~ for the base "
                "case) in the paper's row and column order");
  add_prime_option(*cmd, opts->prime,
                   "The prime of the modular ranks (a prime below 2^63; default 2^61 - 1)");
  cmd->callback([opts] { run_prove(*opts); });
}

const CommandRegistration prove_registration{45, add_prove_command};

}  // namespace

}  // namespace pathlift::cli
