// The ONNX importer's constants of several dimensions (onnx_import.hpp): Slice, Reshape and
// Transpose of a constant (what torch.onnx.export computes the pads of a reflect or replicate
// padding with: a Reshape to (-1, 2), a reversing Slice, a Transpose), and Floor (the sizes of an
// interpolation). Each evaluates the constant at import; onnx_fold.cpp has the others.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "pathlift/error.hpp"
#include "src/core/checked.hpp"
#include "src/layers/detail/onnx_import.hpp"

namespace pathlift::detail {

void Importer::fold_slice(int i) {
  const NodeProto& n = m_g.node(i);
  const auto data = constant_input(i, 0);
  if (!data) {
    return;
  }
  SliceArgs args;
  if (!slice_args(i, args)) {
    return;
  }
  const auto rank = static_cast<Index>(data->dims.size());
  const std::size_t count = args.starts.size();
  if (rank == 0) {
    invalid(i, "a slice of a scalar constant");
    return;
  }
  // The entries kept along each axis, then the constant they pick.
  std::vector<std::vector<Index>> keep(static_cast<std::size_t>(rank));
  std::vector<bool> sliced(static_cast<std::size_t>(rank), false);
  for (std::size_t k = 0; k < count; ++k) {
    const std::int64_t a = args.axes[k];
    const std::int64_t axis = a < 0 ? a + rank : a;
    const std::int64_t step = args.steps[k];
    if (axis < 0 || axis >= rank || sliced[static_cast<std::size_t>(axis)] || step == 0) {
      invalid(i, step == 0 ? std::string("a step of 0")
                           : fmt::format("axis {} is repeated or out of range for a constant of "
                                         "shape {}",
                                         a, shape_text(data->dims)));
      return;
    }
    sliced[static_cast<std::size_t>(axis)] = true;
    keep[static_cast<std::size_t>(axis)] = slice_indices(
        args.starts[k], args.ends[k], step, data->dims[static_cast<std::size_t>(axis)]);
  }
  Constant c;
  c.real = data->real;
  for (Index d = 0; d < rank; ++d) {
    auto& kd = keep[static_cast<std::size_t>(d)];
    if (!sliced[static_cast<std::size_t>(d)]) {
      for (Index e = 0; e < data->dims[static_cast<std::size_t>(d)]; ++e) {
        kd.push_back(e);
      }
    }
    c.dims.push_back(static_cast<Index>(kd.size()));
  }
  const Index entries = entries_of(c.dims);
  std::vector<Index> at(static_cast<std::size_t>(rank), 0);  // the result's coordinates
  for (Index e = 0; e < entries; ++e) {
    Index source = 0;
    for (Index d = 0; d < rank; ++d) {
      source = source * data->dims[static_cast<std::size_t>(d)] +
               keep[static_cast<std::size_t>(d)][static_cast<std::size_t>(at[d])];
    }
    c.values.push_back(data->values[static_cast<std::size_t>(source)]);
    for (Index d = rank - 1;
         d >= 0 && ++at[static_cast<std::size_t>(d)] == c.dims[static_cast<std::size_t>(d)]; --d) {
      at[static_cast<std::size_t>(d)] = 0;
    }
  }
  set_constant(n.output(0), std::move(c));
}

void Importer::fold_reshape(int i) {
  const NodeProto& n = m_g.node(i);
  const auto data = constant_input(i, 0);
  const auto target = data ? constant_input(i, 1) : nullptr;
  if (!target) {
    return;
  }
  // ONNX's rule: 0 copies the input's dimension (unless allowzero), -1 is inferred.
  const bool zero_copies = int_attr(n, "allowzero", 0) == 0;
  const auto entries = static_cast<Index>(data->values.size());
  Constant c;
  c.real = data->real;
  c.values = data->values;
  Index known = 1;
  int inferred = -1;
  for (std::size_t k = 0; k < target->values.size(); ++k) {
    const Scalar& s = target->values[k];
    const std::int64_t v = target->real || s.batch ? -2 : s.i;
    Index d = v;
    if (v == 0 && zero_copies) {
      d = k < data->dims.size() ? data->dims[k] : -2;
    } else if (v == -1 && inferred < 0) {
      inferred = static_cast<int>(k);
      d = 1;
    }
    if (d < 0 || mul_overflows(known, d, known)) {
      invalid(i, fmt::format("shape {} is not a shape for a constant of shape {}",
                             constant_text(*target), shape_text(data->dims)));
      return;
    }
    c.dims.push_back(d);
  }
  if (inferred >= 0 && known > 0 && entries % known == 0) {
    c.dims[static_cast<std::size_t>(inferred)] = entries / known;
    known = entries;
  }
  if (known != entries) {
    invalid(i, fmt::format("shape {} does not hold the {} entries of a constant of shape {}",
                           constant_text(*target), entries, shape_text(data->dims)));
    return;
  }
  set_constant(n.output(0), std::move(c));
}

void Importer::fold_transpose(int i) {
  const NodeProto& n = m_g.node(i);
  const Tensor& w = state(n.input(0));
  const auto weight_perm = ints_attr(n, "perm");
  if (w.kind == Kind::initializer && tensor_dims(*w.tensor).size() == 2 &&
      (!weight_perm || *weight_perm == std::vector<Index>{1, 0})) {
    // A 2-D weight's transpose stays a weight, read by MatMul or Gemm.
    Tensor t = w;
    t.kind = Kind::transposed;
    set(n.output(0), std::move(t));
    return;
  }
  const auto data = constant_input(i, 0);
  if (!data) {
    return;
  }
  const auto rank = static_cast<Index>(data->dims.size());
  const std::vector<Index> perm =
      transpose_perm(i, rank, fmt::format("of shape {}", shape_text(data->dims)));
  if (perm.empty()) {
    return;
  }
  Constant c;
  c.real = data->real;
  std::vector<Index> stride(static_cast<std::size_t>(rank), 1);  // the input's strides
  for (Index d = rank - 2; d >= 0; --d) {
    stride[static_cast<std::size_t>(d)] =
        stride[static_cast<std::size_t>(d + 1)] * data->dims[static_cast<std::size_t>(d + 1)];
  }
  for (const Index p : perm) {
    c.dims.push_back(data->dims[static_cast<std::size_t>(p)]);
  }
  std::vector<Index> at(static_cast<std::size_t>(rank), 0);
  for (std::size_t e = 0; e < data->values.size(); ++e) {
    Index source = 0;
    for (Index d = 0; d < rank; ++d) {
      source += at[static_cast<std::size_t>(d)] *
                stride[static_cast<std::size_t>(perm[static_cast<std::size_t>(d)])];
    }
    c.values.push_back(data->values[static_cast<std::size_t>(source)]);
    for (Index d = rank - 1;
         d >= 0 && ++at[static_cast<std::size_t>(d)] == c.dims[static_cast<std::size_t>(d)]; --d) {
      at[static_cast<std::size_t>(d)] = 0;
    }
  }
  set_constant(n.output(0), std::move(c));
}

void Importer::fold_floor(int i) {
  const NodeProto& n = m_g.node(i);
  const auto v = constant_input(i, 0);
  if (!v) {
    return;
  }
  Constant c = *v;
  if (!c.real) {
    invalid(i, "its input is not floating point");
    return;
  }
  for (Scalar& s : c.values) {
    if (s.batch) {
      unsupported(i, "arithmetic on the batch size");
      return;
    }
    s.f = std::floor(s.f);
  }
  set_constant(n.output(0), std::move(c));
}

}  // namespace pathlift::detail
