// The heaviest and sampled paths of a layer graph, without unrolling it (layer_paths.hpp).
//
// The paths are walked backwards, from an output entry to an input entry or a bias: every entry
// of a layer that owns its entries (views resolved to their operands') has its terms generated
// from its layer's geometry (layers_geometry.hpp's taps, the same as the unroller's edges).
// - top: a best-first search whose priority is the exact suffix product (output back to the
//   entry) times the largest prefix product into the entry, F(v) = max over v's terms of
//   |w| F(source), one max-plus pass over the layers (per layer doubles and one binary
//   exponent, like the layer DP's tensors);
// - sample: the layer DP's forward sums F_s (kept, on the position classes, then expanded), an
//   output entry drawn in proportion to F_s, then at each entry a term in proportion to
//   |w|^s F_s(source): exact, O(length x fan-in) a sample.

#include "src/layer_dp/detail/layer_paths.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <queue>
#include <stdexcept>

#include "pathlift/error.hpp"
#include "pathlift/limits.hpp"
#include "src/core/parallel.hpp"
#include "src/core/random.hpp"
#include "src/dp/max_value.hpp"
#include "src/layer_dp/detail/entry_graph.hpp"
#include "src/layer_dp/detail/layer_classes.hpp"
#include "src/layer_dp/detail/layer_dp_engine.hpp"
#include "src/layer_dp/detail/layer_kernels.hpp"

namespace pathlift::detail {

namespace {

using Mag = MaxValue;

/// Per owning layer: values[e] * 2^exp.
struct Values {
  std::vector<double> v;
  std::int64_t exp = 0;
};

/// The entries of the owning layers, checked against the memory limit (`per_entry` bytes each).
void require_entries(const EntryGraph& g, double per_entry, std::size_t max_memory,
                     std::string_view what) {
  double total = 0;
  for (std::size_t l = 0; l < g.size(); ++l) {
    total += g.owns(l) ? static_cast<double>(g.entries(l)) : 0.0;
  }
  require_bytes(per_entry * total, max_memory,
                fmt::format("{} ({:.3g} entries of the layer outputs)", what, total));
}

/// 2^(from - to) as a double (0 below its range).
double rescale(std::int64_t from, std::int64_t to) {
  return std::ldexp(1.0, static_cast<int>(std::clamp<std::int64_t>(from - to, -1100, 1100)));
}

/// The values of layer l's term sources relative to 2^base: an operand that owns its entries
/// read directly, a view's through resolve.
class SourceReader {
 public:
  SourceReader(const EntryGraph& g, const std::vector<Values>& f, std::size_t l, std::int64_t base)
      : m_g(&g), m_f(&f), m_l(l) {
    const std::size_t n = g.graph().layers[l].inputs.size();
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t o = g.op(l, k);
      if (g.owns(o)) {
        m_ops.push_back({f[o].v.data(), rescale(f[o].exp, base)});
        continue;
      }
      m_ops.push_back({nullptr, 0.0});
      if (m_factor.empty()) {
        m_factor.assign(g.size(), 0.0);
        for (const std::size_t src : g.sources(l)) {
          m_factor[src] = rescale(f[src].exp, base);
        }
      }
    }
  }

  /// The value of entry i of operand k, times 2^-base.
  double operator()(std::size_t k, Index i) const {
    const Op& x = m_ops[k];
    if (x.v != nullptr) {
      return x.v[i] * x.factor;
    }
    const auto [sl, se] = m_g->resolve(m_g->op(m_l, k), i);
    return (*m_f)[sl].v[static_cast<std::size_t>(se)] * m_factor[sl];
  }

