// Position classes of the path-norm pass (src/layer_dp/detail/layer_classes.hpp): positions put
// in one class hold equal sums in the full pass, and the pass computed on the classes gives
// the full pass's outputs, on random layer graphs of every kind and on CNNs whose borders and
// interiors differ.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "pathlift/layers.hpp"
#include "pathlift/options.hpp"
#include "src/layer_dp/detail/layer_classes.hpp"
#include "src/layer_dp/detail/layer_dp_engine.hpp"
#include "tests/layer_zoo.hpp"
#include "tests/layers_builder.hpp"
#include "tests/random_layer_graph.hpp"

namespace pathlift {
namespace {

using detail::Classes;
using detail::forward_classes;
using detail::forward_pass;
using detail::LayerClasses;
using detail::LayerPlan;
using detail::Mode;
using detail::TensorPtr;
using detail::WeightSpec;

std::vector<double> random_theta(Index d, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::vector<double> t(static_cast<std::size_t>(d));
  for (double& x : t) {
    x = normal(rng);
  }
  return t;
}

double entry(const detail::Tensor& t, Index i) {
  return std::ldexp(t.value[static_cast<std::size_t>(i)], static_cast<int>(t.exp));
}

/// Strided, dilated, grouped and 1x1 convolutions, max and average pools (padding, ceil_mode,
/// count_include_pad), an adaptive pool, a residual add, a concat along the channels and a
/// sub on a 3 x 61 x 47 input,
/// ending in a fully convolutional output (kept on classes to the end) and a linear head.
LayerGraph border_cnn() {
  testing::GraphBuilder b({3, 61, 47});
  Index x = b.conv("stem", 0, 5, {5, 3}, {2, 1}, {2, 1});
  x = b.act("r0", b.batch_norm("bn0", x));
  x = b.pool(LayerKind::max_pool, "mp", x, {3, 3}, {2, 2}, {1, 1}, {}, true, true);
  Index y = b.conv("dil", x, 5, {3, 3}, {1, 1}, {2, 2}, {2, 2}, 1, false);
  y = b.conv("grp", b.act("r1", y), 5, {3, 3}, {1, 1}, {1, 1}, {}, 5);
  x = b.act("r2", b.op(LayerKind::add, "add", {x, y}));
  const Index cat =
      b.op(LayerKind::concat, "cat", {x, b.conv("side", y, 2, {1, 3}, {1, 1}, {0, 1})});
  const Index a = b.pool(LayerKind::avg_pool, "ap", cat, {3, 2}, {1, 2}, {1, 1}, {}, false, true);
  const Index s = b.op(LayerKind::sub, "sub", {a, b.scale("half", a, 0.5)});
  const Index fcn = b.conv("point", s, 4, {1, 1});
  const Index head =
      b.linear("fc", b.op(LayerKind::flatten, "flat", {b.adaptive("gap", s, {2, 3})}), 3);
  return b.graph({fcn, head});
}

/// Every class of every layer holds equal sums in the full (kept) pass.
void expect_classes_hold_equal_sums(const LayerGraph& g, double s) {
  const EngineOptions options{};
  const LayerPlan plan(g, options);
  const std::vector<double> theta = random_theta(g.num_params, 3);
  const WeightSpec w{Mode::power, s, theta, {}};
  const std::vector<TensorPtr> full = forward_pass(plan, w, true, 1.0, nullptr, nullptr, {0, 1});
  const LayerClasses classes = forward_classes(plan);
  for (std::size_t l = 0; l < plan.size(); ++l) {
    if (!classes[l]) {
      continue;
    }
    const Classes& c = *classes[l];
    const Index h = static_cast<Index>(c.h.of.size());
    const Index wd = static_cast<Index>(c.w.of.size());
    ASSERT_EQ(plan.shape(l)[0] * h * wd, plan.entries(l)) << plan.layer(l).name;
    for (Index ch = 0; ch < plan.shape(l)[0]; ++ch) {
      for (Index i = 0; i < h; ++i) {
        for (Index j = 0; j < wd; ++j) {
          const Index ri = c.h.rep[static_cast<std::size_t>(c.h.of[static_cast<std::size_t>(i)])];
          const Index rj = c.w.rep[static_cast<std::size_t>(c.w.of[static_cast<std::size_t>(j)])];
          const double v = entry(*full[l], (ch * h + i) * wd + j);
          const double r = entry(*full[l], (ch * h + ri) * wd + rj);
          ASSERT_NEAR(v, r, 1e-12 * std::abs(r))
              << plan.layer(l).name << " channel " << ch << " position (" << i << ", " << j
              << ") and its class's representative (" << ri << ", " << rj << ")";
        }
      }
    }
  }
}

/// The pass on classes returns the full pass's outputs.
void expect_classes_pass_equals_full(const LayerGraph& g, double s) {
  const EngineOptions options{};
  const LayerPlan plan(g, options);
  const std::vector<double> theta = random_theta(g.num_params, 5);
  const WeightSpec w{Mode::power, s, theta, {}};
  const LayerClasses classes = forward_classes(plan);
  const std::vector<TensorPtr> full = forward_pass(plan, w, false, 1.0, nullptr, nullptr, {0, 1});
  const std::vector<TensorPtr> cls =
      forward_pass(plan, w, false, 1.0, nullptr, nullptr, {0, 1}, &classes);
  for (const Index o : g.outputs) {
    const auto l = static_cast<std::size_t>(o);
    ASSERT_EQ(cls[l]->value.size(), full[l]->value.size()) << plan.layer(l).name;
    for (Index i = 0; i < plan.entries(l); ++i) {
      const double a = entry(*cls[l], i);
      const double b = entry(*full[l], i);
      ASSERT_NEAR(a, b, 1e-12 * std::abs(b)) << plan.layer(l).name << " entry " << i;
    }
  }
}

/// The index of the layer called `name`.
std::size_t layer_index(const LayerPlan& plan, const std::string& name) {
  for (std::size_t l = 0; l < plan.size(); ++l) {
    if (plan.layer(l).name == name) {
      return l;
    }
  }
  throw std::logic_error(name);
}

TEST(PositionClasses, EveryKindKeptOnClassesIsExercised) {
  // border_cnn's layers up to its adaptive pool are computed on classes (none is whole), so
  // the tests below run every kernel of layer_classes.cpp.
  const LayerGraph g = border_cnn();
  const EngineOptions options{};
  const LayerPlan plan(g, options);
  const LayerClasses classes = forward_classes(plan);
  for (const char* name : {"stem", "bn0", "r0", "mp", "dil", "grp", "add", "side", "cat", "ap",
                           "half", "sub", "point"}) {
    EXPECT_TRUE(classes[layer_index(plan, name)]) << name;
  }
  EXPECT_FALSE(classes[layer_index(plan, "fc")]);
}

/// The edge products [X . Y]_k of every parameter layer, X the forward sums of a kept pass at
/// theta^2 (on classes when `use_classes`), Y the backward sums: the kernel diagonal's sums.
std::vector<double> diagonal_sums(const LayerGraph& g, const std::vector<double>& theta,
                                  bool use_classes) {
  const EngineOptions options{};
  const LayerPlan plan(g, options);
  const WeightSpec w{Mode::square, 2, theta, {}};
  const LayerClasses classes = forward_classes(plan);
  const LayerClasses* c = use_classes ? &classes : nullptr;
  const std::vector<TensorPtr> a = forward_pass(plan, w, true, 1.0, nullptr, nullptr, {0, 1}, c);
  std::vector<double> out(static_cast<std::size_t>(g.num_params), 0.0);
  detail::backward_pass(
      plan, w, true, false, nullptr, nullptr,
      [&](std::size_t l, const detail::Tensor& y) {
        detail::edge_products(plan, l, *a[plan.input(l)], y, 1.0, nullptr, out.data(), nullptr, c);
      },
      {0, 1}, c);
  return out;
}

/// The derivative sums C (forward, from A, both on classes or both full), expanded: the
/// outputs of the kept pass that K v runs.
std::vector<double> derivative_outputs(const LayerGraph& g, const std::vector<double>& theta,
                                       const std::vector<double>& v, bool use_classes) {
  const EngineOptions options{};
  const LayerPlan plan(g, options);
  const WeightSpec sq{Mode::square, 2, theta, {}};
  const WeightSpec prod{Mode::product, 1, theta, v};
  const LayerClasses classes = forward_classes(plan);
  const LayerClasses* c = use_classes ? &classes : nullptr;
  const std::vector<TensorPtr> a = forward_pass(plan, sq, true, 1.0, nullptr, nullptr, {0, 1}, c);
  std::vector<TensorPtr> cs = forward_pass(plan, sq, true, 0.0, &a, &prod, {0, 1}, c);
  if (use_classes) {
    cs = detail::expand_outputs(plan, std::move(cs), classes);
  }
  std::vector<double> out;
  for (const Index o : g.outputs) {
    const detail::Tensor& t = *cs[static_cast<std::size_t>(o)];
    for (Index i = 0; i < static_cast<Index>(t.value.size()); ++i) {
      out.push_back(entry(t, i));
    }
  }
  return out;
}

void expect_all_near(const std::vector<double>& a, const std::vector<double>& b,
                     const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  double scale = 0;
  for (const double x : b) {
    scale = std::max(scale, std::abs(x));
  }
  for (std::size_t k = 0; k < a.size(); ++k) {
    ASSERT_NEAR(a[k], b[k], 1e-12 * std::max(std::abs(b[k]), 1e-3 * scale))
        << what << " entry " << k;
  }
}

TEST(PositionClasses, KeptPassesAndEdgeProductsOnClassesEqualTheFullOnes) {
  // The kernel diagonal's edge products with A on classes (a convolution's products sum B over
  // each output class; a batch norm's too), and the derivative sums C of K v computed from A
  // on classes, against the same on full tensors.
  std::vector<LayerGraph> graphs{border_cnn(), testing::resnet18(40, 5, 4), testing::zoo_cnn(),
                                 testing::zoo_conv1d()};
  for (std::uint64_t seed = 0; seed < 60; ++seed) {
    graphs.push_back(testing::random_layer_graph(seed));
  }
  for (std::size_t i = 0; i < graphs.size(); ++i) {
    const LayerGraph& g = graphs[i];
    const std::vector<double> theta = random_theta(g.num_params, 11);
    const std::vector<double> v = random_theta(g.num_params, 12);
    expect_all_near(diagonal_sums(g, theta, true), diagonal_sums(g, theta, false),
                    fmt::format("graph {}: diagonal sums", i));
    expect_all_near(derivative_outputs(g, theta, v, true), derivative_outputs(g, theta, v, false),
                    fmt::format("graph {}: derivative sums", i));
  }
}

TEST(PositionClasses, ClassesHoldEqualSumsInTheFullPass) {
  for (const double s : {1.0, 2.0}) {
    expect_classes_hold_equal_sums(border_cnn(), s);
    expect_classes_hold_equal_sums(testing::resnet18(40, 5, 4), s);
    expect_classes_hold_equal_sums(testing::zoo_cnn(), s);
    expect_classes_hold_equal_sums(testing::zoo_conv1d(), s);
  }
}

TEST(PositionClasses, PassOnClassesEqualsTheFullPass) {
  for (const double s : {0.0, 0.5, 1.0, 2.0}) {
    SCOPED_TRACE(fmt::format("s = {}", s));
    expect_classes_pass_equals_full(border_cnn(), s);
    expect_classes_pass_equals_full(testing::resnet18(40, 5, 4), s);
    expect_classes_pass_equals_full(testing::zoo_cnn(), s);
    expect_classes_pass_equals_full(testing::zoo_conv1d(), s);
  }
  for (std::uint64_t seed = 0; seed < 150; ++seed) {
    SCOPED_TRACE(fmt::format("random_layer_graph({})", seed));
    const LayerGraph g = testing::random_layer_graph(seed);
    expect_classes_hold_equal_sums(g, 1.0);
    expect_classes_pass_equals_full(g, 2.0);
  }
}

TEST(PositionClasses, TheBordersAreKeptAndTheInteriorIsOneClass) {
  // resnet18 at 224: the stem's 7x7 stride-2 convolution leaves rows 0, 1 and 111 apart from
  // the interior (their windows cross the padding); the 3x3 convolutions of layer1 widen the
  // bands by one row per layer; at 7x7 every position is its own class (kept whole).
  const LayerGraph g = testing::resnet18(224, 10, 2);
  const EngineOptions options{};
  const LayerPlan plan(g, options);
  const LayerClasses classes = forward_classes(plan);
  const auto layer = [&](const std::string& name) { return layer_index(plan, name); };
  const Classes& stem = *classes[layer("conv1")];
  EXPECT_EQ(stem.h.size(), 4);
  EXPECT_EQ(stem.h.rep, (std::vector<Index>{0, 1, 2, 111}));
  EXPECT_EQ(stem.w.size(), 4);
  const Classes& pool = *classes[layer("maxpool")];
  EXPECT_EQ(pool.h.rep, (std::vector<Index>{0, 1, 2, 55}));
  ASSERT_TRUE(classes[layer("layer1.0.conv1")]);
  EXPECT_EQ(classes[layer("layer1.0.conv1")]->h.size(), 6);  // 0, 1, 2, interior, 54, 55
  EXPECT_FALSE(classes[layer("layer4.1.conv2")]);            // 7 x 7: every position differs
  EXPECT_FALSE(classes[layer("fc")]);
}

/// In a full backward pass (kept, random weights), every position of each backward group of a
/// layer holds its group representative's sums, channel by channel; returns how many layers
/// have groups.
int expect_backward_groups_hold_equal_sums(const LayerGraph& g, Mode mode, double s) {
  const EngineOptions options{};
  const LayerPlan plan(g, options);
  const std::vector<double> theta = random_theta(g.num_params, 9);
  const WeightSpec w{mode, s, theta, {}};
  const std::vector<TensorPtr> sums = detail::backward_pass(
      plan, w, true, true, nullptr, nullptr, [](std::size_t, const detail::Tensor&) {}, {0, 1});
  int grouped = 0;
  for (std::size_t l = 1; l < plan.size(); ++l) {
    const detail::PositionGroups* pg = plan.backward_groups(l);
    if (pg == nullptr || !sums[l]) {
      continue;
    }
    ++grouped;
    const auto n = static_cast<Index>(pg->cls.size());
    EXPECT_EQ(plan.shape(l)[0] * n, plan.entries(l)) << plan.layer(l).name;
    for (Index ch = 0; ch < plan.shape(l)[0]; ++ch) {
      for (Index p = 0; p < n; ++p) {
        const Index rep = pg->rep[static_cast<std::size_t>(pg->cls[static_cast<std::size_t>(p)])];
        const double a = entry(*sums[l], ch * n + p);
        const double b = entry(*sums[l], ch * n + rep);
        EXPECT_NEAR(a, b, 1e-12 * std::abs(b))
            << plan.layer(l).name << " channel " << ch << " position " << p;
      }
    }
  }
  return grouped;
}

TEST(BackwardClasses, BackwardSumsAreEqualOnTheirGroups) {
  // Behind global average pools the backward sums repeat over positions, for any weights: the
  // transposed convolutions and weight products of those layers run on one position per group
  // (conv_transpose, conv_weight_products). Checked here on the full pass itself.
  EXPECT_EQ(expect_backward_groups_hold_equal_sums(testing::zoo_global_pools(), Mode::square, 2),
            8);  // g2, g3, gbn, gskip, gadd, gr, g4, gr4
  EXPECT_GT(expect_backward_groups_hold_equal_sums(testing::resnet18(40, 5, 4), Mode::power, 1), 0);
  for (const LayerGraph& g : {border_cnn(), testing::zoo_cnn(), testing::zoo_conv1d()}) {
    expect_backward_groups_hold_equal_sums(g, Mode::square, 2);
  }
  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    SCOPED_TRACE(fmt::format("random_layer_graph({})", seed));
    expect_backward_groups_hold_equal_sums(testing::random_layer_graph(seed), Mode::power, 1);
  }
}

TEST(BackwardClasses, WhereTheyAre) {
  // resnet18 at 224: layer4.1's last convolution feeds the global pool (1 class of 49
  // positions), the one before 9 (its window's border rows and columns), layer4.0's output 25;
  // the head and the earlier stages (held on forward classes or whole) have none.
  const LayerGraph r = testing::resnet18(224, 10, 2);
  const LayerGraph z = testing::zoo_global_pools();
  const EngineOptions options{};
  const LayerPlan plan(r, options);
  const LayerPlan zp(z, options);
  // The number of backward groups of layer `name`, -1 where it has none.
  const auto groups = [](const LayerPlan& p, const std::string& name) {
    const detail::PositionGroups* pg = p.backward_groups(layer_index(p, name));
    return pg != nullptr ? static_cast<Index>(pg->rep.size()) : Index{-1};
  };
  EXPECT_EQ(groups(plan, "layer4.1.conv2"), 1);
  EXPECT_EQ(groups(plan, "layer4.1.conv1"), 9);
  EXPECT_EQ(groups(plan, "layer4.0.conv2"), 25);
  EXPECT_EQ(groups(plan, "layer4.0.conv1"), -1);  // all 49 positions differ
  EXPECT_EQ(groups(plan, "fc"), -1);
  EXPECT_EQ(groups(zp, "g4"), 1);
  EXPECT_EQ(groups(zp, "gr"), 9);
  EXPECT_EQ(groups(zp, "g3"), 9);
  EXPECT_EQ(groups(zp, "g2"), 9);
  EXPECT_EQ(groups(zp, "gr1"), -1);  // also read by a pool that is not global
  EXPECT_EQ(groups(zp, "g1"), -1);
  EXPECT_EQ(groups(zp, "gfc1"), -1);
}

}  // namespace
}  // namespace pathlift
