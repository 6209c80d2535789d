#include "pathlift/gram.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <span>
#include <vector>

#include "pathlift/error.hpp"
#include "pathlift/limits.hpp"
#include "src/core/modular_field.hpp"
#include "src/core/parallel.hpp"
#include "src/dp/detail/ring_mod_counts.hpp"
#include "src/dp/detail/ring_saturated_u64.hpp"
#include "src/network/dag_dp.hpp"

namespace pathlift {

namespace {

/// B^T B in the ring R (SaturatedU64 or ModCounts) into out (d x d, row-major, zeroed).
/// With A(v) the partial paths input -> v, G(v) the paths v -> output and M(x, v) the partial
/// paths x -> v: for edges i = (u -> x) and j = (a -> b) after x, (B^T B)[i, j] =
/// A(u) M(x, a) G(b); [i, i] = A(u) G(x). One forward DP from each non-input node x gives row
/// block x; the symmetric half is filled at the end.
template <class R>
void gram_counts(const Network& net, const R& ring, std::uint64_t* out,
                 const EngineOptions& options) {
  const detail::DagView g(net);
  const Index d = g.d;
  const auto fa = detail::dag_forward(g, ring);
  const auto gb = detail::dag_backward(g, ring).total;

  /// M(x, .) from one start node x: the forward DP from x's position on.
  struct FromNode {
    const R* ring;
    const detail::DagView* g;
    NodeId x;
    using value_type = typename R::value_type;
    [[nodiscard]] value_type zero() const { return ring->zero(); }
    [[nodiscard]] value_type start(NodeId /*v*/) const { return ring->zero(); }  // not reached
    [[nodiscard]] value_type extend(EdgeId e, value_type v) const { return ring->extend(e, v); }
    void add(value_type& acc, value_type v) const { ring->add(acc, v); }
    void finish(NodeId v, value_type& acc) const { ring->finish(v, acc); }
  };
  struct RowBody {
    const detail::DagView* g;
    const R* ring;
    const std::vector<std::uint64_t>* fa;
    const std::vector<std::uint64_t>* gb;
    std::uint64_t* out;
    std::vector<std::uint64_t> mc, r;

    void init() {
      mc.assign(static_cast<std::size_t>(g->n), 0);
      r.assign(static_cast<std::size_t>(g->d), 0);
    }
    void operator()(Index offset) {
      const Index pos = g->num_inputs + offset;
      const NodeId x = g->topo[pos];
      const Index d = g->d;
      // M(x, v) (nodes before x in topological order get 0).
      std::fill(mc.begin(), mc.end(), 0);
      mc[static_cast<std::size_t>(x)] = ring->start(x);
      detail::dag_forward(*g, FromNode{ring, g, x}, std::span<std::uint64_t>(mc), pos + 1);
      for (Index j = 0; j < d; ++j) {
        r[static_cast<std::size_t>(j)] = ring->mul(mc[static_cast<std::size_t>(g->src[j])],
                                                   (*gb)[static_cast<std::size_t>(g->dst[j])]);
      }
      const std::uint64_t bx = (*gb)[static_cast<std::size_t>(x)];
      for (Index t = g->in_off[x]; t < g->in_off[x + 1]; ++t) {
        const EdgeId i = g->in_list[t];
        const std::uint64_t ai = (*fa)[static_cast<std::size_t>(g->src[i])];
        std::uint64_t* row = out + static_cast<std::size_t>(i) * static_cast<std::size_t>(d);
        for (Index j = 0; j < d; ++j) {
          row[j] = ring->mul(ai, r[static_cast<std::size_t>(j)]);
        }
        row[i] = ring->mul(ai, bx);
      }
    }
  };
  RowBody body{&g, &ring, &fa, &gb, out, {}, {}};
  const int threads = detail::square_work_threads(d, options);
  detail::parallel_for(g.n - g.num_inputs, threads, body);

  const auto ud = static_cast<std::size_t>(d);
  detail::for_each_upper_pair(d, threads, [&](Index i, Index j) {
    const auto ij = static_cast<std::size_t>(i) * ud + static_cast<std::size_t>(j);
    const auto ji = static_cast<std::size_t>(j) * ud + static_cast<std::size_t>(i);
    std::uint64_t s = out[ij];
    ring.add(s, out[ji]);
    out[ij] = s;
    out[ji] = s;
  });
}

ModMatrix zero_mod_matrix(Index d, std::uint64_t prime) {
  ModMatrix m;
  m.prime = prime;
  m.rows = d;
  m.cols = d;
  m.data.assign(static_cast<std::size_t>(d) * static_cast<std::size_t>(d), 0);
  return m;
}

/// M^T G M for parameters distinct from edges: entry (k, l) sums the entries of the edges that
/// carry k and l (fixed edges drop out), reduced by `add`.
template <class Add>
void gather_gram(const ParameterMap& map, const std::uint64_t* edge_gram, std::uint64_t* out,
                 const Add& add) {
  const auto ne = map.edge_params.size();
  const auto d = static_cast<std::size_t>(map.num_params);
  for (std::size_t i = 0; i < ne; ++i) {
    const Index k = map.edge_params[i];
    if (k < 0) {
      continue;
    }
    for (std::size_t j = 0; j < ne; ++j) {
      const Index l = map.edge_params[j];
      if (l >= 0) {
        add(out[static_cast<std::size_t>(k) * d + static_cast<std::size_t>(l)],
            edge_gram[i * ne + j]);
      }
    }
  }
}

/// B^T B of a network with shared parameters: the edges' matrix by the DP (its entries mapped
/// by `fix`), then M^T G M reduced by `add` into `out` (d x d, zeroed).
template <class Ring, class Fix, class Add>
void shared_gram(const Network& net, const Ring& ring, const EngineOptions& options,
                 std::string_view what, const Fix& fix, const Add& add, std::uint64_t* out) {
  const Index ne = net.num_edges();
  const Index d = net.num_params();
  require_bytes(
      static_cast<double>(ne) * static_cast<double>(ne) * 8 +
          static_cast<double>(d) * static_cast<double>(d) * 8,
      options.max_memory,
      fmt::format("{} of a network with shared parameters (through the {} x {} matrix of its "
                  "edges, d = {})",
                  what, ne, ne, d));
  std::vector<std::uint64_t> edge(static_cast<std::size_t>(ne) * static_cast<std::size_t>(ne), 0);
  gram_counts(net, ring, edge.data(), options);
  for (auto& x : edge) {
    x = fix(x);
  }
  gather_gram(*net.parameter_map(), edge.data(), out, add);
}

}  // namespace

CountMatrix skeleton_gram_exact(const Network& net, const EngineOptions& options) {
  if (net.parameter_map()) {
    CountMatrix out = CountMatrix::Zero(net.num_params(), net.num_params());
    shared_gram(
        net, detail::SaturatedU64{}, options, "B^T B", [](std::uint64_t x) { return x; },
        [](std::uint64_t& acc, std::uint64_t x) { detail::SaturatedU64::add(acc, x); }, out.data());
    if (std::find(out.data(), out.data() + out.size(), detail::SaturatedU64::over) !=
        out.data() + out.size()) {
      throw CountOverflow(
          "B^T B: an entry does not fit in 64 bits; skeleton_gram_mod works modulo a prime "
          "instead");
    }
    return out;
  }
  const Index d = net.num_edges();
  require_dense(d, d, sizeof(std::uint64_t), options.max_memory, "B^T B");
  CountMatrix out = CountMatrix::Zero(d, d);
  gram_counts(net, detail::SaturatedU64{}, out.data(), options);
  const std::uint64_t* p = out.data();
  const auto total = static_cast<std::size_t>(d) * static_cast<std::size_t>(d);
  const auto* hit = std::find(p, p + total, detail::SaturatedU64::over);
  if (hit != p + total) {
    const auto at = static_cast<std::size_t>(hit - p);
    const auto i = static_cast<EdgeId>(at / static_cast<std::size_t>(d));
    const auto j = static_cast<EdgeId>(at % static_cast<std::size_t>(d));
    throw CountOverflow(fmt::format(
        "B^T B entry ({}, {}) (edges {} and {}): the number of paths through both does not fit "
        "in 64 bits; skeleton_gram_mod works modulo a prime instead",
        i, j, net.edge_label(i), net.edge_label(j)));
  }
  return out;
}

ModMatrix skeleton_gram_mod(const Network& net, std::uint64_t prime, const EngineOptions& options) {
  detail::modular_require_prime(prime, "skeleton_gram_mod");
  const detail::ModField field(prime);
  if (net.parameter_map()) {
    ModMatrix m = zero_mod_matrix(net.num_params(), prime);
    shared_gram(
        net, detail::ModCounts{&field}, options, "B^T B mod p",
        [&](std::uint64_t x) { return field.to_residue(x); },
        [&](std::uint64_t& acc, std::uint64_t x) { acc = (acc + x) % prime; }, m.data.data());
    return m;
  }
  const Index d = net.num_edges();
  require_dense(d, d, sizeof(std::uint64_t), options.max_memory, "B^T B mod p");
  ModMatrix m = zero_mod_matrix(d, prime);
  gram_counts(net, detail::ModCounts{&field}, m.data.data(), options);
  for (auto& x : m.data) {
    x = field.to_residue(x);
  }
  return m;
}

ModMatrix skeleton_gram_mod(const CsrPattern& b, std::uint64_t prime,
                            const EngineOptions& options) {
  detail::modular_require_prime(prime, "skeleton_gram_mod");
  const Index d = b.cols;
  require_dense(d, d, sizeof(std::uint64_t), options.max_memory, "B^T B mod p");
  ModMatrix g = zero_mod_matrix(d, prime);
  const auto n = static_cast<std::size_t>(d);
  // Counts are at most P < 2^64, so they are accumulated exactly and reduced at the end.
  for (Index r = 0; r < b.rows; ++r) {
    const auto row = b.row(r);
    for (const EdgeId i : row) {
      for (const EdgeId j : row) {
        ++g.data[static_cast<std::size_t>(i) * n + static_cast<std::size_t>(j)];
      }
    }
  }
  for (auto& x : g.data) {
    x %= prime;
  }
  return g;
}

}  // namespace pathlift
