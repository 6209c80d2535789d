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
  if (!displayable(m)) {
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
    j.update(nlohmann::ordered_json::parse(to_json(cert, -1)));
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
      opts->network, opts->compute, TakesTheta::no);
  cmd->add_flag("--json", opts->json, "Print the certificate as one JSON object");
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
