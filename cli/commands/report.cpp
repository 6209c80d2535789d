// pathlift report: the main job. One screen on the chosen network (default fig1): summary,
// Phi, B and dPhi (in full when small, as sizes when large), the paper's identities checked,
// and the time each computation took.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <memory>
#include <string>
#include <vector>

#include "../common.hpp"
#include "../registry.hpp"
#include "pathlift/checks.hpp"
#include "pathlift/counting.hpp"
#include "pathlift/error.hpp"
#include "pathlift/lifting.hpp"
#include "pathlift/limits.hpp"
#include "pathlift/linearize.hpp"
#include "pathlift/magnitude.hpp"
#include "pathlift/path_memory.hpp"
#include "pathlift/rank.hpp"

namespace pathlift::cli {

namespace {

/// Above this many parameters the report certifies rank(B) only: the numerical rank of dPhi
/// needs a d x d eigendecomposition (`pathlift rank` does it on request).
constexpr Index k_numerical_rank_max_d = 1500;

struct ReportOptions {
  NetworkOptions network;
  ComputeOptions compute;
  Index show = 12;  // matrices shown in full up to this many rows and columns
  double tolerance = CheckOptions{}.tolerance;
};

struct Timings {
  std::vector<std::pair<std::string, double>> items;
  template <class F>
  auto time(const std::string& name, F&& f) {
    const auto start = std::chrono::steady_clock::now();
    auto result = f();
    items.emplace_back(name, seconds_since(start));
    return result;
  }
};

std::string format_seconds(double s) {
  if (s < 1e-3) {
    return fmt::format("{:.1f} us", s * 1e6);
  }
  if (s < 1) {
    return fmt::format("{:.2f} ms", s * 1e3);
  }
  return fmt::format("{:.2f} s", s);
}

std::string number(double x) {
  return fmt::format("{:>9.4f}", x);
}

void print_csr_matrix(const std::string& title, const CsrPattern& p, const double* values) {
  fmt::print("{} ({} x {}, nnz = {}; rows = paths, columns = edges 0..{})\n", title, p.rows, p.cols,
             p.nnz(), p.cols - 1);
  const auto off = p.offsets();
  const auto idx = p.indices();
  for (Index r = 0; r < p.rows; ++r) {
    std::vector<double> row(static_cast<std::size_t>(p.cols), 0.0);
    std::vector<bool> present(static_cast<std::size_t>(p.cols), false);
    for (Index k = off[static_cast<std::size_t>(r)]; k < off[static_cast<std::size_t>(r) + 1];
         ++k) {
      const auto c = static_cast<std::size_t>(idx[static_cast<std::size_t>(k)]);
      row[c] = values != nullptr ? values[k] : 1.0;
      present[c] = true;
    }
    fmt::print("  ");
    for (std::size_t c = 0; c < row.size(); ++c) {
      if (values == nullptr) {
        fmt::print("{}", present[c] ? " 1" : " 0");
      } else if (present[c]) {
        fmt::print("{}", number(row[c]));
      } else {
        fmt::print("{:>9}", ".");
      }
    }
    fmt::print("\n");
  }
}

/// The rank certificate's options: its phases shown on stderr.
RankOptions rank_options(const ComputeOptions& compute) {
  RankOptions ro;
  ro.engine = engine_options(compute, "rank");
  ro.engine.progress = phase_progress();
  return ro;
}

/// Theorem 1 on this network: rank(B) certified; rank(dPhi) numerically while d x d is small.
/// What fails is added to `failed`.
void report_theorem(const Network& net, std::span<const double> theta, const ReportOptions& opts,
                    Timings& t, std::vector<std::string>& failed) {
  const Index d = net.num_params();
  const bool per_edge = net.one_parameter_per_edge();
  const std::size_t max_memory = work_memory(opts.compute);
  fmt::print("\ntheorem   ");
  if (d <= k_numerical_rank_max_d) {
    const RankReport rr = t.time("rank", [&] {
      const RankOptions ro = rank_options(opts.compute);
      NumericalRankOptions no;
      no.engine.max_memory = max_memory;
      return check_rank_theorem(net, theta, ro, no);
    });
    if (is_failure(rr.status)) {
      failed.push_back(fmt::format("rank: {}", to_string(rr.status)));
    }
    fmt::print(
        "rank B = {} (certified: {} <= rank <= {}), rank dPhi = {} (numerical), {} = {}: "
        "{}\n",
        rr.rank_B.lower, rr.rank_B.lower, rr.rank_B.upper,
        rr.rank_J ? std::to_string(rr.rank_J->rank) : std::string("-"),
        per_edge ? "d - h" : "d - h_sym", rr.expected, to_string(rr.status));
  } else {
    const RankCertificate cert =
        t.time("rank", [&] { return certify_rank(net, rank_options(opts.compute)); });
    if (!cert.certified() || (per_edge && cert.lower != cert.expected)) {
      failed.push_back(cert.certified() ? "Theorem 1 does not hold" : "rank(B) not certified");
    }
    fmt::print(
        "rank B = {} (certified: {} <= rank <= {}), {} = {}: {}; rank dPhi: see "
        "`pathlift rank` (d = {} is large for an SVD here)\n",
        cert.lower, cert.lower, cert.upper, per_edge ? "d - h" : "d - h_sym", cert.expected,
        cert.certified() && cert.lower == cert.expected
            ? "holds"
            : (per_edge ? "DOES NOT HOLD" : "below the symmetry bound"),
        d);
  }
}

void run_report(const ReportOptions& opts) {
  // Named, not a structured binding: lambdas capture net (clang 14 cannot capture a binding).
  const LoadedNetwork loaded = load_network(opts.network, opts.compute);
  const Network& net = *loaded.dag;
  const std::string& description = loaded.description;
  const LoadedTheta theta = load_theta(net, opts.compute);
  const std::size_t max_memory = work_memory(opts.compute);
  std::vector<std::string> failed;   // what makes the report exit 1 (docs/cli.md#exit-codes)
  std::vector<std::string> not_run;  // beyond float64: exit 4
  Timings t;

  const PathCounts counts = t.time("path counts (DP)", [&] { return count_paths(net); });
  const Index d = net.num_params();
  const Index h = net.num_hidden();
  const bool per_edge = net.one_parameter_per_edge();
  fmt::print("pathlift report: {}\n\n", description);
  fmt::print("network   {} nodes: {} inputs ({} bias), {} hidden, {}\n", net.num_nodes(),
             net.inputs().size(), net.bias_nodes().size(), h,
             counted(static_cast<Index>(net.outputs().size()), "output"));
  if (per_edge) {
    fmt::print("          d = {} parameters, h = {}, d - h = {} (Theorem 1: rank B = rank dPhi)\n",
               d, h, d - h);
  } else {
    fmt::print("          d = {} parameters on {} edges (shared, fixed), h = {}\n", d,
               net.num_edges(), h);
  }
  fmt::print("paths     P = {}, nnz(B) = {}, longest path {} edges\n", counts.paths.to_string(),
             counts.nnz.to_string(), counts.max_path_length);
  fmt::print("theta     {}\n", theta.source);
  const std::string range_problems =
      describe_problems<double>(lifting_range(net, std::span<const double>(theta.theta)));
  if (!range_problems.empty()) {
    fmt::print("range     beyond float64 at this theta: {}\n", range_problems);
  }

  const std::size_t need = estimate_bytes(counts.paths, counts.nnz, d, PathObject::jacobian) +
                           estimate_bytes(counts.paths, counts.nnz, d, PathObject::path_set);
  if (!counts.paths.exact() || need > effective_max_memory(max_memory)) {
    fmt::print(
        "\nP is too large to enumerate here ({} needed): Phi, B and dPhi are not formed.\n"
        "Path-free quantities need no enumeration: see `pathlift norm`, `pathlift kernel`{}.\n",
        format_bytes(static_cast<double>(need)),
        per_edge ? " and `pathlift rank --no-enumerate`" : "");
  } else {
    const Buffer<double> phi = t.time("Phi (path-lifting)", [&] {
      return path_lifting<double>(net, std::span<const double>(theta.theta),
                                  engine_options(opts.compute, "Phi"));
    });
    const CsrMatrix<double> jac = t.time("B + dPhi (sparse)", [&] {
      return jacobian<double>(net, std::span<const double>(theta.theta),
                              engine_options(opts.compute, "B + dPhi"));
    });
    const bool small =
        counts.paths.value() <= static_cast<std::uint64_t>(opts.show) && d <= opts.show;
    fmt::print("\n");
    if (small) {
      fmt::print("theta   ");
      for (double x : theta.theta) {
        fmt::print("{}", number(x));
      }
      fmt::print("\nPhi     ");
      for (double x : phi) {
        fmt::print("{}", number(x));
      }
      fmt::print("\n\n");
      print_csr_matrix("B", jac.pattern, nullptr);
      fmt::print("\n");
      print_csr_matrix("dPhi", jac.pattern, jac.values.data());
    } else {
      double norm1 = 0;
      for (double x : phi) {
        norm1 += std::abs(x);
      }
      fmt::print("Phi       {} values, ||Phi||_1 = {:.6g} ({})\n", phi.size(), norm1,
                 format_bytes(static_cast<double>(phi.size() * sizeof(double))));
      fmt::print(
          "B, dPhi   {} x {} sparse, nnz = {} ({} for B's pattern + dPhi's values; dense "
          "would be {})\n",
          jac.rows(), jac.cols(), jac.nnz(),
          format_bytes(static_cast<double>(
              estimate_bytes(counts.paths, counts.nnz, d, PathObject::jacobian))),
          format_bytes(static_cast<double>(
              estimate_bytes(counts.paths, counts.nnz, d, PathObject::dense_jacobian))));
    }
    if (per_edge) {  // the paper's identities are stated for one parameter per edge
      CheckOptions co;
      co.tolerance = opts.tolerance;
      co.engine = engine_options(opts.compute, "checks");
      const auto results = t.time("checks", [&] { return check_identities(net, theta.theta, co); });
      fmt::print("\nchecks\n");
      for (const auto& r : results) {
        fmt::print("  {:<52} {}\n", r.claim, format_check(r));
        if (r.status == CheckStatus::failed) {
          failed.push_back(fmt::format("check {} failed", r.name));
        } else if (r.status == CheckStatus::out_of_range) {
          not_run.push_back(fmt::format("check {} not run", r.name));
        }
      }
      if (!all_passed(results)) {
        fmt::print("  {}\n", checks_verdict(results));
      }
    }

    report_theorem(net, theta.theta, opts, t, failed);

    // Proposition 1: f = L Phi on a small random batch.
    const Eigen::MatrixXd batch = random_data(net, 8, 0);
    const LinearizationCheck lc = t.time("f = L Phi", [&] {
      LinearizationCheckOptions lo;
      lo.engine = engine_options(opts.compute, "f = L Phi");
      return check_linearization(net, theta.theta, batch, lo);
    });
    if (lc.status == LinearizationStatus::mismatch) {
      // Beyond float64, f and L Phi lose the paths that underflow or overflow: no counterexample.
      (range_problems.empty() ? failed : not_run)
          .push_back(fmt::format("f = L Phi: {}", lc.message));
    }
    fmt::print(
        "f = L Phi {} on 8 random samples: L is {} x {} with {} entries, max rel. error of f "
        "{:.1e}, of df/dtheta {:.1e} (margin {:.2g})\n",
        to_string(lc.status), lc.n * lc.q, lc.P, lc.nnz_L, lc.max_err_f, lc.max_err_grad,
        lc.margin);
  }

  fmt::print("\ntimings  ");
  for (std::size_t i = 0; i < t.items.size(); ++i) {
    fmt::print("{}{} {}", i == 0 ? "" : ", ", t.items[i].first, format_seconds(t.items[i].second));
  }
  fmt::print("\n");
  if (!failed.empty()) {
    throw CheckFailed(fmt::format("report: {}", fmt::join(failed, "; ")));
  }
  if (!not_run.empty()) {
    throw RangeError(fmt::format("report: {}: beyond float64 at this theta: {}",
                                 fmt::join(not_run, "; "), range_problems));
  }
}

void add_report_command(CLI::App& app) {
  auto opts = std::make_shared<ReportOptions>();
  auto* cmd = add_network_command(
      app, "report",
      "The main job: summary, Phi, B, dPhi, the paper's identities checked, timings (default "
      "network: the paper's Figure 1)",
      opts->network, opts->compute, TakesTheta::yes);
  cmd->add_option("--show", opts->show, "Print matrices in full up to this many rows and columns")
      ->check(non_negative_number);
  cmd->add_option("--tolerance", opts->tolerance,
                  "Relative tolerance of the checks of Lemma 1 and Proposition 2")
      ->check(non_negative_number)
      ->default_val(CheckOptions{}.tolerance);
  cmd->callback([opts] { run_report(*opts); });
}

const CommandRegistration report_registration{5, add_report_command};

}  // namespace

}  // namespace pathlift::cli