 private:
  struct Op {
    const double* v;
    double factor;
  };
  const EntryGraph* m_g;
  const std::vector<Values>* m_f;
  std::size_t m_l;
  std::vector<Op> m_ops;
  std::vector<double> m_factor;  // per layer, where an operand is a view
};

/// The largest |w| x(source) over the taps of every output of convolution l (its input's values
/// x, an owning layer's), a row of outputs at a time so that one weight's taps run over
/// contiguous inputs: the maxima of conv_taps' terms (max is exact; each product rounded once).
void conv_best(const Layer& ly, const Window& w, const double* theta, const double* x, bool unit,
               double* out, int threads) {
  const Index cg = w.channels_in / w.groups;
  const Index per_group = w.channels_out / w.groups;
  const Index taps = w.h.kernel * w.w.kernel;
  const Index in_plane = w.h.in * w.w.in;
  for_tasks(w.channels_out * w.h.out, threads, [&](Index r) {
    const Index co = r / w.h.out;
    const Index oh = r % w.h.out;
    double* row = out + r * w.w.out;
    std::fill(row, row + w.w.out, 0.0);
    const Index ci0 = (co / per_group) * cg;
    for (Index ci = 0; ci < cg; ++ci) {
      const Index p0 = ly.weight_offset + (co * cg + ci) * taps;
      const double* plane = x + (ci0 + ci) * in_plane;
      for (Index kh = w.h.first(oh); kh < w.h.last(oh); ++kh) {
        const double* in_row = plane + w.h.input(oh, kh) * w.w.in;
        for (Index kw = 0; kw < w.w.kernel; ++kw) {
          const double a = unit ? 1.0 : std::fabs(theta[p0 + kh * w.w.kernel + kw]);
          // Outputs ow reading input ow * stride + off, inside [0, in).
          const Index off = kw * w.w.dilation - w.w.padding;
          const Index ow0 = off >= 0 ? 0 : (-off + w.w.stride - 1) / w.w.stride;
          const Index ow1 =
              w.w.in - 1 - off < 0 ? 0 : std::min(w.w.out, (w.w.in - 1 - off) / w.w.stride + 1);
          if (w.w.stride == 1) {
            const double* src = in_row + off;
            for (Index ow = ow0; ow < ow1; ++ow) {
              row[ow] = std::max(row[ow], a * src[ow]);
            }
          } else {
            for (Index ow = ow0; ow < ow1; ++ow) {
              row[ow] = std::max(row[ow], a * in_row[ow * w.w.stride + off]);
            }
          }
        }
      }
    }
  });
}

/// F(v) = max over v's terms of |w| F(source) (bias: |b|, input entries 1; unit: every weight
/// 1), per owning layer, renormalised to a largest value in [0.5, 1). A layer with position
/// classes (layer_classes.hpp: positions whose windows read, tap by tap, sources of one class)
/// is computed at one position per class and copied to the others: the classes are those of the
/// sums, and the same argument holds for maxima.
std::vector<Values> best_prefixes(const LayerGraph& graph, const EntryGraph& g, const double* theta,
                                  bool unit, const EngineOptions& options) {
  const LayerPlan plan(graph, options);
  const LayerClasses classes = forward_classes(plan);
  const int threads = resolve_threads(options.threads);
  std::vector<Values> f(g.size());
  f[0].v.assign(static_cast<std::size_t>(g.entries(0)), 1.0);
  for (std::size_t l = 1; l < g.size(); ++l) {
    if (!g.owns(l)) {
      continue;
    }
    std::int64_t base = 0;
    for (const std::size_t src : g.sources(l)) {
      base = std::max(base, f[src].exp);
    }
    const SourceReader read(g, f, l, base);
    const double bias_factor = rescale(0, base);
    const auto best_of = [&](Index e) {
      double best = 0;
      g.raw_terms(
          l, e, theta,
          [&](std::size_t k, Index i, Index, double w) {
            best = std::max(best, (unit ? 1.0 : std::fabs(w)) * read(k, i));
          },
          [&](Index, Index, double w) {
            best = std::max(best, (unit ? 1.0 : std::fabs(w)) * bias_factor);
          });
      return best;
    };
    std::vector<double>& out = f[l].v;
    out.assign(static_cast<std::size_t>(g.entries(l)), 0.0);
    const Classes* c = classes[l] ? &*classes[l] : nullptr;
    // The entries computed: every one, or one per channel and class.
    const Index positions = c != nullptr ? c->full_positions() : 0;
    const Index n = c != nullptr ? g.entries(l) / positions * c->positions() : g.entries(l);
    const auto entry = [&](Index t) {
      if (c == nullptr) {
        return t;
      }
      const Index ch = t / c->positions();
      const Index q = t % c->positions();
      const auto w_out = static_cast<Index>(c->w.of.size());
      return ch * positions + c->h.rep[static_cast<std::size_t>(q / c->w.size())] * w_out +
             c->w.rep[static_cast<std::size_t>(q % c->w.size())];
    };
    const Layer& ly = graph.layers[l];
    const std::size_t in = g.op(l);
    if (form_of(ly.kind) == Form::window && c == nullptr && g.owns(in)) {
      // Rows of outputs over contiguous inputs, the source's scale and the bias after.
      const Window& w = g.window(l);
      conv_best(ly, w, theta, f[in].v.data(), unit, out.data(), threads);
      const double factor = rescale(f[in].exp, base);
      const Index hw = w.h.out * w.w.out;
      for (Index e = 0; e < n; ++e) {
        double& y = out[static_cast<std::size_t>(e)];
        y *= factor;
        if (ly.bias_offset >= 0) {
          const double b = theta[ly.bias_offset + e / hw];
          y = std::max(y, (unit ? 1.0 : std::fabs(b)) * bias_factor);
        }
      }
    } else {
      run_team(threads, n >= 64, [&] {
#pragma omp for schedule(dynamic, 64)
        for (Index t = 0; t < n; ++t) {
          const Index e = entry(t);
          out[static_cast<std::size_t>(e)] = best_of(e);
        }
      });
    }
    if (c != nullptr) {
      // Each position takes its class's value (computed at the class's representative).
      const auto w_out = static_cast<Index>(c->w.of.size());
      for (Index ch = 0; ch < g.entries(l) / positions; ++ch) {
        double* plane = out.data() + ch * positions;
        for (Index p = 0; p < positions; ++p) {
          const Index rh =
              c->h.rep[static_cast<std::size_t>(c->h.of[static_cast<std::size_t>(p / w_out)])];
          const Index rw =
              c->w.rep[static_cast<std::size_t>(c->w.of[static_cast<std::size_t>(p % w_out)])];
          plane[p] = plane[rh * w_out + rw];
        }
      }
    }
    const double top = out.empty() ? 0.0 : *std::max_element(out.begin(), out.end());
    if (!std::isfinite(top)) {
      throw RangeError(fmt::format(
          "top_paths: the heaviest prefixes into layer '{}' exceed double's range within the "
          "layer (weights near 1e308): the search on the unrolled network (unroll the graph) "
          "has no such limit",
          g.graph().layers[l].name));
    }
    if (top > 0) {
      const int ex = std::ilogb(top) + 1;
      for (double& x : out) {
        x = std::ldexp(x, -ex);
      }
      f[l].exp = base + ex;
    } else {
      f[l].exp = base;
    }
  }
  return f;
}

Mag mag_of(double v, std::int64_t exp) {
  if (v == 0) {
    return {};
  }
  int e = 0;
  const double m = std::frexp(v, &e);
  return {m, exp + e};
}

/// A search state: a path suffix (a chain of records from an output entry back to this one).
struct Record {
  Index parent;  ///< the record this entry feeds, -1 at the output entry
  std::int32_t layer;
  bool bias;
  Index entry;
  Index rank;   ///< the output entry's rank (a root), else this term's index among its parent's
  Index param;  ///< the step's parameter into the parent (-1: fixed)
  double weight;
  Mag suffix;  ///< the product of the suffix's |weights| (unit: 1)
};

struct Item {
  Mag bound;
  Index record;
};

/// The path from its start record: entries start first, steps with their parameters and weights.
WeightedPath path_of(const std::vector<Record>& records, Index start) {
  WeightedPath p;
  std::size_t length = 1;
  for (Index r = start; records[static_cast<std::size_t>(r)].parent >= 0;
       r = records[static_cast<std::size_t>(r)].parent) {
    ++length;
  }
  p.entries.reserve(length);
  p.params.reserve(length - 1);
  p.weights.reserve(length - 1);
  Mag mag = Mag::one();
  int sign = 1;
  for (Index r = start;; r = records[static_cast<std::size_t>(r)].parent) {
    const Record& x = records[static_cast<std::size_t>(r)];
    p.entries.push_back({x.layer, x.entry, x.bias});
    if (x.parent < 0) {
      break;
    }
    p.params.push_back(x.param);
    p.weights.push_back(x.weight);
    mag = mag.times(x.weight);
    sign = x.weight < 0 ? -sign : sign;
  }
  p.magnitude = mag.m == 0 ? ScaledReal{} : ScaledReal{mag.m, mag.k};
  p.sign = mag.m == 0 ? 0 : sign;
  return p;
}

class LayerTopSearch {
 public:
  LayerTopSearch(const LayerGraph& graph, const EntryGraph& g, const double* theta, bool unit,
                 const EngineOptions& o)
      : m_g(g), m_theta(theta), m_unit(unit), m_max_memory(o.max_memory) {
    require_entries(g, 8.0, m_max_memory, "the heaviest prefixes of the layer entries");
    m_best = best_prefixes(graph, g, theta, unit, o);
  }

