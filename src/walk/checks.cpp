#include "pathlift/checks.hpp"
#include "pathlift/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "pathlift/lifting.hpp"
#include "pathlift/limits.hpp"
#include "pathlift/magnitude.hpp"
#include "pathlift/path_memory.hpp"
#include "src/core/enum_names.hpp"
#include "src/core/json.hpp"
#include "src/core/random.hpp"

namespace pathlift {

namespace {

constexpr const char* k_lemma1 = "Phi = S exp(B log|theta|)  (Lemma 1)";
constexpr const char* k_proposition2 = "dPhi = diag(Phi) B diag(1/theta)  (Proposition 2)";
constexpr const char* k_corollary1 = "B = dPhi(1_d)  (Corollary 1)";
constexpr const char* k_finite_differences = "dPhi = central finite differences of Phi";

double rel_error(double x, double y, double floor) {
  const double scale = std::max({std::abs(x), std::abs(y), floor});
  return std::abs(x - y) / scale;
}

/// Records an error: true when it is the largest so far. A NaN is the largest of all (kept once
/// seen), so a non-finite error can never hide behind a passing one.
bool record(CheckResult& r, double err) {
  if (std::isnan(r.max_error)) {
    return false;
  }
  if (std::isnan(err) || err > r.max_error) {
    r.max_error = err;
    return true;
  }
  return false;
}

/// status and passed from max_error (or `ok`): NaN and inf fail.
void conclude(CheckResult& r, bool ok) {
  r.passed = ok && r.max_error <= r.tolerance;
  r.status = r.passed ? CheckStatus::passed : CheckStatus::failed;
}

CheckResult out_of_range(std::string name, std::string claim, double tolerance,
                         const std::string& problems) {
  CheckResult r;
  r.name = std::move(name);
  r.claim = std::move(claim);
  r.tolerance = tolerance;
  r.passed = false;
  r.status = CheckStatus::out_of_range;
  r.note = fmt::format("not checked: at this theta {}", problems);
  return r;
}

/// Phi_p at theta with theta_k replaced by `value`, as the plain product along the path.
double path_product(std::span<const EdgeId> path, std::span<const double> theta, EdgeId k,
                    double value) {
  double prod = 1;
  for (EdgeId e : path) {
    prod *= e == k ? value : theta[static_cast<std::size_t>(e)];
  }
  return prod;
}

/// Corollary 1: B = dPhi(1_d), at theta = 1 (independent of the magnitudes of theta).
CheckResult corollary1(const Network& net, const PathSet& paths, const CheckOptions& options) {
  CheckResult r;
  r.name = "corollary1";
  r.claim = k_corollary1;
  r.tolerance = 0;
  const std::vector<double> ones(static_cast<std::size_t>(net.num_params()), 1.0);
  const CsrMatrix<double> at_one =
      jacobian<double>(net, std::span<const double>(ones), options.engine);
  const CsrPattern b = skeleton(paths, options.engine);
  bool same_pattern = *at_one.pattern.row_offsets == *b.row_offsets &&
                      *at_one.pattern.col_indices == *b.col_indices;
  for (double v : at_one.values) {
    record(r, std::abs(v - 1.0));
  }
  r.entries = b.nnz();
  conclude(r, same_pattern);
  if (!same_pattern) {
    r.note = "the pattern of dPhi(1) differs from B";
  }
  return r;
}

}  // namespace

std::vector<CheckResult> check_identities(const Network& net, std::span<const double> theta,
                                          const CheckOptions& options) {
  if (!net.one_parameter_per_edge()) {
    throw NetworkError(fmt::format(
        "the paper's identities (Lemma 1, Proposition 2) are checked on networks with one "
        "parameter per edge; this one has {} parameters on {} edges (shared or fixed): verify it "
        "with linearize (f = L Phi, df/dtheta = L dPhi against finite differences) instead",
        net.num_params(), net.num_edges()));
  }
  check_theta(net, theta);
  // The paths, Phi, dPhi and a second Jacobian (the paper's formula, then dPhi(1) beside B) are
  // held at once: that peak, not each of them, is refused before the first is built.
  require_memory(net,
                 {PathObject::path_set, PathObject::path_lifting, PathObject::jacobian,
                  PathObject::jacobian, PathObject::skeleton},
                 options.engine.max_memory, "checking the identities");
  const PathSet paths = enumerate_paths(net, options.engine);
  const std::string problems = describe_problems<double>(lifting_range(net, theta));
  std::vector<CheckResult> out;
  if (!problems.empty()) {
    out.push_back(out_of_range("lemma1", k_lemma1, options.tolerance, problems));
    out.push_back(out_of_range("proposition2", k_proposition2, options.tolerance, problems));
    out.push_back(corollary1(net, paths, options));
    out.push_back(
        out_of_range("finite_differences", k_finite_differences, options.fd_tolerance, problems));
    return out;
  }
  const bool has_zero = std::find(theta.begin(), theta.end(), 0.0) != theta.end();
  const Buffer<double> phi = path_lifting<double>(net, theta, options.engine);
  const CsrMatrix<double> jac = jacobian<double>(net, theta, options.engine);
  const Index np = paths.size();
  const auto off = jac.pattern.offsets();
  const auto cols = jac.pattern.indices();

  // Lemma 1: Phi = S exp(B log|theta|), S = diag(sign Phi).
  {
    CheckResult r;
    r.name = "lemma1";
    r.claim = k_lemma1;
    r.tolerance = options.tolerance;
    std::vector<double> log_abs(theta.size());
    for (std::size_t k = 0; k < theta.size(); ++k) {
      log_abs[k] = std::log(std::abs(theta[k]));  // -inf at 0: exp gives 0, as Phi_p = 0
    }
    Index worst = -1;
    for (Index p = 0; p < np; ++p) {
      double s = 0;
      for (Index k = off[static_cast<std::size_t>(p)]; k < off[static_cast<std::size_t>(p) + 1];
           ++k) {
        s += log_abs[static_cast<std::size_t>(cols[static_cast<std::size_t>(k)])];
      }
      const double f = phi[static_cast<std::size_t>(p)];
      const double sign = f > 0 ? 1.0 : (f < 0 ? -1.0 : 0.0);
      const double rebuilt = sign * std::exp(s);
      if (record(r, rel_error(rebuilt, f, std::numeric_limits<double>::min()))) {
        worst = p;
      }
    }
    r.entries = np;
    conclude(r, true);
    if (worst >= 0) {
      r.note = fmt::format("largest error at path {}", worst);
    }
    out.push_back(std::move(r));
  }

  // Proposition 2: dPhi = diag(Phi) B diag(1/theta), defined when no weight is 0.
  {
    CheckResult r;
    r.name = "proposition2";
    r.claim = k_proposition2;
    r.tolerance = options.tolerance;
    if (has_zero) {
      r.applicable = false;
      r.status = CheckStatus::not_applicable;
      r.note = "not applicable: some theta_k = 0 (the formula divides by theta_k)";
    } else {
      const CsrMatrix<double> paper = jacobian_paper_formula<double>(
          paths, std::span<const double>(phi), theta, options.engine);
      Index worst = -1;
      for (std::size_t k = 0; k < jac.values.size(); ++k) {
        if (record(r,
                   rel_error(jac.values[k], paper.values[k], std::numeric_limits<double>::min()))) {
          worst = static_cast<Index>(k);
        }
      }
      r.entries = jac.nnz();
      conclude(r, *paper.pattern.col_indices == *jac.pattern.col_indices);
      if (worst >= 0) {
        const auto row =
            static_cast<Index>(std::upper_bound(off.begin(), off.end(), worst) - off.begin() - 1);
        r.note = fmt::format("largest error at path {}, edge {}", row,
                             cols[static_cast<std::size_t>(worst)]);
      }
    }
    out.push_back(std::move(r));
  }

  out.push_back(corollary1(net, paths, options));

  // dPhi against central finite differences on a sample of entries (on and off the paths).
  {
    CheckResult r;
    r.name = "finite_differences";
    r.claim = k_finite_differences;
    r.tolerance = options.fd_tolerance;
    detail::SplitMix64 rng(options.seed);
    const Index d = net.num_edges();
    const Index samples = std::min<Index>(options.fd_samples, jac.nnz() + np);
    struct Entry {
      Index path;
      EdgeId edge;
      double value;  // dPhi[path, edge] from jacobian()
    };
    std::vector<Entry> entries;
    entries.reserve(static_cast<std::size_t>(samples));
    for (Index s = 0; s < samples && np > 0; ++s) {
      if (s % 8 == 7 && d > 0) {
        // An entry off the path (0 unless the edge is on it).
        const auto p = static_cast<Index>(rng.below(static_cast<std::uint64_t>(np)));
        const auto k = static_cast<EdgeId>(rng.below(static_cast<std::uint64_t>(d)));
        const auto row =
            cols.subspan(static_cast<std::size_t>(off[static_cast<std::size_t>(p)]),
                         static_cast<std::size_t>(off[static_cast<std::size_t>(p) + 1] -
                                                  off[static_cast<std::size_t>(p)]));
        const auto it = std::lower_bound(row.begin(), row.end(), k);
        const double v = it != row.end() && *it == k
                             ? jac.values[static_cast<std::size_t>(
                                   off[static_cast<std::size_t>(p)] + (it - row.begin()))]
                             : 0.0;
        entries.push_back({p, k, v});
      } else {
        const auto k = static_cast<Index>(rng.below(static_cast<std::uint64_t>(jac.nnz())));
        const auto p =
            static_cast<Index>(std::upper_bound(off.begin(), off.end(), k) - off.begin() - 1);
        entries.push_back(
            {p, cols[static_cast<std::size_t>(k)], jac.values[static_cast<std::size_t>(k)]});
      }
    }
    double scale = 0;
    for (const auto& e : entries) {
      scale = std::max(scale, std::abs(e.value));
    }
    const double floor = std::max(scale * 1e-9, std::numeric_limits<double>::min());
    Index worst = -1;
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const auto& e = entries[i];
      const auto path = paths.path(e.path);
      const double t = theta[static_cast<std::size_t>(e.edge)];
      const double h = 1e-6 * std::max(1.0, std::abs(t));
      const double fd =
          (path_product(path, theta, e.edge, t + h) - path_product(path, theta, e.edge, t - h)) /
          (2 * h);
      if (record(r, rel_error(e.value, fd, floor))) {
        worst = static_cast<Index>(i);
      }
    }
    r.entries = static_cast<Index>(entries.size());
    conclude(r, true);
    if (worst >= 0) {
      r.note = fmt::format("largest error at path {}, edge {}",
                           entries[static_cast<std::size_t>(worst)].path,
                           entries[static_cast<std::size_t>(worst)].edge);
    }
    out.push_back(std::move(r));
  }
  return out;
}

