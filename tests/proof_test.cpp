// Tests of proof.hpp: the paper's induction executed on networks. Golden tests against the
// matrices the paper prints for its sketch of proof; the bookkeeping on >= 1,000 random DAGs and
// on feed-forward networks; every network up to 4 nodes and 4 edges; the finding (Lemma 3 with
// parallel edges); and certificates corrupted through the API, which check_proof() must reject
// naming the claim and the path or column.

#include "pathlift/proof.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "pathlift/builtins.hpp"
#include "pathlift/error.hpp"
#include "pathlift/rank.hpp"

namespace pathlift {
namespace {

using Rows = std::vector<std::vector<std::int64_t>>;

/// The printed matrix (rows and columns in the proof's print order).
Rows printed(const ProofMatrix& m) {
  const auto dense = displayed(m);
  Rows out;
  for (Index r = 0; r < dense.rows(); ++r) {
    out.emplace_back(dense.row(r).begin(), dense.row(r).end());
  }
  return out;
}

const ProofMatrix& matrix(const ProofStep& s, const std::string& name) {
  for (const auto& m : s.matrices) {
    if (m.name == name) {
      return m;
    }
  }
  throw std::out_of_range(fmt::format("no matrix {}", name));
}

/// A matrix as the paper prints it: one word a row, one digit an entry ("101 011"); and the
/// equation it is printed in.
struct Printed {
  std::string name;
  std::string rows;
  std::string equation;
};

Rows parse_rows(const std::string& text) {
  Rows out(1);
  for (const char ch : text) {
    if (ch == ' ') {
      out.emplace_back();
    } else {
      out.back().push_back(ch - '0');
    }
  }
  return out;
}

/// Each matrix of the step printed as the paper prints it.
void expect_printed(const ProofStep& s, const std::vector<Printed>& expected) {
  for (const Printed& e : expected) {
    EXPECT_EQ(printed(matrix(s, e.name)), parse_rows(e.rows))
        << e.name << " (" << e.equation << ")";
  }
}

ProofCertificate prove_keeping(const Network& net) {
  ProveOptions o;
  o.keep_matrices = true;
  return prove_rank(net, o);
}

Network network_from(std::vector<std::string> names, std::vector<std::pair<NodeId, NodeId>> edges,
                     std::vector<NodeId> outputs = {}) {
  NetworkSpec s;
  s.node_names = std::move(names);
  s.edges = std::move(edges);
  s.outputs = std::move(outputs);
  return Network(std::move(s));
}

/// The paper numbers paths and edges from 1; pathlift from 0.
std::vector<Index> zero_based(std::initializer_list<Index> one_based) {
  std::vector<Index> v;
  for (const Index i : one_based) {
    v.push_back(i - 1);
  }
  return v;
}

// ---------------------------------------------------------------------------------------------
// Golden tests: the sketch of proof (Section "Sketch of proof")
// ---------------------------------------------------------------------------------------------

TEST(ProofGolden, SketchWithoutHiddenNode) {
  const ProofCertificate cert = prove_keeping(sketch_h0());
  ASSERT_TRUE(cert.proved()) << (cert.failure ? cert.failure->message : "");
  ASSERT_EQ(cert.steps.size(), 1U);
  const ProofStep& s = cert.steps[0];
  EXPECT_EQ(s.kind, ProofStepKind::base);
  expect_printed(
      s,
      {{"B", "10000 01000 01001 00100 00010 00011", "eq. PhiAndSkeletonNoHiddenNodeSketchOfProof"},
       {"B~", "10000 01000 00001 00100 00010 00001", "eq. tildeBH0SK, Algorithm 1's output"}});
  // "subtracts the row of Phi_2 from Phi_3 and of Phi_5 from Phi_6" (Lemma 2).
  EXPECT_EQ(s.row_operations, (std::vector<std::pair<Index, Index>>{{2, 1}, {5, 4}}));
  EXPECT_EQ(cert.rank, 5);
}

TEST(ProofGolden, SketchWithOneHiddenNode) {
  const ProofCertificate cert = prove_keeping(sketch_h1());
  ASSERT_TRUE(cert.proved()) << (cert.failure ? cert.failure->message : "");
  ASSERT_EQ(cert.steps.size(), 2U);
  const ProofStep& s = cert.steps[0];
  const Network& n = s.network;
  ASSERT_EQ(s.kind, ProofStepKind::induction);
  EXPECT_EQ(n.node_name(s.u), "u");
  EXPECT_EQ(n.node_name(s.k), "k");
  // The paper's edge 5 connects u and k; E+u = {4}, E-u = {3}, E-k = {2}; E_end = {6}.
  EXPECT_EQ(s.e, 4);
  EXPECT_EQ(s.e_plus_u, (std::vector<EdgeId>{3}));
  EXPECT_EQ(s.e_minus_u, (std::vector<EdgeId>{2}));
  EXPECT_EQ(s.e_minus_k, (std::vector<EdgeId>{1}));
  EXPECT_EQ(s.e_end, (std::vector<EdgeId>{5}));

  // Columns printed as {5, 4, 3, 2, 1, 6}; rows of B'' as {Phi5, Phi6, Phi4, Phi2, Phi3, Phi1}.
  const auto cols = zero_based({5, 4, 3, 2, 1, 6});
  const auto rows = zero_based({5, 6, 4, 2, 3, 1});
  for (const char* name : {"B'", "B''", "B~", "B~'", "B~''"}) {
    const ProofMatrix& m = matrix(s, name);
    EXPECT_EQ(std::vector<Index>(m.col_order.begin(), m.col_order.end()), cols) << name;
    if (std::string(name) != "B'") {
      EXPECT_EQ(m.row_order, rows) << name;
    }
  }
  // Each printed with the proof's rows and columns: rows = paths, columns = edges.
  expect_printed(
      s,
      {{"B", "100000 010000 010001 001100 001010 001011",
        "eq. PhiAndSkeleton1HiddenNodeSketchOfProof2"},
       {"B'", "000010 000100 000101 011000 101000 101001",
        "eq. SkeletonPrime1HiddenNodeSketchOfProof"},
       {"B''", "101000 101001 011000 000100 000101 000010",
        "eq. SkeletonDoublePrime1HiddenNodeSketchOfProof"},
       {"B~", "001000 001001 011000 000100 000101 000010",
        "eq. SkeletonTilde1HiddenNodeSketchOfProof"},
       {"B~'", "001000 000001 011000 000100 000001 000010", "eq. tildeSkeletonPrime1HiddenNode0SP"},
       {"B~''", "001000 000001 011000 000100 000000 000010", "eq. tildeSkeletonPrimePrime"}});
  // "subtracts the row of Phi_2 from Phi_3 and the row of Phi_5 from Phi_6".
  EXPECT_EQ(s.row_operations, (std::vector<std::pair<Index, Index>>{{5, 4}, {2, 1}}));
  EXPECT_EQ(s.null_rows, 1);
  EXPECT_EQ(s.repeated_rows, 0);

  // Figure 1to0HiddenNode: edges 1, 2, 3, 4 kept, u an output, Phi = (t1, t2, t3, t3 t4); the
  // rank bookkeeping rk(B) = rk(F) + 1 = 4 + 1.
  const ProofStep& r = cert.steps[1];
  const Network& m = r.network;
  EXPECT_EQ(r.kind, ProofStepKind::base);
  ASSERT_EQ(m.num_edges(), 4);
  EXPECT_EQ(r.original_edge, (std::vector<EdgeId>{0, 1, 2, 3}));
  EXPECT_TRUE(m.is_output(*m.find_node("u")));
  EXPECT_EQ(m.num_hidden(), 0);
  expect_printed(r, {{"B", "1000 0100 0010 0011", "B of N_1"}});
  EXPECT_EQ(s.rank, 5);
  EXPECT_EQ(s.reduced_rank, 4);
  EXPECT_EQ(r.rank, 4);
  EXPECT_EQ(cert.rank, 5);
  EXPECT_TRUE(cert.findings.empty());
  EXPECT_TRUE(check_proof(cert).ok());
}

// ---------------------------------------------------------------------------------------------
// The bookkeeping on many networks
// ---------------------------------------------------------------------------------------------

/// The certificate's steps agree with the proof's bookkeeping and with certify_rank().
void expect_bookkeeping(const Network& net, const ProofCertificate& cert, const std::string& what) {
  ASSERT_TRUE(cert.proved()) << what << ": " << (cert.failure ? cert.failure->message : "");
  const Index d = net.num_edges();
  const Index h = net.num_hidden();
  EXPECT_EQ(cert.rank, d - h) << what;
  ASSERT_EQ(static_cast<Index>(cert.steps.size()), h + 1) << what;
  for (std::size_t i = 0; i < cert.steps.size(); ++i) {
    const ProofStep& s = cert.steps[i];
    EXPECT_EQ(s.h, h - static_cast<Index>(i)) << what;
    EXPECT_EQ(s.rank, s.d - s.h) << what;
    EXPECT_EQ(s.rank_after, s.rank) << what;
    if (s.kind == ProofStepKind::induction) {
      const ProofStep& next = cert.steps[i + 1];
      EXPECT_EQ(s.rank, static_cast<Index>(s.e_end.size()) + s.reduced_rank) << what;
      EXPECT_EQ(next.rank, s.reduced_rank) << what;
      EXPECT_EQ(next.d, s.d - 1 - static_cast<Index>(s.e_end.size())) << what;
      EXPECT_TRUE(next.network.is_output(s.reduced_node[static_cast<std::size_t>(s.u)])) << what;
      // Provably no node becomes an input (docs/rank.md).
      EXPECT_TRUE(s.new_inputs.empty()) << what;
    } else {
      EXPECT_EQ(s.rank, s.d) << what;
    }
  }
  const RankCertificate rc = certify_rank(net);
  EXPECT_EQ(rc.rank(), std::optional<Index>(cert.rank)) << what << ": prove and rank disagree";
}

/// A parallel edge u -> k makes Lemma 3 false as stated: every finding must be that case.
void expect_findings_are_parallel_edges(const ProofCertificate& cert, const std::string& what) {
  for (const ProofIssue& f : cert.findings) {
    ASSERT_GE(f.step, 0);
    const ProofStep& s = cert.steps[static_cast<std::size_t>(f.step)];
    EXPECT_EQ(f.claim, ProofClaim::lemma3_disjoint) << what;
    ASSERT_GE(f.edge, 0) << what;
    EXPECT_NE(f.edge, s.e) << what;
    EXPECT_EQ(s.network.source(f.edge), s.u) << what;
    EXPECT_EQ(s.network.target(f.edge), s.k) << what;
    EXPECT_GE(f.path, 0) << what;
    EXPECT_NE(f.message.find("Lemma 3"), std::string::npos) << what;
  }
}

TEST(Proof, RandomDags) {
  Index findings = 0;
  for (std::uint64_t seed = 0; seed < 1100; ++seed) {
    const Index m = 2 + static_cast<Index>(seed % 9);
    const double p = 0.15 + 0.1 * static_cast<double>(seed % 7);
    RandomDagOptions opts;
    opts.parallel_edge_probability = (seed % 3 == 0) ? 0.0 : 0.2;
    opts.designated_output_probability = 0.25;
    const Network net = random_dag(m, p, seed, opts);
    ProveOptions po;
    po.keep_matrices = seed % 8 == 0;
    const ProofCertificate cert = prove_rank(net, po);
    const std::string what = fmt::format("random_dag seed {}", seed);
    expect_bookkeeping(net, cert, what);
    expect_findings_are_parallel_edges(cert, what);
    if (opts.parallel_edge_probability == 0.0) {
      EXPECT_TRUE(cert.findings.empty()) << what << ": Lemma 3 holds without parallel edges";
    }
    findings += cert.findings.empty() ? 0 : 1;
    if (po.keep_matrices) {
      const ProofCheck check = check_proof(cert);
      EXPECT_TRUE(check.ok()) << what << ": " << check.failure->message;
      EXPECT_EQ(check.findings.size(), cert.findings.size()) << what;
    }
  }
  EXPECT_GT(findings, 20);
}

TEST(Proof, FeedForwardShapes) {
  for (const char* name :
       {"fig1", "ff:1,1,1", "ff:2,3,2", "ff:3,4,4,2", "ff:2,3,3,3,2", "ff-nobias:1,1,1",
        "ff-nobias:2,3,2", "ff-nobias:3,4,4,2", "ff-nobias:2,2,3,2,1"}) {
    const Network net = builtin_network(name);
    const ProofCertificate cert = prove_rank(net);
    expect_bookkeeping(net, cert, name);
    EXPECT_TRUE(cert.findings.empty()) << name;
  }
}

/// Every multigraph DAG with 2 to 4 nodes (node order topological) and 1 to 4 edges, with every
/// choice of designated outputs: the proof goes through, and the only findings are Lemma 3 on
/// parallel edges u -> k. The smallest such network has 3 nodes and 3 edges.
TEST(Proof, EverySmallNetwork) {
  Index networks = 0;
  Index smallest_edges_with_finding = 1000;
  for (NodeId nodes = 2; nodes <= 4; ++nodes) {
    std::vector<std::pair<NodeId, NodeId>> pairs;
    for (NodeId j = 1; j < nodes; ++j) {
      for (NodeId i = 0; i < j; ++i) {
        pairs.emplace_back(i, j);
      }
    }
    // Multisets of pairs of size 1..4 (non-decreasing pair indices).
    std::vector<std::size_t> pick;
    const std::function<void(std::size_t)> rec = [&](std::size_t from) {
      if (!pick.empty()) {
        std::vector<std::pair<NodeId, NodeId>> edges;
        for (const auto i : pick) {
          edges.push_back(pairs[i]);
        }
        for (unsigned mask = 0; mask < (1U << static_cast<unsigned>(nodes)); ++mask) {
          std::vector<NodeId> outputs;
          for (NodeId v = 0; v < nodes; ++v) {
            if ((mask >> static_cast<unsigned>(v) & 1U) != 0) {
              outputs.push_back(v);
            }
          }
          std::vector<std::string> names;
          for (NodeId v = 0; v < nodes; ++v) {
            names.push_back(fmt::format("n{}", v));
          }
          std::optional<Network> net;
          try {
            net.emplace(network_from(names, edges, outputs));
          } catch (const NetworkError&) {
            continue;  // isolated node, designated input, ...
          }
          ++networks;
          const ProofCertificate cert = prove_rank(*net);
          const std::string what = fmt::format("small network {}", networks);
          expect_bookkeeping(*net, cert, what);
          expect_findings_are_parallel_edges(cert, what);
          if (!cert.findings.empty()) {
            smallest_edges_with_finding = std::min(smallest_edges_with_finding, net->num_edges());
          }
        }
      }
      if (pick.size() == 4) {
        return;
      }
      for (std::size_t i = from; i < pairs.size(); ++i) {
        pick.push_back(i);
        rec(i);
        pick.pop_back();
      }
    };
    rec(0);
  }
  EXPECT_GT(networks, 500);
  EXPECT_EQ(smallest_edges_with_finding, 3);
}

TEST(Proof, FindingLemma3WithParallelEdges) {
  // The smallest network where Lemma 3 fails as stated: a -> u, u => k twice.
  const Network net = network_from({"a", "u", "k"}, {{0, 1}, {1, 2}, {1, 2}});
  const ProofCertificate cert = prove_keeping(net);
  ASSERT_TRUE(cert.proved()) << cert.failure->message;
  EXPECT_EQ(cert.rank, 2);
  ASSERT_EQ(cert.findings.size(), 1U);
  const ProofIssue& f = cert.findings[0];
  EXPECT_EQ(f.step, 0);
  EXPECT_EQ(f.claim, ProofClaim::lemma3_disjoint);
  EXPECT_EQ(f.edge, 2);  // the second edge u -> k: in E+u and in E-k
  EXPECT_EQ(f.path, 1);  // a -> u -> k through edge 2
  EXPECT_NE(f.message.find("Lemma 3"), std::string::npos);
  EXPECT_NE(f.message.find("parallel"), std::string::npos);
  const ProofStep& s = cert.steps[0];
  EXPECT_EQ(s.e, 1);
  EXPECT_EQ(s.e_plus_u, (std::vector<EdgeId>{2}));
  EXPECT_EQ(s.e_minus_k, (std::vector<EdgeId>{2}));
  const ProofCheck check = check_proof(cert);
  EXPECT_TRUE(check.ok());
  ASSERT_EQ(check.findings.size(), 1U);
  EXPECT_EQ(check.findings[0].message, f.message);
}

// ---------------------------------------------------------------------------------------------
// Corrupted certificates
// ---------------------------------------------------------------------------------------------

ProofCheck flip_and_check(ProofCertificate cert, std::size_t step, const std::string& name,
                          Index row, Index col) {
  auto& steps = cert.steps;
  for (auto& m : steps[step].matrices) {
    if (m.name == name) {
      m.matrix.set(row, col, m.matrix.at(row, col) == 0 ? 1 : 0);
    }
  }
  return check_proof(cert);
}

TEST(ProofCorruption, FlippedEntriesNameTheLemma) {
  const ProofCertificate cert = prove_keeping(sketch_h1());
  ASSERT_TRUE(check_proof(cert).ok());
  struct Flip {
    std::size_t step;
    std::string matrix;
    Index row, col;  // the entry flipped
    ProofClaim claim;
    Index path;
    std::optional<EdgeId> edge;  // the edge the failure names, when it is known
    std::string words;           // in the message
  };
  const std::vector<Flip> flips = {
      // B~', row of Phi_6 = t3 t5 t6 (path 5), which Algorithm 2 turned into the unit vector of
      // edge 6 (5 here): a 1 put at edge 3 (2 here).
      {0, "B~'", 5, 2, ProofClaim::algorithm2_rows, 5, 2, "Algorithm 2 fails: row of path 5"},
      // B~, column e: the column operation should have emptied it.
      {0, "B~", 3, 4, ProofClaim::column_operations, 3, 4, "column operations"},
      // B'', Phi_5 = t3 t5 (through u) given a 1 at edge 2 (1 here), which is in E-k: Lemma 3.
      {0, "B''", 4, 1, ProofClaim::lemma3_disjoint, 4, 1, "Lemma 3"},
      // B'', Phi_1 = t1 given edge 3 (2 here) into u without an edge out of u.
      {0, "B''", 0, 2, ProofClaim::lemma_unique_composition, 0, std::nullopt, "UniqueComposition"},
      // B of the base case (step 1): Definition 2 names the path and the edge.
      {1, "B", 3, 0, ProofClaim::skeleton_definition, 3, 0, "Definition 2"},
      // B~ of the base case: Algorithm 1's unit rows.
      {1, "B~", 3, 2, ProofClaim::algorithm1_rows, 3, std::nullopt, "Algorithm 1"},
  };
  for (const Flip& f : flips) {
    const ProofCheck c = flip_and_check(cert, f.step, f.matrix, f.row, f.col);
    const std::string what =
        fmt::format("{} of step {} at ({}, {})", f.matrix, f.step, f.row, f.col);
    ASSERT_FALSE(c.ok()) << what;
    EXPECT_EQ(c.failure->step, static_cast<Index>(f.step)) << what;
    EXPECT_EQ(c.failure->claim, f.claim) << what;
    EXPECT_EQ(c.failure->path, f.path) << what;
    if (f.edge) {
      EXPECT_EQ(c.failure->edge, *f.edge) << what;
    }
    EXPECT_NE(c.failure->message.find(f.words), std::string::npos) << c.failure->message;
  }
}

TEST(ProofCorruption, EverySingleFlipIsCaught) {
  std::vector<Network> nets = {sketch_h0(), sketch_h1(), fig1(),
                               builtin_network("random-dag:7,0.4,5"),
                               network_from({"a", "u", "k"}, {{0, 1}, {1, 2}, {1, 2}})};
  for (std::uint64_t seed = 0; nets.size() < 9; ++seed) {
    Network n = random_dag(6, 0.5, 100 + seed);
    if (n.num_hidden() > 0 && n.num_edges() <= 12) {
      nets.push_back(std::move(n));
    }
  }
  Index flips = 0;
  for (std::size_t t = 0; t < nets.size(); ++t) {
    const ProofCertificate cert = prove_keeping(nets[t]);
    ASSERT_TRUE(cert.proved());
    ASSERT_TRUE(check_proof(cert).ok());
    for (std::size_t s = 0; s < cert.steps.size(); ++s) {
      for (const auto& m : cert.steps[s].matrices) {
        for (Index r = 0; r < m.matrix.rows(); ++r) {
          for (Index c = 0; c < m.matrix.cols; ++c) {
            const ProofCheck check = flip_and_check(cert, s, m.name, r, c);
            ++flips;
            ASSERT_FALSE(check.ok()) << "network " << t << " step " << s << " " << m.name << " ("
                                     << r << ", " << c << ") not caught";
            EXPECT_EQ(check.failure->step, static_cast<Index>(s));
            EXPECT_TRUE(check.failure->path >= 0 || check.failure->edge >= 0)
                << check.failure->message;
            EXPECT_NE(check.failure->message.find("fails"), std::string::npos);
          }
        }
      }
    }
  }
  EXPECT_GT(flips, 1000);
}

/// check_proof() on a copy of `cert` changed by `corrupt`.
ProofCheck check_corrupted(ProofCertificate cert,
                           const std::function<void(ProofCertificate&)>& corrupt) {
  corrupt(cert);
  return check_proof(cert);
}

TEST(ProofCorruption, RecordedDataIsChecked) {
  const ProofCertificate good = prove_keeping(sketch_h1());
  // Each corruption of the recorded data, and the claim that must catch it.
  const std::vector<std::pair<std::function<void(ProofCertificate&)>, ProofClaim>> cases = {
      {[](ProofCertificate& c) { c.steps[0].rank = 4; }, ProofClaim::rank_equality},
      {[](ProofCertificate& c) { c.steps[0].reduced_rank = 5; }, ProofClaim::rank_equality},
      {[](ProofCertificate& c) { c.steps[0].e_end.clear(); }, ProofClaim::clearing},
      {[](ProofCertificate& c) { c.steps[0].u = c.steps[0].k; }, ProofClaim::choice},
      {[](ProofCertificate& c) { c.steps[0].row_operations.pop_back(); },
       ProofClaim::algorithm2_rows},
      // The next step's network is not the reduced one.
      {[](ProofCertificate& c) { c.steps[1] = prove_keeping(sketch_h0()).steps[0]; },
       ProofClaim::reduced_network},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const ProofCheck check = check_corrupted(good, cases[i].first);
    ASSERT_FALSE(check.ok()) << "case " << i;
    EXPECT_EQ(check.failure->claim, cases[i].second)
        << "case " << i << ": " << check.failure->message;
  }
  EXPECT_NE(check_corrupted(good, cases[0].first).failure->message.find("rank(B) = 5 (recorded 4)"),
            std::string::npos);
  EXPECT_FALSE(check_corrupted(good, [](ProofCertificate& c) { c.steps.pop_back(); }).ok());

  ProofCertificate c = good;  // matrices dropped: recomputed from the recorded operations
  for (auto& s : c.steps) {
    s.matrices.clear();
  }
  EXPECT_TRUE(check_proof(c).ok());
  c.steps[0].row_operations = {{5, 3}, {2, 1}};
  const ProofCheck check = check_proof(c);
  ASSERT_FALSE(check.ok());
  EXPECT_EQ(check.failure->claim, ProofClaim::algorithm2_rows);
}

TEST(Proof, CheckTakesTheEngineOptions) {
  const Network net = builtin_network("random-dag:9,0.5,4");
  ProofCheckOptions one;
  one.engine.threads = 1;
  ProofCheckOptions four;
  four.engine.threads = 4;
  ProofCertificate cert = prove_keeping(net);
  for (int drop = 0; drop < 2; ++drop) {
    const ProofCheck a = check_proof(cert, one);
    const ProofCheck b = check_proof(cert, four);
    EXPECT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a.findings.size(), cert.findings.size());
    EXPECT_EQ(b.findings.size(), cert.findings.size());
    for (auto& s : cert.steps) {
      s.matrices.clear();  // then recomputed under the same limits
    }
  }
  ProofCheckOptions tiny;
  tiny.engine.max_memory = 1000;
  EXPECT_THROW((void)check_proof(cert, tiny), TooLarge);
  ProveOptions small;
  small.engine.max_memory = 1000;
  EXPECT_THROW((void)prove_rank(net, small), TooLarge);
}

TEST(Proof, ClaimTexts) {
  for (int c = 0; c <= static_cast<int>(ProofClaim::rank_certificate); ++c) {
    const auto claim = static_cast<ProofClaim>(c);
    EXPECT_FALSE(claim_id(claim).empty());
    EXPECT_FALSE(claim_statement(claim).empty());
  }
  EXPECT_EQ(claim_id(ProofClaim::lemma4_prefix), "lemma4");
  EXPECT_NE(claim_statement(ProofClaim::lemma4_prefix).find("Lemma 4"), std::string::npos);
  EXPECT_THROW((void)prove_rank(fig1(), ProveOptions{false, true, 91, {}}), std::invalid_argument);
}

}  // namespace
}  // namespace pathlift