  std::vector<WeightedPath> run(Index k) {
    std::vector<WeightedPath> out;
    if (k == 0) {
      return out;
    }
    Index rank = 0;
    for (const Index o : m_g.graph().outputs) {
      for (Index e = 0; e < m_g.entries(static_cast<std::size_t>(o)); ++e, ++rank) {
        const auto [l, x] = m_g.resolve(static_cast<std::size_t>(o), e);
        push(add({-1, static_cast<std::int32_t>(l), false, x, rank, -1, 1.0, Mag::one()}));
      }
    }
    while (!m_queue.empty() && std::cmp_less(out.size(), k)) {
      const Item it = m_queue.top();
      m_queue.pop();
      const Record r = m_records[static_cast<std::size_t>(it.record)];
      if (r.bias || r.layer == 0) {
        out.push_back(path_of(m_records, it.record));
        continue;
      }
      Index i = 0;
      m_g.terms(static_cast<std::size_t>(r.layer), r.entry, m_theta, [&](const Term& t) {
        m_children.push_back({it.record, t.layer, t.bias, t.entry, i++, t.param, t.weight,
                              r.suffix.times(m_unit ? 1.0 : t.weight)});
      });
      for (const Record& c : m_children) {
        push(add(c));
      }
      m_children.clear();
    }
    return out;
  }

