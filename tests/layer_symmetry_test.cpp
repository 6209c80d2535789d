// h_sym and the exact rank of dPhi on layer graphs and on DAGs with shared parameters
// (symmetry.hpp, docs/rank.md#weight-sharing), against:
// - the unrolled DAG: h_sym and the hidden nodes of a layer graph equal those of unroll(graph),
//   and the layer graph's zero-pattern rank (zero biases, convolution and linear weights) that
//   of the unrolled DAG whenever it answers, on random layer graphs (random_layer_graph.hpp)
//   and a zoo;
// - the definition: rank(dPhi(theta)) over Q of the dense dPhi built from the enumerated paths
//   (dPhi[p, k] = sum over the edges of p carrying k of the product of the other weights) at
//   small integer theta with many zeros, by exact integer elimination; check_rank_theorem's
//   status follows from it (verified exactly when rank(dPhi) = d - h_sym).

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <vector>

#include "pathlift/counting.hpp"
#include "pathlift/error.hpp"
#include "pathlift/layers.hpp"
#include "pathlift/lifting.hpp"
#include "pathlift/model.hpp"
#include "pathlift/paths.hpp"
#include "pathlift/rank.hpp"
#include "pathlift/symmetry.hpp"
#include "reference.hpp"
#include "src/core/random.hpp"
#include "tests/layer_zoo.hpp"
#include "tests/layers_builder.hpp"
#include "tests/random_layer_graph.hpp"

