#include "pathlift/checks.hpp"
#include "pathlift/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "pathlift/lifting.hpp"
#include "src/detail/random.hpp"

namespace pathlift {

namespace {

double rel_error(double x, double y, double floor) {
  const double scale = std::max({std::abs(x), std::abs(y), floor});
  return std::abs(x - y) / scale;
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
  const bool has_zero = std::find(theta.begin(), theta.end(), 0.0) != theta.end();
  const PathSet paths = enumerate_paths(net, options.engine);
  const Buffer<double> phi = path_lifting<double>(net, theta, options.engine);
  const CsrMatrix<double> jac = jacobian<double>(net, theta, options.engine);
  const Index np = paths.size();
  const auto off = jac.pattern.offsets();
  const auto cols = jac.pattern.indices();
  std::vector<CheckResult> out;

  // Lemma 1: Phi = S exp(B log|theta|), S = diag(sign Phi).
  {
    CheckResult r;
    r.name = "lemma1";
    r.claim = "Phi = S exp(B log|theta|)  (Lemma 1)";
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
      const double err = rel_error(rebuilt, f, std::numeric_limits<double>::min());
      if (err > r.max_error) {
        r.max_error = err;
        worst = p;
      }
    }
    r.entries = np;
    r.passed = r.max_error <= r.tolerance;
    if (worst >= 0) {
      r.note = fmt::format("largest error at path {}", worst);
    }
    out.push_back(std::move(r));
  }

  // Proposition 2: dPhi = diag(Phi) B diag(1/theta), defined when no weight is 0.
  {
    CheckResult r;
    r.name = "proposition2";
    r.claim = "dPhi = diag(Phi) B diag(1/theta)  (Proposition 2)";
    r.tolerance = options.tolerance;
    if (has_zero) {
      r.applicable = false;
      r.note = "not applicable: some theta_k = 0 (the formula divides by theta_k)";
    } else {
      const CsrMatrix<double> paper = jacobian_paper_formula<double>(
          paths, std::span<const double>(phi), theta, options.engine);
      Index worst = -1;
      for (std::size_t k = 0; k < jac.values.size(); ++k) {
        const double err =
            rel_error(jac.values[k], paper.values[k], std::numeric_limits<double>::min());
        if (err > r.max_error) {
          r.max_error = err;
          worst = static_cast<Index>(k);
        }
      }
      r.entries = jac.nnz();
      r.passed =
          r.max_error <= r.tolerance && *paper.pattern.col_indices == *jac.pattern.col_indices;
      if (worst >= 0) {
        const auto row =
            static_cast<Index>(std::upper_bound(off.begin(), off.end(), worst) - off.begin() - 1);
        r.note = fmt::format("largest error at path {}, edge {}", row,
                             cols[static_cast<std::size_t>(worst)]);
      }
    }
    out.push_back(std::move(r));
  }

  // Corollary 1: B = dPhi(1_d).
  {
    CheckResult r;
    r.name = "corollary1";
    r.claim = "B = dPhi(1_d)  (Corollary 1)";
    r.tolerance = 0;
    const std::vector<double> ones(theta.size(), 1.0);
    const CsrMatrix<double> at_one =
        jacobian<double>(net, std::span<const double>(ones), options.engine);
    const CsrPattern b = skeleton(paths, options.engine);
    bool same_pattern = *at_one.pattern.row_offsets == *b.row_offsets &&
                        *at_one.pattern.col_indices == *b.col_indices;
    for (double v : at_one.values) {
      r.max_error = std::max(r.max_error, std::abs(v - 1.0));
    }
    r.entries = b.nnz();
    r.passed = same_pattern && r.max_error == 0.0;
    if (!same_pattern) {
      r.note = "the pattern of dPhi(1) differs from B";
    }
    out.push_back(std::move(r));
  }

  // dPhi against central finite differences on a sample of entries (on and off the paths).
  {
    CheckResult r;
    r.name = "finite_differences";
    r.claim = "dPhi = central finite differences of Phi";
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
      const double err = rel_error(e.value, fd, floor);
      if (err > r.max_error) {
        r.max_error = err;
        worst = static_cast<Index>(i);
      }
    }
    r.entries = static_cast<Index>(entries.size());
    r.passed = r.max_error <= r.tolerance;
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
  return std::all_of(results.begin(), results.end(),
                     [](const CheckResult& r) { return !r.applicable || r.passed; });
}

}  // namespace pathlift