 private:
  Index add(const Record& r) {
    if ((m_records.size() & 0xFFFF) == 0) {
      // Each record also has about one frontier item: 72 + 32 bytes.
      require_bytes(104.0 * static_cast<double>(m_records.size() + 0x10000), m_max_memory,
                    fmt::format("the search for the heaviest paths ({} path suffixes so far)",
                                m_records.size()));
    }
    m_records.push_back(r);
    return static_cast<Index>(m_records.size()) - 1;
  }

  void push(Index record) {
    const Record& r = m_records[static_cast<std::size_t>(record)];
    Mag prefix = Mag::one();
    if (!r.bias) {
      const Values& f = m_best[static_cast<std::size_t>(r.layer)];
      prefix = mag_of(f.v[static_cast<std::size_t>(r.entry)], f.exp);
    }
    m_queue.push({r.suffix.times(prefix).coarse(40), record});
  }

  /// The canonical key of a record: its output rank, then its term indices back to it.
  [[nodiscard]] std::vector<Index> key(Index record) const {
    std::vector<Index> k;
    for (Index r = record; r >= 0; r = m_records[static_cast<std::size_t>(r)].parent) {
      k.push_back(m_records[static_cast<std::size_t>(r)].rank);
    }
    std::reverse(k.begin(), k.end());
    return k;
  }

  struct Later {
    const LayerTopSearch* self;
    bool operator()(const Item& a, const Item& b) const {
      if (!a.bound.same(b.bound)) {
        return a.bound.less(b.bound);
      }
      return self->key(b.record) < self->key(a.record);
    }
  };

  const EntryGraph& m_g;
  const double* m_theta;
  bool m_unit;
  std::size_t m_max_memory;
  std::vector<Values> m_best;
  std::vector<Record> m_records;
  std::vector<Record> m_children;
  std::priority_queue<Item, std::vector<Item>, Later> m_queue{Later{this}};
};

/// The layer DP's forward sums of every owning layer on its full positions.
std::vector<Values> forward_sums(const LayerGraph& graph, const EntryGraph& g,
                                 std::span<const double> theta, double s,
                                 const EngineOptions& options) {
  const EigenSerial serial;
  const LayerPlan plan(graph, options);
  const LayerClasses classes = forward_classes(plan);
  plan.require_memory(1, 0, "sampling paths", &classes);
  require_entries(g, 8.0, options.max_memory, "sampling paths: the forward sums of every entry");
  const WeightSpec w{Mode::power, s, theta, {}};
  const std::vector<TensorPtr> f =
      forward_pass(plan, w, true, 1.0, nullptr, nullptr, {0, 1}, &classes);
  const int threads = resolve_threads(options.threads);
  std::vector<Values> out(g.size());
  for (std::size_t l = 0; l < g.size(); ++l) {
    if (!g.owns(l)) {
      continue;
    }
    if (!f[l]) {
      out[l].v.assign(static_cast<std::size_t>(g.entries(l)), 0.0);
      continue;
    }
    TensorPtr t = f[l];
    if (classes[l]) {
      t = regather(*t, plan.shape(l).front(), *classes[l], nullptr, threads);
    }
    out[l].v.assign(t->value.begin(), t->value.end());
    out[l].exp = t->exp;
  }
  return out;
}

/// |w|^s (s = 0: 1 for every weight, 0 included).
double weight_power(double w, double s) {
  if (s == 0) {
    return 1.0;
  }
  const double a = std::fabs(w);
  return s == 1 ? a : s == 2 ? a * a : std::pow(a, s);
}

}  // namespace