namespace pathlift {
namespace {

using testing::GraphBuilder;
using testing::Wide;

// ---------------------------------------------------------------------------------------------
// Exact ranks of integer matrices.

Wide wide_abs(Wide x) {
  return x < 0 ? -x : x;
}

Wide wide_gcd(Wide a, Wide b) {
  a = wide_abs(a);
  b = wide_abs(b);
  while (b != 0) {
    const Wide t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/// Exact rank over Q by integer elimination whose rows are divided by their gcd after each
/// step (every step an invertible row operation over Q): entries stay small where Bareiss's
/// minors overflow 128 bits. nullopt on an overflow all the same.
std::optional<Index> gcd_rank(const std::vector<std::vector<std::int64_t>>& in) {
  std::vector<std::vector<Wide>> a;
  for (const auto& row : in) {
    a.emplace_back(row.begin(), row.end());
  }
  const std::size_t rows = a.size();
  const std::size_t cols = rows == 0 ? 0 : a[0].size();
  std::size_t rank = 0;
  for (std::size_t c = 0; c < cols && rank < rows; ++c) {
    if (!testing::bring_pivot_up(a, rank, c)) {
      continue;
    }
    for (std::size_t i = rank + 1; i < rows; ++i) {
      if (a[i][c] == 0) {
        continue;
      }
      const Wide g = wide_gcd(a[rank][c], a[i][c]);
      const Wide mi = a[rank][c] / g;
      const Wide mr = a[i][c] / g;
      Wide row_gcd = 0;
      for (std::size_t j = c; j < cols; ++j) {
        Wide x = 0;
        Wide y = 0;
        Wide z = 0;
        if (__builtin_mul_overflow(mi, a[i][j], &x) || __builtin_mul_overflow(mr, a[rank][j], &y) ||
            __builtin_sub_overflow(x, y, &z)) {
          return std::nullopt;
        }
        a[i][j] = z;
        row_gcd = wide_gcd(row_gcd, z);
      }
      if (row_gcd > 1) {
        for (std::size_t j = c; j < cols; ++j) {
          a[i][j] /= row_gcd;
        }
      }
    }
    ++rank;
  }
  return static_cast<Index>(rank);
}

/// Exact rank over Q: testing::bareiss_rank, or gcd_rank where Bareiss overflows or the matrix
/// is large (Bareiss updates every row at every pivot; gcd_rank skips the rows with a zero in
/// the pivot's column). Zero and repeated rows are dropped first (they change no rank).
std::optional<Index> exact_rank(std::vector<std::vector<std::int64_t>> rows) {
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  rows.erase(std::remove_if(rows.begin(), rows.end(),
                            [](const auto& r) {
                              return std::all_of(r.begin(), r.end(),
                                                 [](std::int64_t x) { return x == 0; });
                            }),
             rows.end());
  if (rows.size() * (rows.empty() ? 0 : rows[0].size()) <= 20000) {
    if (const auto r = testing::bareiss_rank(rows)) {
      return r;
    }
  }
  return gcd_rank(rows);
}

// ---------------------------------------------------------------------------------------------
// dPhi by its definition.

/// The rows of dPhi(theta) (theta integer-valued, each path an edge list): dPhi[p, k] = sum over
/// the edges of p carrying k of the product of the other edges' weights. Every such product
/// holds every fixed edge of p, so a path through a fixed weight 0 has a zero row and the
/// other fixed weights multiply the whole row by one non-zero number, which changes no rank:
/// they are left out, and the rows are integers (rank-equivalent to dPhi's).
std::vector<std::vector<std::int64_t>> jacobian_rows(
    const Network& net, const std::vector<double>& theta,
    const std::vector<std::vector<EdgeId>>& paths) {
  std::vector<std::vector<std::int64_t>> rows;
  for (const auto& p : paths) {
    std::vector<std::int64_t> row(static_cast<std::size_t>(net.num_params()), 0);
    bool zero_fixed = false;
    std::vector<Index> params;  // the parameter of each parameter edge of p
    for (const EdgeId e : p) {
      const Index k = net.edge_param(e);
      if (k >= 0) {
        params.push_back(k);
      } else if (net.fixed_weight(e) == 0.0) {
        zero_fixed = true;
      }
    }
    if (!zero_fixed) {
      for (std::size_t i = 0; i < params.size(); ++i) {
        std::int64_t others = 1;
        for (std::size_t j = 0; j < params.size(); ++j) {
          if (j != i) {
            others *= static_cast<std::int64_t>(theta[static_cast<std::size_t>(params[j])]);
          }
        }
        row[static_cast<std::size_t>(params[i])] += others;
      }
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

/// The paths of net by the reference walk (reference.hpp), as edge lists.
std::vector<std::vector<EdgeId>> reference_paths(const Network& net) {
  std::vector<std::vector<EdgeId>> out;
  for (auto& p : testing::ref_paths(net)) {
    out.push_back(std::move(p.edges));
  }
  return out;
}

/// The paths of net by enumerate_paths (for the larger unrolled layer graphs).
std::vector<std::vector<EdgeId>> enumerated_paths(const Network& net) {
  const PathSet ps = enumerate_paths(net);
  std::vector<std::vector<EdgeId>> out;
  for (Index p = 0; p < ps.size(); ++p) {
    const auto edges = ps.path(p);
    out.emplace_back(edges.begin(), edges.end());
  }
  return out;
}

/// rank(B) over Q, B[p, k] = the number of edges of p carrying k.
std::optional<Index> exact_skeleton_rank(const Network& net,
                                         const std::vector<std::vector<EdgeId>>& paths) {
  std::vector<std::vector<std::int64_t>> rows;
  for (const auto& p : paths) {
    std::vector<std::int64_t> row(static_cast<std::size_t>(net.num_params()), 0);
    for (const EdgeId e : p) {
      if (net.edge_param(e) >= 0) {
        row[static_cast<std::size_t>(net.edge_param(e))] += 1;
      }
    }
    rows.push_back(std::move(row));
  }
  return exact_rank(rows);
}

// ---------------------------------------------------------------------------------------------
// Random parameters.

/// theta with entries drawn from `values`.
std::vector<double> integer_theta(Index d, detail::SplitMix64& rng,
                                  const std::vector<double>& values) {
  std::vector<double> theta(static_cast<std::size_t>(d));
  for (double& x : theta) {
    x = values[rng.below(values.size())];
  }
  return theta;
}

const std::vector<double> k_nonzero = {-2, -1, 1, 2};
const std::vector<double> k_small = {-2, -1, 0, 1, 2};
const std::vector<double> k_sparse = {-2, -1, 0, 0, 0, 1, 2};

/// A copy of `net` whose edges carry parameters from a random map (varied by the seed): some
/// edges fixed (a random weight, 0 in some networks), the others sharing d < edges parameters
/// (some of which no edge may carry).
Network with_shared_parameters(const Network& net, std::uint64_t seed) {
  const Index variant = static_cast<Index>(seed % 4);
  return testing::with_random_parameters(
      net, {.rng_seed = seed * 31 + 5, .d_num = variant == 1 ? 1 : 2, .zero_fixed = variant == 2});
}

// ---------------------------------------------------------------------------------------------
// Layer graphs.

/// The parameters of g that the bias blocks hold (bias = true: linear, conv, conv_transpose,
/// batch norm) or the weight blocks of the layers of `kinds` (bias = false).
std::vector<Index> block_parameters(const LayerGraph& g, bool bias,
                                    const std::vector<LayerKind>& kinds = {}) {
  const auto shapes = layer_shapes(g);
  std::set<Index> out;
  for (std::size_t l = 1; l < g.layers.size(); ++l) {
    const Layer& ly = g.layers[l];
    const auto [w, b] = testing::random_graph_detail::block_sizes(g, shapes, l);
    if (bias) {
      for (Index k = 0; k < b; ++k) {
        out.insert(ly.bias_offset + k);
      }
    } else if (std::find(kinds.begin(), kinds.end(), ly.kind) != kinds.end()) {
      for (Index k = 0; k < w; ++k) {
        out.insert(ly.weight_offset + k);
      }
    }
  }
  return {out.begin(), out.end()};
}

std::vector<Index> bias_parameters(const LayerGraph& g) {
  return block_parameters(g, true);
}

/// The weights of the convolutions (which the layer graph's zero pattern may take at 0).
std::vector<Index> conv_weight_parameters(const LayerGraph& g) {
  return block_parameters(g, false, {LayerKind::conv, LayerKind::conv_transpose});
}

/// The weights of the linear layers and the batch norms' a.
std::vector<Index> other_weight_parameters(const LayerGraph& g) {
  return block_parameters(g, false, {LayerKind::linear, LayerKind::batch_norm});
}

/// Border windows that read only padding (padding 2, kernel 2: the bias alone), a strided conv
/// with a large padding, and a transposed convolution with padding 0 and stride 3 whose
/// outputs between the taps no input reaches (the bias alone).
LayerGraph zoo_padding_only() {
  GraphBuilder b({2, 5, 4});
  Index x = b.act("r1", b.conv("c1", 0, 3, {2, 2}, {1, 1}, {2, 2}));
  x = b.act("r2", b.conv("c2", x, 2, {3, 1}, {2, 2}, {3, 1}, {1, 1}, 1, true));
  x = b.conv_transpose("t", x, 2, {1, 2}, {3, 3}, {}, {}, {}, 2, true);
  return b.graph({b.linear("fc", b.op(LayerKind::flatten, "flat", {b.act("r3", x)}), 2)});
}

/// The issue's case: Conv1d(1 -> 2, kernel 2, bias) -> ReLU -> flatten -> Linear(4 -> 1, bias)
/// on {1, 3}; theta = conv weight (2, 1, 2), conv bias (2), linear weight (4), linear bias (1).
LayerGraph issue_graph() {
  GraphBuilder b({1, 3});
  const Index c = b.conv("conv", 0, 2, {2});
  const Index f = b.op(LayerKind::flatten, "flat", {b.act("relu", c)});
  return b.graph({b.linear("fc", f, 1)});
}

/// The zoo of tests/layer_zoo.hpp (every layer kind and option), and a few more: a layer
/// applied twice in sequence, convolutions whose border windows read only padding (a bias
/// alone), a transposed convolution whose outputs no input reaches (a bias alone), the issue's
/// minimal case.
std::vector<LayerGraph> zoo() {
  std::vector<LayerGraph> z = testing::layer_zoo();
  // The zoo's wide linear graph (the only one whose input is flat and 17,000 wide), narrower.
  const std::vector<Index> wide = testing::zoo_wide_linear().input_shape;
  const auto it = std::ranges::find(z, wide, &LayerGraph::input_shape);
  if (it == z.end()) {
    throw std::logic_error("layer_symmetry_test: the zoo has no wide linear graph");
  }
  *it = testing::zoo_wide_linear(500);
  z.push_back(testing::zoo_twice_in_sequence());
  z.push_back(zoo_padding_only());
  z.push_back(issue_graph());
  return z;
}

/// Random layer graphs: for h_sym and the hidden nodes (cheap: 2000 graphs take about 1 s), and
/// for the zero patterns (8 thetas each, dPhi built for the small ones).
constexpr std::uint64_t k_random_graphs = 2000;
constexpr std::uint64_t k_zero_pattern_graphs = 800;

/// Counts of what the random graphs held, for the coverage test and the report.
struct Coverage {
  std::map<std::string, int> seen;
  void add(const std::string& what) { ++seen[what]; }
};

Coverage coverage_of(std::uint64_t graphs) {
  Coverage c;
  for (std::uint64_t seed = 0; seed < graphs; ++seed) {
    const LayerGraph g = testing::random_layer_graph(seed);
    const auto shapes = layer_shapes(g);
    std::set<std::pair<Index, Index>> blocks;
    bool shared = false;
    for (std::size_t l = 1; l < g.layers.size(); ++l) {
      const Layer& ly = g.layers[l];
      const auto& in = shapes[static_cast<std::size_t>(ly.inputs[0])];
      const std::string kind = to_string(ly.kind);
      c.add(kind);
      if (ly.weight_offset >= 0 && !blocks.emplace(ly.weight_offset, ly.bias_offset).second) {
        shared = true;
      }
      if (ly.kind == LayerKind::conv || ly.kind == LayerKind::conv_transpose) {
        c.add(fmt::format("{} {}-D", kind, in.size() - 1));
        c.add(fmt::format("{} bias {}", kind, ly.bias_offset >= 0));
        c.add(fmt::format("{} groups>1 {}", kind, ly.groups > 1));
        for (std::size_t i = 0; i < ly.stride.size(); ++i) {
          c.add(fmt::format("{} stride {}", kind, ly.stride[i]));
        }
        for (const Index p : ly.padding) {
          c.add(fmt::format("{} padding {}", kind, std::min<Index>(p, 3)));
        }
        for (const Index dl : ly.dilation) {
          c.add(fmt::format("{} dilation {}", kind, dl));
        }
        for (const Index op : ly.output_padding) {
          c.add(fmt::format("{} output_padding {}", kind, op));
        }
      }
      if (ly.kind == LayerKind::conv) {
        // A border output whose window reads only padding.
        for (std::size_t i = 0; i < ly.kernel.size(); ++i) {
          const Index pad = ly.padding.empty() ? 0 : ly.padding[i];
          const Index dil = ly.dilation.empty() ? 1 : ly.dilation[i];
          if (pad >= dil * (ly.kernel[i] - 1) + 1) {
            c.add("conv window in the padding only");
          }
        }
      }
      if (ly.kind == LayerKind::max_pool || ly.kind == LayerKind::avg_pool) {
        c.add(fmt::format("{} ceil_mode {}", kind, ly.ceil_mode));
        c.add(fmt::format(
            "{} padded {}", kind,
            std::any_of(ly.padding.begin(), ly.padding.end(), [](Index p) { return p > 0; })));
        if (ly.kind == LayerKind::avg_pool) {
          c.add(fmt::format("avg_pool count_include_pad {}", ly.count_include_pad));
        }
      }
      if (ly.kind == LayerKind::batch_norm) {
        c.add(fmt::format("batch_norm bias {}", ly.bias_offset >= 0));
        c.add(fmt::format("batch_norm on {}-D", in.size()));
      }
      if (ly.kind == LayerKind::linear) {
        c.add(fmt::format("linear bias {}", ly.bias_offset >= 0));
      }
      if (ly.kind == LayerKind::activation) {
        c.add(fmt::format("activation {}", ly.activation.name().substr(0, 5)));
        const Layer& src = g.layers[static_cast<std::size_t>(ly.inputs[0])];
        if (src.kind == LayerKind::activation) {
          c.add("activation after activation");
        }
        if (src.kind == LayerKind::concat &&
            std::all_of(src.inputs.begin(), src.inputs.end(), [&](Index i) {
              return g.layers[static_cast<std::size_t>(i)].kind == LayerKind::activation;
            })) {
          c.add("relu after a concat of activations");
        }
      }
      if (ly.kind == LayerKind::gather) {
        c.add(fmt::format("gather axis {}", std::min<Index>(ly.axis, 1)));
        std::vector<Index> sorted = ly.indices;
        std::sort(sorted.begin(), sorted.end());
        if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
          c.add(fmt::format("gather axis {} with repeats", std::min<Index>(ly.axis, 1)));
        }
      }
      if (ly.kind == LayerKind::scale && ly.factor == 0.0) {
        c.add("scale by 0");
      }
      if (ly.kind == LayerKind::concat) {
        c.add(fmt::format("concat axis {}", std::min<Index>(ly.axis, 1)));
      }
    }
    c.add(fmt::format("input {}-D", g.input_shape.size()));
    c.add(g.outputs.size() > 1 ? "several outputs" : "one output");
    c.add(shared ? "shared layers" : "no shared layer");
    if (g.num_params >
        static_cast<Index>(bias_parameters(g).size() + conv_weight_parameters(g).size() +
                           other_weight_parameters(g).size())) {
      c.add("parameters no layer holds");
    }
  }
  return c;
}

TEST(RandomLayerGraphs, CoverEveryLayerKindAndOption) {
  const Coverage c = coverage_of(400);
  for (const auto& [what, n] : c.seen) {
    std::cout << fmt::format("  {:<40} {}\n", what, n);
  }
  for (const std::string what : {"conv",
                                 "conv_transpose",
                                 "max_pool",
                                 "avg_pool",
                                 "adaptive_avg_pool",
                                 "batch_norm",
                                 "activation",
                                 "add",
                                 "sub",
                                 "concat",
                                 "flatten",
                                 "gather",
                                 "scale",
                                 "linear",
                                 "conv 1-D",
                                 "conv 2-D",
                                 "conv bias true",
                                 "conv bias false",
                                 "conv groups>1 true",
                                 "conv stride 2",
                                 "conv padding 1",
                                 "conv padding 3",
                                 "conv dilation 2",
                                 "conv window in the padding only",
                                 "conv_transpose 1-D",
                                 "conv_transpose 2-D",
                                 "conv_transpose bias true",
                                 "conv_transpose bias false",
                                 "conv_transpose groups>1 true",
                                 "conv_transpose stride 2",
                                 "conv_transpose padding 1",
                                 "conv_transpose dilation 2",
                                 "conv_transpose output_padding 1",
                                 "max_pool ceil_mode true",
                                 "max_pool padded true",
                                 "avg_pool ceil_mode true",
                                 "avg_pool padded true",
                                 "avg_pool count_include_pad false",
                                 "batch_norm bias true",
                                 "batch_norm bias false",
                                 "batch_norm on 1-D",
                                 "linear bias true",
                                 "linear bias false",
                                 "activation relu",
                                 "activation leaky",
                                 "activation ident",
                                 "activation after activation",
                                 "relu after a concat of activations",
                                 "gather axis 0",
                                 "gather axis 1",
                                 "gather axis 0 with repeats",
                                 "gather axis 1 with repeats",
                                 "scale by 0",
                                 "input 1-D",
                                 "input 2-D",
                                 "input 3-D",
                                 "several outputs",
                                 "shared layers",
                                 "parameters no layer holds"}) {
    EXPECT_GT(c.seen.count(what) == 0 ? 0 : c.seen.at(what), 0) << what;
  }
  // Deterministic, and small.
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    const LayerGraph g = testing::random_layer_graph(seed);
    EXPECT_EQ(g, testing::random_layer_graph(seed));
    EXPECT_LE(unrolled_size(g).edges, 5000);
  }
}

TEST(LayerSymmetry, HsymAndHiddenNodesEqualTheUnrolledNetwork) {
  std::vector<LayerGraph> graphs = zoo();
  for (std::uint64_t seed = 0; seed < k_random_graphs; ++seed) {
    graphs.push_back(testing::random_layer_graph(seed));
  }
  const std::size_t zoo_size = zoo().size();
  Index with_constraints = 0;
  Index with_unused = 0;
  for (std::size_t i = 0; i < graphs.size(); ++i) {
    const LayerGraph& g = graphs[i];
    SCOPED_TRACE(i < zoo_size ? fmt::format("zoo graph {}", i)
                              : fmt::format("random_layer_graph({})", i - zoo_size));
    const Network net = unroll(g);
    const SymmetryDimension layer = rescaling_symmetry_dimension(g);
    const SymmetryDimension dag = rescaling_symmetry_dimension(net);
    EXPECT_EQ(layer.h_sym, dag.h_sym);
    EXPECT_EQ(layer.unused_params, dag.unused_params);
    EXPECT_EQ(rescaling_symmetry_dimension(Model(g)).h_sym, dag.h_sym);
    EXPECT_EQ(unrolled_hidden_nodes(g), net.num_hidden());
    with_constraints += layer.constraint_rank > 0 ? 1 : 0;
    with_unused += layer.unused_params > 0 ? 1 : 0;
    if (::testing::Test::HasFailure()) {
      break;  // one failing graph is enough to read
    }
  }
  std::cout << fmt::format(
      "{} graphs; {} with constraints left after the merges, {} with unused "
      "parameters\n",
      graphs.size(), with_constraints, with_unused);
}

/// Counts of the zero-pattern comparisons on layer graphs.
struct LayerZeroCounts {
  Index compared = 0;
  Index zero_biases = 0;
  Index zero_weights = 0;
  Index single = 0;
  Index brute_force = 0;
  Index not_exact = 0;
  Index refused = 0;
  Index refused_documented = 0;
  std::map<std::string, Index> statuses;  // of check_rank_theorem on the layer graph
};

/// The unrolled DAG's zero-pattern rank at theta against the definition (where dPhi is small
/// enough to build), then the layer graph's, when it answers, against the DAG's.
void compare_zero_pattern(const LayerGraph& g, const Network& net, const std::vector<double>& theta,
                          bool zero_weights, LayerZeroCounts& counts) {
  const ZeroPatternRank dag = jacobian_rank_by_zero_pattern(net, theta);
  const Count paths = count_paths_total(net);
  std::optional<Index> exact;
  if (dag.zero_params > 0 && g.num_params <= 150 && paths.exact() && paths.value() <= 4000) {
    exact = exact_rank(jacobian_rows(net, theta, enumerated_paths(net)));
    if (exact) {
      ++counts.brute_force;
      EXPECT_EQ(dag.rank, *exact) << "the DAG's zero pattern against the definition";
    } else {
      ++counts.not_exact;
    }
  }
  if (exact) {
    // The rank check on the layer graph without enumeration: its status follows from the rank.
    const Index expected = g.num_params - rescaling_symmetry_dimension(g).h_sym;
    const RankReport rep = check_rank_theorem(Model(g), theta, {}, {}, RankRoute::path_free);
    EXPECT_EQ(rep.expected, expected);
    ASSERT_TRUE(rep.rank_J_exact.has_value());
    EXPECT_EQ(rep.rank_J_exact->rank(), exact) << rep.explanation;
    EXPECT_EQ(rep.status, *exact == expected ? RankStatus::verified : RankStatus::theta_in_null_set)
        << rep.explanation;
    counts.statuses[std::string(to_string(rep.status))] += 1;
  }
  const std::optional<ZeroPatternRank> layer = jacobian_rank_by_zero_pattern(g, theta);
  if (!layer) {
    ++counts.refused;  // shared blocks, a scale by 0, zeros that could cut an entry off
    return;
  }
  ++counts.compared;
  counts.zero_biases += !zero_weights && layer->zero_params > 0 ? 1 : 0;
  counts.zero_weights += zero_weights && layer->zero_params > 0 ? 1 : 0;
  counts.single += layer->single_zero_params > 0 ? 1 : 0;
  EXPECT_EQ(layer->rank, dag.rank);
  EXPECT_EQ(layer->h_sym_nonzero, dag.h_sym_nonzero);
  EXPECT_EQ(layer->zero_params, dag.zero_params);
  EXPECT_EQ(layer->single_zero_params, dag.single_zero_params);
  if (exact) {
    EXPECT_EQ(layer->rank, *exact) << "the layer graph's zero pattern against the definition";
  }
}

/// Sets each of `params` to 0 with probability 1 / one_in.
void zero_some(std::vector<double>& theta, const std::vector<Index>& params,
               detail::SplitMix64& rng, std::uint64_t one_in) {
  for (const Index k : params) {
    if (rng.below(one_in) == 0) {
      theta[static_cast<std::size_t>(k)] = 0.0;
    }
  }
}

/// The weights of one output feature of one linear layer of g (empty when g has none).
std::vector<Index> linear_row(const LayerGraph& g, detail::SplitMix64& rng) {
  const auto shapes = layer_shapes(g);
  std::vector<std::size_t> linear;
  for (std::size_t l = 1; l < g.layers.size(); ++l) {
    if (g.layers[l].kind == LayerKind::linear) {
      linear.push_back(l);
    }
  }
  if (linear.empty()) {
    return {};
  }
  const Layer& ly = g.layers[linear[rng.below(linear.size())]];
  const Index f = shapes[static_cast<std::size_t>(ly.inputs[0])][0];
  const Index o = static_cast<Index>(rng.below(static_cast<std::uint64_t>(ly.out_features)));
  std::vector<Index> row;
  for (Index j = 0; j < f; ++j) {
    row.push_back(ly.weight_offset + o * f + j);
  }
  return row;
}

TEST(LayerSymmetry, ZeroPatternRankEqualsTheUnrolledNetworkAndTheDefinition) {
  LayerZeroCounts counts;
  const std::vector<LayerGraph> the_zoo = zoo();
  for (std::uint64_t seed = 0; seed < the_zoo.size() + k_zero_pattern_graphs; ++seed) {
    const bool in_zoo = seed < the_zoo.size();
    SCOPED_TRACE(in_zoo ? fmt::format("zoo graph {}", seed)
                        : fmt::format("random_layer_graph({})", seed - the_zoo.size()));
    const LayerGraph g =
        in_zoo ? the_zoo[seed] : testing::random_layer_graph(seed - the_zoo.size());
    const Network net = unroll(g);
    const std::vector<Index> biases = bias_parameters(g);
    const std::vector<Index> conv = conv_weight_parameters(g);
    const std::vector<Index> linear = block_parameters(g, false, {LayerKind::linear});
    const std::vector<Index> bn = block_parameters(g, false, {LayerKind::batch_norm});
    detail::SplitMix64 rng(seed + 17);
    for (int round = 0; round < 8; ++round) {
      SCOPED_TRACE(fmt::format("round {}", round));
      std::vector<double> theta = integer_theta(g.num_params, rng, k_nonzero);
      switch (round) {
        case 0:  // no zero
          break;
        case 1:  // some biases
          zero_some(theta, biases, rng, 2);
          break;
        case 2:  // every bias
          zero_some(theta, biases, rng, 1);
          break;
        case 3:  // one conv weight, some biases
          if (!conv.empty()) {
            theta[static_cast<std::size_t>(conv[rng.below(conv.size())])] = 0.0;
          }
          zero_some(theta, biases, rng, 2);
          break;
        case 4:  // a quarter of the conv weights
          zero_some(theta, conv, rng, 4);
          break;
        case 5:  // half of the conv weights and every bias
          zero_some(theta, conv, rng, 2);
          zero_some(theta, biases, rng, 1);
          break;
        case 6:  // a quarter of the linear weights, some biases
          zero_some(theta, linear, rng, 4);
          zero_some(theta, biases, rng, 3);
          break;
        default:  // every weight of one output of a linear layer (the output cut off), a
                  // tenth of every weight
          zero_some(theta, linear_row(g, rng), rng, 1);
          zero_some(theta, conv, rng, 10);
          zero_some(theta, linear, rng, 10);
          break;
      }
      compare_zero_pattern(g, net, theta, round >= 3, counts);
    }
    // What the layer graph's function documents as refused (symmetry.hpp): a zero of a batch
    // norm's a; any zero with a block shared between layers or a scale by 0.
    bool shared = false;
    bool scale0 = false;
    std::set<std::pair<Index, Index>> blocks;
    for (std::size_t l = 1; l < g.layers.size(); ++l) {
      const Layer& ly = g.layers[l];
      shared = shared ||
               (ly.weight_offset >= 0 && !blocks.emplace(ly.weight_offset, ly.bias_offset).second);
      scale0 = scale0 || (ly.kind == LayerKind::scale && ly.factor == 0.0);
    }
    if (!bn.empty() || ((shared || scale0) && !biases.empty())) {
      std::vector<double> theta = integer_theta(g.num_params, rng, k_nonzero);
      const std::vector<Index>& from = bn.empty() ? biases : bn;
      theta[static_cast<std::size_t>(from[rng.below(from.size())])] = 0.0;
      EXPECT_FALSE(jacobian_rank_by_zero_pattern(g, theta).has_value());
      ++counts.refused_documented;
    }
    if (::testing::Test::HasFailure()) {
      break;  // one failing graph is enough to read
    }
  }
  std::cout << fmt::format(
      "{} (graph, theta) compared with the unrolled DAG ({} with zero biases only, {} with zero "
      "weights, {} with a zero crossed alone); {} against the definition ({} not exact: "
      "overflow); {} refused; {} refused as documented (a batch norm's a at 0, shared blocks, "
      "a scale by 0)\n",
      counts.compared, counts.zero_biases, counts.zero_weights, counts.single, counts.brute_force,
      counts.not_exact, counts.refused, counts.refused_documented);
  for (const auto& [status, n] : counts.statuses) {
    std::cout << fmt::format("  layer graph, path_free: {:<20} {}\n", status, n);
  }
  EXPECT_GT(counts.statuses["theta_in_null_set"], 300);
  EXPECT_GT(counts.compared, 900);
  EXPECT_GT(counts.zero_biases, 300);
  EXPECT_GT(counts.zero_weights, 100);
  EXPECT_GT(counts.brute_force, 500);
  EXPECT_EQ(counts.not_exact, 0);
}

/// Checks jacobian_rank_by_zero_pattern and check_rank_theorem on net at theta against the
/// exact rank of the dense dPhi; returns the status seen on the enumerated route (or nullopt
/// when the skeleton cannot be built).
struct RankCounts {
  int checked = 0;
  int with_zeros = 0;
  int no_skeleton = 0;
  std::map<std::string, int> statuses;
};

void check_exact_rank(const Network& net, const std::vector<double>& theta,
                      const std::vector<std::vector<EdgeId>>& paths, RankCounts& counts) {
  const auto rows = jacobian_rows(net, theta, paths);
  const auto exact = exact_rank(rows);
  ASSERT_TRUE(exact.has_value()) << "overflow in the exact rank";
  // The two exact eliminations agree (a check of gcd_rank, which the large cases use).
  const auto bareiss = testing::bareiss_rank(rows);
  if (bareiss) {
    EXPECT_EQ(gcd_rank(rows), bareiss);
  }
  ++counts.checked;
  counts.with_zeros += std::count(theta.begin(), theta.end(), 0.0) > 0 ? 1 : 0;
  const ZeroPatternRank z = jacobian_rank_by_zero_pattern(net, theta);
  EXPECT_EQ(z.rank, *exact);
  const Index h_sym = rescaling_symmetry_dimension(net).h_sym;
  const Index expected = net.num_params() - h_sym;
  ASSERT_LE(*exact, expected) << "rank(dPhi) above d - h_sym";
  // rank(B) = d - h_sym over Q (the symmetry theorem).
  EXPECT_EQ(exact_skeleton_rank(net, paths), std::optional<Index>(expected));
  const auto expect_status = [&](const RankReport& rep, const char* route) {
    SCOPED_TRACE(route);
    EXPECT_EQ(rep.h_sym, h_sym);
    EXPECT_EQ(rep.expected, expected);
    ASSERT_TRUE(rep.rank_J_exact.has_value());
    EXPECT_EQ(rep.rank_J_exact->rank(), std::optional<Index>(*exact)) << rep.explanation;
    if (*exact == expected) {
      EXPECT_EQ(rep.status, RankStatus::verified) << rep.explanation;
    } else {
      EXPECT_EQ(rep.status, RankStatus::theta_in_null_set) << rep.explanation;
    }
    counts.statuses[fmt::format("{} {}", route, to_string(rep.status))] += 1;
  };
  expect_status(check_rank_theorem(net, theta, {}, {}, RankRoute::path_free), "path_free");
  try {
    (void)skeleton(net);
  } catch (const NetworkError&) {
    ++counts.no_skeleton;  // a parameter twice on a path: B is not a pattern
    return;
  }
  expect_status(check_rank_theorem(net, theta), "enumerate");
}

void print_counts(const char* what, const RankCounts& c) {
  std::cout << fmt::format("{}: {} (network, theta) checked, {} with zeros, {} without skeleton\n",
                           what, c.checked, c.with_zeros, c.no_skeleton);
  for (const auto& [s, n] : c.statuses) {
    std::cout << fmt::format("  {:<32} {}\n", s, n);
  }
}

TEST(ZeroPatternRank, SharedParametersEqualTheExactRankOfDphi) {
  RankCounts counts;
  int networks = 0;
  for (std::uint64_t seed = 1; seed <= 1200; ++seed) {
    SCOPED_TRACE(fmt::format("seed {}", seed));
    const Network net = with_shared_parameters(testing::random_network(seed), seed);
    const auto paths = reference_paths(net);
    if (paths.empty() || net.one_parameter_per_edge()) {
      continue;
    }
    ++networks;
    detail::SplitMix64 rng(seed * 3 + 1);
    for (const auto* values : {&k_nonzero, &k_small, &k_sparse}) {
      check_exact_rank(net, integer_theta(net.num_params(), rng, *values), paths, counts);
    }
    if (::testing::Test::HasFailure()) {
      break;
    }
  }
  print_counts("shared parameters", counts);
  EXPECT_GE(networks, 1000);
  EXPECT_GT(counts.statuses["path_free theta_in_null_set"], 400);
  EXPECT_GT(counts.statuses["path_free verified"], 400);
  EXPECT_GT(counts.statuses["enumerate theta_in_null_set"], 100);
  EXPECT_GT(counts.statuses["enumerate verified"], 400);
}

TEST(ZeroPatternRank, OneParameterPerEdgeEqualsTheExactRankOfDphi) {
  int checked = 0;
  int below = 0;
  for (std::uint64_t seed = 1; seed <= 600; ++seed) {
    SCOPED_TRACE(fmt::format("seed {}", seed));
    const Network net = testing::random_network(seed);
    const auto paths = reference_paths(net);
    if (paths.empty()) {
      continue;
    }
    detail::SplitMix64 rng(seed * 5 + 2);
    for (const auto* values : {&k_small, &k_sparse}) {
      const std::vector<double> theta = integer_theta(net.num_params(), rng, *values);
      const auto exact = exact_rank(jacobian_rows(net, theta, paths));
      ASSERT_TRUE(exact.has_value());
      EXPECT_EQ(jacobian_rank_by_zero_pattern(net, theta).rank, *exact);
      const Index expected = net.num_params() - net.num_hidden();
      ASSERT_LE(*exact, expected);
      const RankReport rep = check_rank_theorem(net, theta);
      EXPECT_EQ(rep.status,
                *exact == expected ? RankStatus::verified : RankStatus::theta_in_null_set)
          << rep.explanation;
      ++checked;
      below += *exact < expected ? 1 : 0;
    }
    if (::testing::Test::HasFailure()) {
      break;
    }
  }
  std::cout << fmt::format("one parameter per edge: {} checked, {} below d - h\n", checked, below);
  EXPECT_GT(checked, 1000);
  EXPECT_GT(below, 300);
}

TEST(ZeroPatternRank, TheIssuesConv1dCase) {
  const LayerGraph g = issue_graph();
  ASSERT_EQ(g.num_params, 11);
  const std::vector<double> theta = {1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1};
  const std::vector<double> ones(11, 1.0);
  const Network net = unroll(g);
  EXPECT_EQ(rescaling_symmetry_dimension(g).h_sym, 2);
  EXPECT_EQ(rescaling_symmetry_dimension(net).h_sym, 2);
  // The definition: rank 7 at theta, 9 = d - h_sym at ones.
  const auto paths = enumerated_paths(net);
  EXPECT_EQ(paths, reference_paths(net));
  EXPECT_EQ(exact_rank(jacobian_rows(net, theta, paths)), std::optional<Index>(7));
  EXPECT_EQ(exact_rank(jacobian_rows(net, ones, paths)), std::optional<Index>(9));
  EXPECT_EQ(jacobian_rank_by_zero_pattern(net, theta).rank, 7);
  EXPECT_FALSE(jacobian_rank_by_zero_pattern(g, theta).has_value());  // linear weights at 0
  EXPECT_EQ(jacobian_rank_by_zero_pattern(g, ones)->rank, 9);
  for (const RankRoute route : {RankRoute::path_free, RankRoute::enumerate}) {
    SCOPED_TRACE(route == RankRoute::path_free ? "path_free" : "enumerate");
    const RankReport rep = check_rank_theorem(Model(g), theta, {}, {}, route);
    EXPECT_EQ(rep.status, RankStatus::theta_in_null_set) << rep.explanation;
    EXPECT_EQ(rep.expected, 9);
    EXPECT_EQ(rep.h_sym, 2);
    ASSERT_TRUE(rep.rank_J_exact.has_value());
    EXPECT_EQ(rep.rank_J_exact->rank(), std::optional<Index>(7)) << rep.explanation;
    const RankReport all = check_rank_theorem(Model(g), ones, {}, {}, route);
    EXPECT_EQ(all.status, RankStatus::verified) << all.explanation;
    ASSERT_TRUE(all.rank_J_exact.has_value());
    EXPECT_EQ(all.rank_J_exact->rank(), std::optional<Index>(9));
  }
}

}  // namespace
}  // namespace pathlift
