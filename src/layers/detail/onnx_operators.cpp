// The ONNX operators pathlift reads: one table, the only list of them (onnx_import.hpp,
// Importer::Operator). Each entry holds the operator's arity over the opsets read, the
// attributes the importer reads, what it becomes in the layer graph, why a node is refused
// whatever its inputs, when it is a constant evaluated at import, and its handlers. The first
// pass checks arities from it (onnx_support.cpp), the second dispatches on it (onnx.cpp), the
// refusal of an unknown operator lists its names, onnx_operators() (onnx.hpp) returns it, and
// docs/onnx-operators.md is generated from that (scripts/onnx_operators_doc.py; a test fails
// when the page is stale). Adding an operator is adding an entry here and its handler.

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "pathlift/onnx.hpp"
#include "src/layers/detail/onnx_import.hpp"

namespace pathlift {
namespace detail {

std::span<const Importer::Operator> Importer::operators() {
  using I = Importer;
  using F = FoldWhen;
  constexpr int m = k_many;
  // name, first opset, inputs, outputs, attributes read, becomes, problem, fold, build,
  // the layer kind it builds (when one)
  static const Operator k_table[] = {
      {"Add", 1, 2, 2, 1, 1, "", "`add` of two computed tensors of the same shape", nullptr,
       F::all_constant, &I::fold_arithmetic, &I::add_sub_concat, LayerKind::add},
      {"AveragePool", 1, 1, 1, 1, 1,
       "kernel_shape, strides, pads, dilations, auto_pad, ceil_mode, count_include_pad",
       "`avg_pool` (symmetric pads, `ceil_mode`; a zero `Pad` before it merged into its padding)",
       nullptr, F::never, nullptr, &I::conv_or_pool, LayerKind::avg_pool},
      {"BatchNormalization", 1, 5, 5, 1, 5, "epsilon, training_mode, spatial",
       "`batch_norm` with `a`, `b` (inference: scale, B, mean, var initializers)",
       &I::batch_norm_problem, F::never, nullptr, &I::batch_norm, LayerKind::batch_norm},
      {"Cast", 1, 1, 1, 1, 1, "to", "evaluated at import (constants only)", nullptr, F::always,
       &I::fold_cast, &I::data_operand},
      {"Clip", 1, 1, 3, 1, 1, "min, max (before opset 11)",
       "`activation` relu with min 0 and no max; nothing without bounds", nullptr, F::never,
       nullptr, &I::clip, LayerKind::activation},
      {"Concat", 1, 1, m, 1, 1, "axis", "`concat` (not along the batch); of constants evaluated",
       nullptr, F::all_constant, &I::fold_concat, &I::add_sub_concat, LayerKind::concat},
      {"Constant", 1, 0, 0, 1, 1, "value, value_float(s), value_int(s)", "evaluated at import",
       nullptr, F::always, &I::fold_constant_node, &I::data_operand},
      {"ConstantOfShape", 9, 1, 1, 1, 1, "value", "evaluated at import", nullptr, F::always,
       &I::fold_constant_of_shape, &I::data_operand},
      {"Conv", 1, 2, 3, 1, 1, "kernel_shape, strides, pads, dilations, group, auto_pad",
       "`conv` (1-D or 2-D, symmetric pads; a zero `Pad` before it merged into its padding)",
       nullptr, F::never, nullptr, &I::conv_or_pool, LayerKind::conv},
      {"ConvTranspose", 1, 2, 3, 1, 1,
       "kernel_shape, strides, pads, dilations, group, output_padding, output_shape, auto_pad",
       "`conv_transpose` (1-D or 2-D; symmetric pads, or the pads that `output_shape` or "
       "`auto_pad` asks, symmetric; weight `(in, out / group, k...)` as stored)",
       nullptr, F::never, nullptr, &I::transposed_conv, LayerKind::conv_transpose},
      {"Div", 1, 2, 2, 1, 1, "", "`scale` by the inverse of a constant of one value", nullptr,
       F::all_constant, &I::fold_arithmetic, &I::mul_div, LayerKind::scale},
      {"Dropout", 1, 1, 3, 1, 2, "", "nothing (inference: the same tensor)", &I::dropout_problem,
       F::never, nullptr, &I::identity},
      {"Flatten", 1, 1, 1, 1, 1, "axis",
       "`flatten` (axis 1; of a permuted tensor, a `flatten` and a `gather`)", nullptr, F::never,
       nullptr, &I::flatten, LayerKind::flatten},
      {"Floor", 1, 1, 1, 1, 1, "", "evaluated at import (constants only)", nullptr, F::of_constant,
       &I::fold_floor, &I::data_operand},
      {"Gather", 1, 2, 2, 1, 1, "axis",
       "`gather` of a vector of constant indices, not along the batch; of a constant evaluated",
       nullptr, F::of_constant, &I::fold_gather, &I::gather_constant},
      {"Gemm", 1, 2, 3, 1, 1, "transA, transB, alpha, beta",
       "`linear` (`transA` 0, `transB` 0 or 1, `alpha = beta = 1`; weight and bias initializers, "
       "the bias of shape `(N)` or `(1, N)`)",
       &I::gemm_problem, F::never, nullptr, &I::gemm, LayerKind::linear},
      {"GlobalAveragePool", 1, 1, 1, 1, 1, "", "`adaptive_avg_pool` to 1 x 1", nullptr, F::never,
       nullptr, &I::conv_or_pool, LayerKind::adaptive_avg_pool},
      {"Identity", 1, 1, 1, 1, 1, "",
       "nothing (the same tensor; of an initializer, a parameter block of its own)", nullptr,
       F::all_constant, &I::fold_identity, &I::identity},
      {"LeakyRelu", 1, 1, 1, 1, 1, "alpha", "`activation` leaky_relu", nullptr, F::never, nullptr,
       &I::activation, LayerKind::activation},
      {"MatMul", 1, 2, 2, 1, 1, "",
       "`linear` by an initializer or by a `Transpose` (perm `[1, 0]`) of one, with the `Add` of "
       "an "
       "initializer of shape `(N)` or `(1, N)` right after it as its bias",
       nullptr, F::never, nullptr, &I::matmul, LayerKind::linear},
      {"Max", 1, 1, m, 1, 1, "",
       "of computed tensors of one shape: their `concat`, a `gather` interleaving them, a "
       "descending `group_sort` of one entry per input, a `gather` of the largest",
       nullptr, F::never, nullptr, &I::max_min},
      {"MaxPool", 1, 1, 1, 1, 2, "kernel_shape, strides, pads, dilations, auto_pad, ceil_mode",
       "`max_pool` (symmetric pads, `ceil_mode`; the indices output unused)", &I::max_pool_problem,
       F::never, nullptr, &I::conv_or_pool, LayerKind::max_pool},
      {"Min", 1, 1, m, 1, 1, "", "as `Max`, the smallest", nullptr, F::never, nullptr, &I::max_min},
      {"Mul", 1, 2, 2, 1, 1, "",
       "`scale` by a constant of one value (a `Constant`, an initializer, a folded constant: not "
       "a parameter)",
       nullptr, F::all_constant, &I::fold_arithmetic, &I::mul_div, LayerKind::scale},
      {"Pad", 1, 1, 4, 1, 1, "mode, pads, value (before opset 11)",
       "one `gather` per padded axis in mode `reflect` or `edge` (pads an input or an attribute, "
       "`axes`, not the batch; negative pads crop); a zero pad (spatial, begin = end) merged "
       "into the padding of the `Conv` or `AveragePool` after it",
       &I::pad_problem, F::never, nullptr, &I::pad},
      {"ReduceMean", 1, 1, 2, 1, 1, "axes, keepdims",
       "`adaptive_avg_pool` to 1 x 1 over every spatial axis (then `flatten` when `keepdims` is "
       "0)",
       nullptr, F::never, nullptr, &I::reduce},
      {"ReduceSum", 1, 1, 2, 1, 1, "axes, keepdims, noop_with_empty_axes",
       "the same as `ReduceMean`, then a `scale` by the number of spatial entries", nullptr,
       F::never, nullptr, &I::reduce},
      {"Relu", 1, 1, 1, 1, 1, "", "`activation` relu", nullptr, F::never, nullptr, &I::activation,
       LayerKind::activation},
      {"Reshape", 5, 2, 2, 1, 1, "allowzero",
       "`flatten` to `(batch, features)`; a channel shuffle or a flatten of a permuted tensor a "
       "`gather`; of a constant evaluated",
       nullptr, F::of_constant, &I::fold_reshape, &I::reshape},
      {"Resize", 10, 1, 4, 1, 1,
       "mode, coordinate_transformation_mode, nearest_mode, axes, keep_aspect_ratio_policy, "
       "antialias",
       "one `gather` per resized axis in mode `nearest`, scales or sizes, not resizing the batch "
       "(opset 10: integer scales); `interpolate` in mode `linear` (opset 11 on; 1-D or 2-D, "
       "the spatial axes; `half_pixel`, `pytorch_half_pixel` or `align_corners`; scales that "
       "make whole sizes)",
       &I::resize_problem, F::never, nullptr, &I::resize},
      {"Shape", 1, 1, 1, 1, 1, "start, end",
       "evaluated at import (of a computed tensor: the batch size, then its shape)", nullptr,
       F::always, &I::fold_shape, &I::data_operand},
      {"Slice", 1, 1, 5, 1, 1, "starts, ends, axes (before opset 10)",
       "one `gather` per sliced axis (constant starts, ends, axes, steps; the batch whole); of a "
       "constant evaluated",
       nullptr, F::of_constant, &I::fold_slice, &I::slice},
      {"Split", 1, 1, 2, 1, m, "axis, split, num_outputs",
       "one `gather` per used output (sizes, equal parts, `num_outputs`)", nullptr, F::never,
       nullptr, &I::split},
      {"Squeeze", 1, 1, 2, 1, 1, "axes", "evaluated at import (constants only)", nullptr, F::always,
       &I::fold_unsqueeze, &I::data_operand},
      {"Sub", 1, 2, 2, 1, 1, "", "`sub` of two computed tensors of the same shape", nullptr,
       F::all_constant, &I::fold_arithmetic, &I::add_sub_concat, LayerKind::sub},
      {"TopK", 1, 1, 2, 1, 2, "axis, largest, sorted",
       "refused: a k-max pooling or a GroupSort is a `k_max_pool` or `group_sort` layer of the "
       "layer JSON (or PyTorch's `sort` of grouped channels through `from_torch`)",
       &I::top_k_problem, F::never, nullptr, &I::data_operand},
      {"Transpose", 1, 1, 1, 1, 1, "perm",
       "a `gather` when the reshapes around it permute entries within dimensions; of a 2-D "
       "initializer a weight; of a constant evaluated",
       nullptr, F::of_constant, &I::fold_transpose, &I::transpose},
      {"Unsqueeze", 1, 1, 2, 1, 1, "axes", "evaluated at import (constants only)", nullptr,
       F::always, &I::fold_unsqueeze, &I::data_operand},
      {"Upsample", 7, 1, 2, 1, 1, "mode, scales (opset 7)",
       "one `gather` per resized axis (mode `nearest`, integer scales)", &I::resize_problem,
       F::never, nullptr, &I::resize},
  };
  return k_table;
}

const Importer::Operator* Importer::operator_of(const NodeProto& n) {
  if (!n.domain().empty() && n.domain() != "ai.onnx") {
    return nullptr;
  }
  const auto ops = operators();
  const auto it = std::lower_bound(
      ops.begin(), ops.end(), n.op_type(),
      [](const Operator& o, const std::string& name) { return o.name < std::string_view(name); });
  return it != ops.end() && it->name == n.op_type() ? &*it : nullptr;
}

Layer Importer::node_layer(int i, std::vector<Index> inputs) const {
  const Operator* op = operator_of(m_g.node(i));
  if (op == nullptr || !op->kind) {
    throw std::logic_error(fmt::format("ONNX import: node {} ({}) builds no layer kind of its own",
                                       label(i), m_g.node(i).op_type()));
  }
  return make_layer(*op->kind, node_name(i), std::move(inputs));
}

std::string_view known_refusal(std::string_view op_type) {
  // ONNX's activations other than Relu, LeakyRelu and Clip(min = 0), and the output maps.
  static constexpr std::string_view k_non_homogeneous[] = {
      "Celu",      "Elu",      "Erf",        "Exp",  "Gelu",           "HardSigmoid",
      "HardSwish", "Log",      "LogSoftmax", "Mish", "Selu",           "Sigmoid",
      "Softmax",   "Softplus", "Softsign",   "Tanh", "ThresholdedRelu"};
  return std::find(std::begin(k_non_homogeneous), std::end(k_non_homogeneous), op_type) !=
                 std::end(k_non_homogeneous)
             ? "not positively homogeneous: f(a x) = a f(x) fails for some a > 0"
             : "";
}

std::string operator_names() {
  std::string out;
  for (const Importer::Operator& o : Importer::operators()) {
    out += out.empty() ? "" : ", ";
    out += o.name;
  }
  return out;
}

}  // namespace detail

std::vector<OnnxOperator> onnx_operators() {
  std::vector<OnnxOperator> out;
  for (const detail::Importer::Operator& o : detail::Importer::operators()) {
    const auto bound = [](int v) { return v == detail::Importer::k_many ? -1 : v; };
    out.push_back({std::string(o.name), o.first_opset, static_cast<int>(detail::k_max_opset),
                   o.min_in, bound(o.max_in), o.min_out, bound(o.max_out),
                   std::string(o.attributes), std::string(o.becomes),
                   o.fold_when != detail::Importer::FoldWhen::never});
  }
  return out;
}

}  // namespace pathlift