std::vector<WeightedPath> layer_top_paths(const LayerGraph& graph, std::span<const double> theta,
                                          Index k, double s, const EngineOptions& options) {
  const EntryGraph g(graph);
  LayerTopSearch search(graph, g, theta.data(), s == 0, options);
  return search.run(k);
}

std::vector<WeightedPath> layer_sample_paths(const LayerGraph& graph, std::span<const double> theta,
                                             Index n, double s, std::uint64_t seed,
                                             const EngineOptions& options) {
  const EntryGraph g(graph);
  const std::vector<Values> f = forward_sums(graph, g, theta, s, options);
  // The starts: every output entry in proportion to F_s, relative to the largest exponent.
  std::int64_t top = std::numeric_limits<std::int64_t>::min();
  std::vector<std::pair<std::size_t, Index>> ends;
  for (const Index o : graph.outputs) {
    for (Index e = 0; e < g.entries(static_cast<std::size_t>(o)); ++e) {
      ends.push_back(g.resolve(static_cast<std::size_t>(o), e));
      const Values& v = f[ends.back().first];
      if (v.v[static_cast<std::size_t>(ends.back().second)] != 0) {
        top = std::max(top, v.exp);
      }
    }
  }
  if (top == std::numeric_limits<std::int64_t>::min()) {
    throw RangeError(
        "sample_paths: every path has weight 0 (||Phi||_s = 0): there is nothing to sample");
  }
  std::vector<double> cumulative(ends.size());
  double total = 0;
  for (std::size_t i = 0; i < ends.size(); ++i) {
    const Values& v = f[ends[i].first];
    total += v.v[static_cast<std::size_t>(ends[i].second)] * rescale(v.exp, top);
    cumulative[i] = total;
  }
  std::vector<SourceReader> readers;
  readers.reserve(g.size());
  for (std::size_t l = 0; l < g.size(); ++l) {
    readers.emplace_back(g, f, l, f[l].exp);
  }
  // Every sample walks backwards, one term an entry; the walks advance together, layer by
  // layer from the last (each term reads an earlier layer), the samples at one entry sharing
  // its terms' masses. Sample i draws from its own generator, in the order of its steps: the
  // same paths as walking it alone, for any thread count.
  std::vector<SplitMix64> rng;
  rng.reserve(static_cast<std::size_t>(n));
  // The walks' steps in one array (each layer appends one step per sample that is there),
  // linked to the step they came from; cur[i]: sample i's last step.
  std::vector<Record> steps;
  steps.reserve(static_cast<std::size_t>(n) * 4);
  std::vector<Index> cur(static_cast<std::size_t>(n));
  std::vector<std::vector<std::pair<Index, Index>>> at(g.size());  // per layer: (entry, sample)
  for (Index i = 0; i < n; ++i) {
    rng.emplace_back(seed ^ (0x9E3779B97F4A7C15ULL * static_cast<std::uint64_t>(i + 1)));
    const double u0 = rng.back().uniform() * total;
    auto a = static_cast<std::size_t>(std::upper_bound(cumulative.begin(), cumulative.end(), u0) -
                                      cumulative.begin());
    a = std::min(a, ends.size() - 1);
    while (a > 0 && cumulative[a] == cumulative[a - 1]) {
      --a;  // an entry of weight 0 is never drawn: its predecessor's interval ends there
    }
    cur[static_cast<std::size_t>(i)] = static_cast<Index>(steps.size());
    steps.push_back({-1, static_cast<std::int32_t>(ends[a].first), false, ends[a].second, 0, -1,
                     1.0, Mag::one()});
    at[ends[a].first].emplace_back(ends[a].second, i);
  }
  const int threads = resolve_threads(options.threads);
  for (std::size_t l = g.size(); l-- > 1;) {
    std::vector<std::pair<Index, Index>>& here = at[l];
    if (here.empty() || !g.owns(l)) {
      continue;
    }
    std::sort(here.begin(), here.end());
    // The groups of samples at one entry.
    std::vector<std::size_t> groups{0};
    for (std::size_t x = 1; x < here.size(); ++x) {
      if (here[x].first != here[x - 1].first) {
        groups.push_back(x);
      }
    }
    groups.push_back(here.size());
    const SourceReader& read = readers[l];
    const double bias_factor = rescale(0, f[l].exp);
    const auto num_groups = static_cast<Index>(groups.size()) - 1;
    const std::size_t base = steps.size();  // the sample at here[x] writes steps[base + x]
    steps.resize(base + here.size());
    std::atomic<bool> failed{false};
    std::vector<std::vector<std::pair<std::size_t, std::pair<Index, Index>>>> moved(
        static_cast<std::size_t>(std::max(threads, 1)));
    run_team(threads, here.size() > 16, [&] {
      std::vector<double> mass;
      std::vector<std::pair<std::size_t, std::size_t>> drawn;  // (term, position in here)
      auto& mine = moved[static_cast<std::size_t>(omp_get_thread_num())];
#pragma omp for schedule(dynamic, 4)
      for (Index q = 0; q < num_groups; ++q) {
        const std::size_t first = groups[static_cast<std::size_t>(q)];
        const std::size_t last = groups[static_cast<std::size_t>(q) + 1];
        const Index e = here[first].first;
        // Each term's mass |w|^s F_s(source), relative to 2^F_s(l).exp.
        mass.clear();
        double sum = 0;
        g.raw_terms(
            l, e, theta.data(),
            [&](std::size_t k, Index j, Index, double w) {
              sum += weight_power(w, s) * read(k, j);
              mass.push_back(sum);
            },
            [&](Index, Index, double w) {
              sum += weight_power(w, s) * bias_factor;
              mass.push_back(sum);
            });
        if (!(sum > 0)) {
          failed = true;  // not thrown inside the parallel region
          continue;
        }
        // Each sample's term, then the drawn terms resolved in one more pass over the terms.
        drawn.clear();
        for (std::size_t x = first; x < last; ++x) {
          const auto i = static_cast<std::size_t>(here[x].second);
          const double u = rng[i].uniform() * sum;
          auto j = static_cast<std::size_t>(std::upper_bound(mass.begin(), mass.end(), u) -
                                            mass.begin());
          j = std::min(j, mass.size() - 1);
          while (j > 0 && mass[j] == mass[j - 1]) {
            --j;  // a term of mass 0 is never drawn
          }
          drawn.emplace_back(j, x);
        }
        std::sort(drawn.begin(), drawn.end());
        std::size_t count = 0;
        std::size_t next = 0;
        const auto take = [&](const Record& r) {
          for (; next < drawn.size() && drawn[next].first == count; ++next) {
            const std::size_t x = drawn[next].second;
            const auto i = static_cast<std::size_t>(here[x].second);
            Record& step = steps[base + x];
            step = r;
            step.parent = cur[i];
            cur[i] = static_cast<Index>(base + x);
            if (!r.bias && r.layer != 0) {
              mine.push_back({static_cast<std::size_t>(r.layer), {r.entry, here[x].second}});
            }
          }
          ++count;
        };
        g.raw_terms(
            l, e, theta.data(),
            [&](std::size_t k, Index y, Index param, double w) {
              if (next < drawn.size() && drawn[next].first == count) {
                const auto [sl, se] = g.resolve(g.op(l, k), y);
                take({0, static_cast<std::int32_t>(sl), false, se, 0, param, w, Mag::one()});
              } else {
                ++count;
              }
            },
            [&](Index c, Index param, double w) {
              take({0, static_cast<std::int32_t>(l), true, c, 0, param, w, Mag::one()});
            });
      }
    });
    if (failed) {
      throw std::logic_error(
          fmt::format("sample_paths: a drawn entry of layer '{}' has no term of positive weight",
                      graph.layers[l].name));
    }
    for (auto& list : moved) {
      for (const auto& [layer, item] : list) {
        at[layer].push_back(item);
      }
    }
    here.clear();
    here.shrink_to_fit();
  }
  std::vector<WeightedPath> out(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = path_of(steps, cur[i]);
  }
  return out;
}

}  // namespace pathlift::detail
