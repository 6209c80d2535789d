#pragma once
// Small layer graphs covering every layer kind and option, shared by the differential tests of
// the layer DP (layer_dp_test.cpp) and of the layer graph's rescaling symmetries
// (layer_symmetry_test.cpp) against the unrolled network.

#include <vector>

#include "pathlift/layers.hpp"
#include "support.hpp"
#include "tests/layers_builder.hpp"

namespace pathlift::testing {

/// Every layer kind and option: grouped, dilated, strided and padded convolutions, Conv1d,
/// max pooling with padding, average pooling without count_include_pad, adaptive pooling with
/// uneven windows, batch norm, leaky ReLU, add, sub, concat, flatten, two output layers.
inline LayerGraph zoo_cnn() {
  GraphBuilder b({4, 9, 8});
  Index x = b.conv("c1", 0, 6, {3, 3}, {1, 1}, {1, 1});
  x = b.act("r1", b.batch_norm("bn1", x));
  const Index g = b.conv("grouped", x, 6, {3, 2}, {2, 1}, {1, 0}, {1, 2}, 3, false);
  const Index p = b.pool(LayerKind::max_pool, "mp", x, {3, 3}, {2, 1}, {1, 0});
  const Index cat = b.op(LayerKind::concat, "cat", {g, p});
  Index y = b.act("lrelu", cat, Activation::leaky_relu(0.1));
  y = b.pool(LayerKind::avg_pool, "ap", y, {2, 2}, {1, 1}, {1, 1}, {}, false);
  const Index a = b.adaptive("adapt", y, {3, 2});
  const Index c2 = b.conv("c2", a, 12, {1, 1});
  const Index d = b.op(LayerKind::sub, "sub", {c2, b.act("r2", c2)});
  const Index f = b.op(LayerKind::flatten, "flat", {d});
  const Index out1 = b.linear("fc1", f, 3);
  const Index h = b.act("r3", out1);
  const Index out2 = b.linear("fc2", h, 2, false);
  return b.graph({out2, out1});
}

inline LayerGraph zoo_conv1d() {
  GraphBuilder b({3, 17});
  Index x = b.conv("c1", 0, 5, {4}, {1}, {2}, {2});
  x = b.act("r1", x);
  x = b.pool(LayerKind::avg_pool, "ap", x, {3}, {2}, {1});
  x = b.adaptive("adapt", x, {4});
  x = b.op(LayerKind::flatten, "flat", {x});
  return b.graph({b.linear("fc", x, 2)});
}

inline LayerGraph zoo_mlp() {
  GraphBuilder b({5});
  Index x = b.act("r1", b.linear("l1", 0, 7));
  x = b.act("r2", b.linear("l2", x, 6));
  return b.graph({b.linear("l3", x, 3)});
}

/// A module applied twice on parallel branches (shared parameters, never twice on one path).
inline LayerGraph zoo_shared_parallel() {
  GraphBuilder b({2, 5, 5});
  const Index c = b.conv("c", 0, 3, {3, 3}, {1, 1}, {1, 1});
  LayerGraph g = b.graph({c});
  Layer twin = g.layers[static_cast<std::size_t>(c)];
  twin.name = "c_again";
  g.layers.push_back(twin);  // layer c + 1 reads the input with c's parameters
  Layer add;
  add.kind = LayerKind::add;
  add.name = "add";
  add.inputs = {c, c + 1};
  g.layers.push_back(add);
  g.outputs = {c + 2};
  return g;
}

/// A linear layer "l" applied twice in sequence ("l_again": its parameters twice on every path).
inline LayerGraph zoo_twice_in_sequence() {
  GraphBuilder b({4});
  const Index l1 = b.linear("l", 0, 4);
  LayerGraph g = b.graph({l1});
  Layer again = g.layers[static_cast<std::size_t>(l1)];
  again.name = "l_again";
  again.inputs = {l1};
  g.layers.push_back(again);
  g.outputs = {l1 + 1};
  return g;
}

/// ReLU after ReLU nodes (the unroller keeps the one node: no edge of its own), also after a
/// concat of relu entries and pending sums (some entries merged, some not); a leaky ReLU after
/// a ReLU and a ReLU after it (nodes of their own).
inline LayerGraph zoo_relu_chains() {
  GraphBuilder b({6});
  const Index r2 = b.act("r2", b.act("r1", b.linear("l1", 0, 4)));
  const Index cat = b.op(LayerKind::concat, "cat", {r2, b.linear("l2", 0, 3)});
  const Index r3 = b.act("r3", cat);
  const Index r4 = b.act("r4", b.act("lk", r3, Activation::leaky_relu(0.2)));
  return b.graph({b.linear("out", r4, 2)});
}

/// Linear layers wider and taller than the engine's tiles (its transformed weights are used by
/// tiles, never materialised): `inputs` inputs (17,000: several column tiles and several pieces
/// of a row for the edge products; 70,000: enough entries for threads), 600 outputs (several
/// row tiles of the transposed product).
inline LayerGraph zoo_wide_linear(Index inputs = 17000) {
  GraphBuilder b({inputs});
  const Index wide = b.act("r1", b.linear("wide", 0, 40));
  const Index tall = b.act("r2", b.linear("tall", wide, 600));
  return b.graph({b.linear("out", tall, 3)});
}

/// An encoder-decoder with the rearranging layers: reflect padding and nearest upsampling
/// (gathers that repeat entries), a ceil_mode max pool and a ceil_mode average pool whose last
/// window is clipped, transposed convolutions (strided, grouped, dilated, output_padding, with
/// and without bias), a channel shuffle and a chunk (gathers of channels), a fixed scale.
inline LayerGraph zoo_encoder_decoder() {
  GraphBuilder b({2, 7, 6});
  Index x = b.gather("pad_h", 0, 1, {1, 0, 1, 2, 3, 4, 5, 6, 5});  // reflect 1 on H
  x = b.gather("pad_w", x, 2, {0, 0, 1, 2, 3, 4, 5, 5});           // replicate 1 on W
  const Index e = b.act("e", b.conv("enc", x, 4, {3, 3}));         // 4 x 7 x 6
  const Index d = b.pool(LayerKind::max_pool, "down", e, {2, 2}, {}, {}, {}, true, true);
  Index u = b.conv_transpose("up", d, 4, {3, 3}, {2, 2}, {1, 1}, {1, 1});  // 4 x 8 x 6
  u = b.gather("crop", b.act("u", u), 1, {0, 1, 2, 3, 4, 5, 6});           // 4 x 7 x 6
  const Index shuffled =
      b.gather("shuffle", b.op(LayerKind::concat, "cat", {u, e}), 0, {0, 4, 1, 5, 2, 6, 3, 7});
  const Index half = b.gather("chunk", shuffled, 0, {4, 5, 6, 7});
  Index y = b.scale("twice", b.act("r", half), 2.5);
  y = b.gather("up_w", y, 2, {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5});  // nearest x2 on W
  y = b.pool(LayerKind::avg_pool, "ap", y, {3, 3}, {2, 2}, {1, 1}, {}, true, true);
  y = b.conv_transpose("t2", b.act("r2", y), 2, {2, 3}, {1, 2}, {0, 1}, {}, {2, 1}, 2, false);
  return b.graph({b.linear("fc", b.op(LayerKind::flatten, "flat", {b.act("r3", y)}), 3)});
}

/// Global average pools (adaptive, and an average pool over the whole map) behind a strided
/// convolution, a grouped dilated one, 1x1 ones (a residual add, a batch norm) and a 3x3 one:
/// the backward sums are equal on classes of positions (layer_classes.hpp's backward_classes),
/// one class at g4's output, nine (3 x 3) from there back to g2's; a side head through a pool
/// that is not global leaves r1 and g1 whole.
inline LayerGraph zoo_global_pools() {
  GraphBuilder b({3, 9, 8});
  const Index r1 = b.act("gr1", b.conv("g1", 0, 4, {3, 3}, {2, 2}, {1, 1}));  // 4 x 5 x 4
  const Index c2 = b.conv("g2", r1, 4, {3, 3}, {1, 1}, {2, 2}, {2, 2}, 2);
  const Index bn = b.batch_norm("gbn", b.conv("g3", c2, 6, {1, 1}));
  const Index r = b.act("gr", b.op(LayerKind::add, "gadd", {bn, b.conv("gskip", r1, 6, {1, 1})}));
  const Index t = b.act("gr4", b.conv("g4", r, 6, {3, 3}, {1, 1}, {1, 1}));
  const Index h1 =
      b.linear("gfc1", b.op(LayerKind::flatten, "gf1", {b.adaptive("gap", t, {1, 1})}), 3);
  const Index h2 = b.linear(
      "gfc2", b.op(LayerKind::flatten, "gf2", {b.pool(LayerKind::avg_pool, "gavg", t, {5, 4})}), 2);
  const Index side = b.linear(
      "gfc3",
      b.op(LayerKind::flatten, "gf3", {b.pool(LayerKind::avg_pool, "gpart", r1, {2, 2}, {2, 2})}),
      2);
  return b.graph({h1, h2, side});
}

/// The order statistics and the interpolations of the path-norm toolkit: a 2-max pool with
/// padding and ceil_mode, GroupSort (g = 3, descending) and MaxMin (g = 2) whose maxima alone are
/// kept (a gather: the minima are dead), bilinear upsampling with and without align_corners (by
/// a scale factor of 2 and to an odd size), and linear interpolation on a Conv1d branch.
inline LayerGraph zoo_toolkit_kinds() {
  GraphBuilder b({2, 7, 6});
  const Index e = b.act("tr1", b.conv("tc1", 0, 6, {3, 3}, {1, 1}, {1, 1}));  // 6 x 7 x 6
  const Index k = b.k_max_pool("kmax", e, 2, {3, 3}, {2, 2}, {1, 1}, true);   // 6 x 4 x 3
  const Index g = b.group_sort("gsort", k, 3, true);
  const Index up = b.interpolate("up", g, {8, 6}, false, {2.0, 2.0});  // 6 x 8 x 6
  const Index mm =
      b.gather("maxima", b.group_sort("maxmin", b.conv("tc2", up, 4, {3, 3}), 2, false), 0,
               {1, 3});  // the larger of each pair (ascending): 2 x 6 x 4
  const Index odd = b.interpolate("odd", mm, {5, 7}, true);
  return b.graph({b.linear("tfc", b.op(LayerKind::flatten, "tflat", {odd}), 3)});
}

/// The same on {C, L} data: linear interpolation (by a factor of 3, and down to an odd size
/// with align_corners), a k-max pool and an ascending GroupSort, a second output.
inline LayerGraph zoo_toolkit_1d() {
  GraphBuilder b({2, 9});
  const Index c = b.act("lr1", b.conv("lc1", 0, 4, {3}, {1}, {1}));  // 4 x 9
  const Index up = b.interpolate("lup", c, {27}, false, {3.0});
  const Index k = b.k_max_pool("lkmax", up, 3, {4}, {3});  // 4 x 8
  const Index g = b.group_sort("lsort", k, 4, false);
  const Index down = b.interpolate("ldown", b.conv("lc2", g, 3, {2}), {5}, true);
  return b.graph({b.linear("lfc", b.op(LayerKind::flatten, "lflat", {down}), 2), g});
}

/// Every zoo graph above, and a small resnet18.
inline std::vector<LayerGraph> layer_zoo() {
  return {zoo_cnn(),         zoo_conv1d(),          zoo_mlp(),          zoo_shared_parallel(),
          zoo_relu_chains(), zoo_encoder_decoder(), zoo_global_pools(), resnet18(20, 5, 4),
          zoo_wide_linear(), zoo_toolkit_kinds(),   zoo_toolkit_1d()};
}

}  // namespace pathlift::testing