bool all_passed(const std::vector<CheckResult>& results) {
  return std::all_of(results.begin(), results.end(), [](const CheckResult& r) {
    return r.status == CheckStatus::passed || r.status == CheckStatus::not_applicable;
  });
}

bool any_out_of_range(const std::vector<CheckResult>& results) {
  return std::any_of(results.begin(), results.end(),
                     [](const CheckResult& r) { return r.status == CheckStatus::out_of_range; });
}

std::string_view to_string(CheckStatus status) {
  static constexpr std::array k_names{
      detail::EnumName<CheckStatus>{CheckStatus::passed, "passed"},
      detail::EnumName<CheckStatus>{CheckStatus::failed, "failed"},
      detail::EnumName<CheckStatus>{CheckStatus::not_applicable, "not_applicable"},
      detail::EnumName<CheckStatus>{CheckStatus::out_of_range, "out_of_range"}};
  return detail::enum_name(k_names, status);
}

std::string to_json(const std::vector<CheckResult>& results, int indent) {
  detail::Json checks = detail::Json::array();
  for (const CheckResult& r : results) {
    checks.push_back({{"name", r.name},
                      {"claim", r.claim},
                      {"applicable", r.applicable},
                      {"passed", r.passed},
                      {"status", std::string(to_string(r.status))},
                      {"max_error", detail::number_or_null(r.max_error)},
                      {"tolerance", r.tolerance},
                      {"entries", r.entries},
                      {"note", r.note}});
  }
  detail::Json j;
  j["checks"] = std::move(checks);
  j["passed"] = all_passed(results);
  return j.dump(indent);
}

}  // namespace pathlift
