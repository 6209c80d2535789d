#include "src/network/parameters.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "pathlift/error.hpp"
#include "pathlift/options.hpp"
#include "src/core/parallel.hpp"
#include "src/network/dag.hpp"
#include "src/network/dag_dp.hpp"
#include "src/network/ring_longest_paths.hpp"

namespace pathlift::detail {

namespace {

/// Rows mapped to parameters: for each row, the (parameter, position) pairs sorted; the
/// first pass counts the distinct parameters of each row, the second writes them.
template <class Sized, class Write>
CsrPattern gather_rows(const ParameterMap& map, const CsrPattern& b, int threads, Sized&& sized,
                       Write&& write) {
  const Index rows = b.rows;
  const Index* off = b.row_offsets->data();
  const EdgeId* cols = b.col_indices->data();
  const Index* param = map.edge_params.data();
  auto offsets = std::make_shared<Buffer<Index>>(static_cast<std::size_t>(rows) + 1, Index{0});
  Index* out_off = offsets->data();
  const bool parallel = b.nnz() >= k_parallel_min_entries;
  run_team(resolve_threads(threads), parallel, [&] {
    std::vector<EdgeId> ks;
#pragma omp for schedule(static)
    for (Index r = 0; r < rows; ++r) {
      ks.clear();
      for (Index c = off[r]; c < off[r + 1]; ++c) {
        if (const Index k = param[cols[c]]; k >= 0) {
          ks.push_back(static_cast<EdgeId>(k));
        }
      }
      std::sort(ks.begin(), ks.end());
      out_off[r + 1] = std::unique(ks.begin(), ks.end()) - ks.begin();
    }
  });
  for (Index r = 0; r < rows; ++r) {
    out_off[r + 1] += out_off[r];
  }
  auto out_cols = std::make_shared<Buffer<EdgeId>>(static_cast<std::size_t>(out_off[rows]));
  sized(out_off[rows]);
  EdgeId* oc = out_cols->data();
  run_team(resolve_threads(threads), parallel, [&] {
    std::vector<std::pair<EdgeId, Index>> kc;  // (parameter, entry of the edge row)
#pragma omp for schedule(static)
    for (Index r = 0; r < rows; ++r) {
      kc.clear();
      for (Index c = off[r]; c < off[r + 1]; ++c) {
        if (const Index k = param[cols[c]]; k >= 0) {
          kc.emplace_back(static_cast<EdgeId>(k), c);
        }
      }
      std::sort(kc.begin(), kc.end());
      Index o = out_off[r] - 1;
      for (std::size_t i = 0; i < kc.size(); ++i) {
        const bool repeat = i > 0 && kc[i].first == kc[i - 1].first;
        if (!repeat) {
          oc[++o] = kc[i].first;
        }
        write(r, o, kc[i].second, repeat, i > 0 ? kc[i - 1].second : -1);
      }
    }
  });
  CsrPattern out;
  out.rows = rows;
  out.cols = map.num_params;
  out.row_offsets = std::move(offsets);
  out.col_indices = std::move(out_cols);
  return out;
}

}  // namespace

CsrPattern gather_pattern(const Network* net, const ParameterMap& map, const CsrPattern& b,
                          int threads) {
  // A repeat cannot be thrown from inside the parallel loop: the first is recorded.
  Index bad_row = -1;
  Index bad_a = -1;
  Index bad_b = -1;
  CsrPattern out = gather_rows(
      map, b, threads, [](Index) {},
      [&](Index r, Index, Index c, bool repeat, Index previous) {
        if (repeat) {
#pragma omp critical(pathlift_gather_repeat)
          if (bad_row < 0 || r < bad_row) {
            bad_row = r;
            bad_a = previous;
            bad_b = c;
          }
        }
      });
  if (bad_row >= 0) {
    const EdgeId ea = b.col_indices->data()[bad_a];
    const EdgeId eb = b.col_indices->data()[bad_b];
    const auto label = [&](EdgeId e) {
      return net != nullptr ? fmt::format("edge {} ({})", e, net->edge_label(e))
                            : fmt::format("edge {}", e);
    };
    throw NetworkError(fmt::format(
        "path {} carries parameter {} twice ({} and {}): B would have an entry 2, which the "
        "skeleton (a 0/1 pattern) cannot hold; jacobian() handles such weight sharing",
        bad_row, map.edge_params[static_cast<std::size_t>(ea)], label(ea), label(eb)));
  }
  return out;
}

template <class T>
CsrMatrix<T> gather_columns(const ParameterMap& map, const CsrMatrix<T>& m, int threads) {
  CsrMatrix<T> out;
  Buffer<T>& values = out.values;
  const T* in = m.values.data();
  out.pattern = gather_rows(
      map, m.pattern, threads, [&](Index nnz) { values.resize(static_cast<std::size_t>(nnz)); },
      [&](Index, Index o, Index c, bool repeat, Index) {
        if (repeat) {
          values[static_cast<std::size_t>(o)] += in[c];
        } else {
          values[static_cast<std::size_t>(o)] = in[c];
        }
      });
  return out;
}

namespace {
template <class T>
void expand(const ParameterMap& map, const T* theta, T* out) {
  const auto ne = static_cast<Index>(map.edge_params.size());
  const Index* param = map.edge_params.data();
  const double* fixed = map.fixed_weights.data();
  run_team(resolve_threads(0), ne >= k_parallel_min_entries * 16, [&] {
#pragma omp for schedule(static)
    for (Index e = 0; e < ne; ++e) {
      const Index k = param[e];
      out[e] = k >= 0 ? theta[k] : static_cast<T>(fixed[e]);
    }
  });
}
}  // namespace

void expand_weights(const ParameterMap& map, const double* theta, double* out) {
  expand(map, theta, out);
}
void expand_weights(const ParameterMap& map, const float* theta, float* out) {
  expand(map, theta, out);
}

std::vector<double> spread(const ParameterMap& map, std::span<const double> v) {
  std::vector<double> w(map.edge_params.size());
  for (std::size_t e = 0; e < w.size(); ++e) {
    const Index k = map.edge_params[e];
    w[e] = k >= 0 ? v[static_cast<std::size_t>(k)] : 0.0;
  }
  return w;
}

void gather_sum(const ParameterMap& map, const double* u, double* out) {
  for (Index k = 0; k < map.num_params; ++k) {
    double s = 0;
    for (Index c = map.offsets[static_cast<std::size_t>(k)];
         c < map.offsets[static_cast<std::size_t>(k) + 1]; ++c) {
      s += u[map.edges[static_cast<std::size_t>(c)]];
    }
    out[k] = s;
  }
}

std::vector<Index> params_maybe_repeated(const Network& net) {
  const auto& map = net.parameter_map();
  if (!map) {
    return {};  // one parameter per edge: an edge is on a path at most once
  }
  const DagView g(net);
  const std::vector<int> depth = dag_forward(g, LongestPaths{});
  std::vector<Index> out;
  for (Index k = 0; k < map->num_params; ++k) {
    const auto first = map->offsets[static_cast<std::size_t>(k)];
    const auto last = map->offsets[static_cast<std::size_t>(k) + 1];
    for (Index c = first + 1; c < last; ++c) {
      if (depth[static_cast<std::size_t>(net.source(map->edges[static_cast<std::size_t>(c)]))] !=
          depth[static_cast<std::size_t>(
              net.source(map->edges[static_cast<std::size_t>(first)]))]) {
        out.push_back(k);
        break;
      }
    }
  }
  return out;
}

template CsrMatrix<double> gather_columns(const ParameterMap&, const CsrMatrix<double>&, int);
template CsrMatrix<float> gather_columns(const ParameterMap&, const CsrMatrix<float>&, int);

}  // namespace pathlift::detail
