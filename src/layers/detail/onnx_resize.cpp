// The ONNX importer's resizing (onnx_import.hpp): Resize (opset 11 on: the coordinate
// transformation and the rounding of ONNX's formula, evaluated exactly in integers) and Upsample
// / opset-10 Resize (integer scales: each entry repeated), in mode nearest, as one layer picking
// entries (gather_along) per resized axis; Resize in mode linear as an interpolate layer
// (PyTorch's weights). Scales whose output entries the specification (scale = out / in) and the
// runtimes (the given scale) take from different input entries are refused.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "pathlift/error.hpp"
#include "src/layers/detail/onnx_import.hpp"

namespace pathlift::detail {

namespace {

__extension__ typedef __int128 Wide;  // NOLINT(modernize-use-using)

/// floor(p / q) for q > 0.
Wide floor_div(Wide p, Wide q) {
  const Wide d = p / q;
  return (p % q != 0 && p < 0) ? d - 1 : d;
}

/// A positive rational num / den.
struct Ratio {
  Wide num = 1;
  Wide den = 1;
};

/// v (finite, positive) exactly, as m 2^e with m odd: both parts below 2^62, else nullopt.
std::optional<Ratio> exact_ratio(double v) {
  int e = 0;
  const double m = std::frexp(v, &e);  // v = m 2^e, m in [0.5, 1)
  auto mant = static_cast<std::int64_t>(std::ldexp(m, 53));
  e -= 53;
  while (mant % 2 == 0) {
    mant /= 2;
    ++e;
  }
  const int bits = 64 - __builtin_clzll(static_cast<unsigned long long>(mant));
  if (e > 62 - bits || e < -62) {
    return std::nullopt;
  }
  Ratio r;
  r.num = e >= 0 ? Wide{mant} << e : Wide{mant};
  r.den = e >= 0 ? Wide{1} : Wide{1} << -e;
  return r;
}

enum class Transform : unsigned char {
  half_pixel,
  pytorch_half_pixel,
  align_corners,
  asymmetric,
  tf_half_pixel_for_nn
};
enum class Rounding : unsigned char { round_prefer_floor, round_prefer_ceil, floor, ceil };

/// ONNX Resize's nearest input entry of output entry o: x_original = p / q by the coordinate
/// transformation (scale s), rounded, clamped to [0, in - 1]. Exact: every product is below
/// 2^100.
Index nearest_index(Index o, Index in, Index out, Ratio s, Transform t, Rounding r) {
  Wide p = 0;
  Wide q = 1;
  switch (t) {
    case Transform::asymmetric:  // o / s
      p = Wide{o} * s.den;
      q = s.num;
      break;
    case Transform::pytorch_half_pixel:  // as half_pixel, 0 for an output of one entry
      if (out == 1) {
        break;
      }
      [[fallthrough]];
    case Transform::half_pixel:  // (o + 1/2) / s - 1/2
      p = Wide{2 * o + 1} * s.den - s.num;
      q = 2 * s.num;
      break;
    case Transform::tf_half_pixel_for_nn:  // (o + 1/2) / s
      p = Wide{2 * o + 1} * s.den;
      q = 2 * s.num;
      break;
    case Transform::align_corners:  // o (in - 1) / (out - 1)
      if (out > 1) {
        p = Wide{o} * (in - 1);
        q = out - 1;
      }
      break;
  }
  Wide k = 0;
  switch (r) {
    case Rounding::floor:
      k = floor_div(p, q);
      break;
    case Rounding::ceil:
      k = -floor_div(-p, q);
      break;
    case Rounding::round_prefer_ceil:  // floor(x + 1/2)
      k = floor_div(2 * p + q, 2 * q);
      break;
    case Rounding::round_prefer_floor:  // ceil(x - 1/2)
      k = -floor_div(q - 2 * p, 2 * q);
      break;
  }
  return static_cast<Index>(std::clamp<Wide>(k, 0, in - 1));
}

}  // namespace

void Importer::resize(int i) {
  const NodeProto& n = m_g.node(i);
  const bool upsample = n.op_type() == "Upsample";
  Index x = -1;
  if (!data_input(i, 0, x)) {
    return;
  }
  const std::vector<Index> shape = m_builder->shape(x);
  const auto rank = static_cast<Index>(shape.size()) + 1;
  // Resize from opset 11: X, roi, scales, sizes and the coordinate transformation. Resize 10 and
  // Upsample (X, scales; Upsample 7: an attribute) repeat each entry: integer scales only.
  const bool v11 = !upsample && m_opset >= 11;
  const auto present = [&](int k) { return k < n.input_size() && !n.input(k).empty(); };
  std::shared_ptr<const Constant> scales;
  std::shared_ptr<const Constant> sizes;
  const int scales_at = v11 ? 2 : 1;
  if (present(scales_at)) {
    scales = constant_input(i, scales_at);
    if (!scales) {
      return;
    }
  } else if (const auto* a = attribute(n, "scales"); a != nullptr && !v11) {
    Constant c;
    c.real = true;
    for (const float f : a->floats()) {
      c.values.push_back({.f = static_cast<double>(f)});
    }
    c.dims = {static_cast<Index>(c.values.size())};
    scales = std::make_shared<const Constant>(std::move(c));
  }
  if (v11 && present(3)) {
    sizes = constant_input(i, 3);
    if (!sizes) {
      return;
    }
  }
  if (scales && scales->values.empty()) {
    scales = nullptr;  // an empty scales with sizes, as opset 11 writes it
  }
  if (sizes && sizes->values.empty()) {
    sizes = nullptr;
  }
  if (!scales == !sizes) {
    invalid(i, "exactly one of scales and sizes must be given");
    return;
  }
  if ((scales && !scales->real) || (sizes && sizes->real)) {
    invalid(i, scales ? "its scales are not floating point" : "its sizes are not integers");
    return;
  }
  const std::string transform =
      v11 ? string_attr(n, "coordinate_transformation_mode", "half_pixel") : "asymmetric";
  const std::string rounding = v11 ? string_attr(n, "nearest_mode", "round_prefer_floor") : "floor";
  static constexpr std::pair<const char*, Transform> k_transforms[] = {
      {"half_pixel", Transform::half_pixel},
      {"pytorch_half_pixel", Transform::pytorch_half_pixel},
      {"align_corners", Transform::align_corners},
      {"asymmetric", Transform::asymmetric},
      {"tf_half_pixel_for_nn", Transform::tf_half_pixel_for_nn}};
  static constexpr std::pair<const char*, Rounding> k_roundings[] = {
      {"round_prefer_floor", Rounding::round_prefer_floor},
      {"round_prefer_ceil", Rounding::round_prefer_ceil},
      {"floor", Rounding::floor},
      {"ceil", Rounding::ceil}};
  const auto* t = std::find_if(std::begin(k_transforms), std::end(k_transforms),
                               [&](const auto& e) { return transform == e.first; });
  const auto* r = std::find_if(std::begin(k_roundings), std::end(k_roundings),
                               [&](const auto& e) { return rounding == e.first; });
  if (t == std::end(k_transforms)) {
    unsupported(i, fmt::format("coordinate_transformation_mode {}", printable(transform)));
    return;
  }
  if (r == std::end(k_roundings)) {
    invalid(i, fmt::format("nearest_mode '{}' is not round_prefer_floor, round_prefer_ceil, "
                           "floor or ceil",
                           printable(rounding)));
    return;
  }
  if (sizes && string_attr(n, "keep_aspect_ratio_policy", "stretch") != "stretch") {
    unsupported(i, fmt::format("keep_aspect_ratio_policy {}",
                               printable(string_attr(n, "keep_aspect_ratio_policy", ""))));
    return;
  }
  // Opset 18: the axes the scales or sizes are for (the others keep their size).
  std::vector<Index> axes;
  if (const auto listed = ints_attr(n, "axes")) {
    for (const Index e : *listed) {
      const Index axis = onnx_axis(i, e, rank, "axis");
      if (axis < 0) {
        return;
      }
      if (std::find(axes.begin(), axes.end(), axis) != axes.end()) {
        invalid(i, fmt::format("axes [{}] repeat an axis", fmt::join(*listed, ", ")));
        return;
      }
      axes.push_back(axis);
    }
  } else {
    for (Index a = 0; a < rank; ++a) {
      axes.push_back(a);
    }
  }
  const Constant& given = scales ? *scales : *sizes;
  if (given.values.size() != axes.size()) {
    invalid(i, fmt::format("its {} {} have {} entries for {} axes (the batch, then the "
                           "per-sample shape {})",
                           scales ? "scales" : "sizes", constant_text(given), given.values.size(),
                           axes.size(), shape_text(shape)));
    return;
  }
  // The output size of every resized axis first: the output must be a tensor of the builder's
  // size before any index is made.
  struct ResizedAxis {
    Index axis, in, out;
    Ratio scale;
    double given;
  };
  std::vector<ResizedAxis> resized;
  std::vector<Index> out_shape = shape;
  for (std::size_t k = 0; k < axes.size(); ++k) {
    const Scalar& value = given.values[k];
    if (axes[k] == 0) {
      // The batch keeps its size: a scale 1, a size the batch size (or 1, exported at batch 1).
      if (!(scales ? value.f == 1.0 : (value.batch || value.i == 1))) {
        unsupported(i, fmt::format("it resizes the batch dimension ({} {})",
                                   scales ? "scales" : "sizes", constant_text(given)));
        return;
      }
      continue;
    }
    const Index in = shape[static_cast<std::size_t>(axes[k] - 1)];
    Ratio s;
    Index out = 0;
    if (sizes) {
      if (value.batch || value.i < 1 || value.i > k_max_dim) {
        unsupported(i, fmt::format("sizes {}: an output size out of 1..{} on dimension {}",
                                   constant_text(given), k_max_dim, axes[k]));
        return;
      }
      out = value.i;
      s = {out, in};
    } else {
      const auto exact =
          std::isfinite(value.f) && value.f > 0 ? exact_ratio(value.f) : std::nullopt;
      if (!exact) {
        unsupported(i, fmt::format("scale {} on dimension {}: pathlift reads scales in "
                                   "[2^-62, 2^62)",
                                   value.f, axes[k]));
        return;
      }
      s = *exact;
      const Wide size = floor_div(Wide{in} * s.num, s.den);  // floor(in scale)
      if (size < 1 || size > k_max_dim) {
        unsupported(i, fmt::format("scale {} on dimension {} of size {}: an output size out of "
                                   "1..{}",
                                   value.f, axes[k], in, k_max_dim));
        return;
      }
      out = static_cast<Index>(size);
      if (!v11 && s.den != 1) {
        unsupported(i, fmt::format("scale {} on dimension {}: pathlift reads {} with integer "
                                   "scales (each entry repeated); Resize from opset 11 says how "
                                   "other scales pick entries",
                                   value.f, axes[k], upsample ? "Upsample" : "opset-10 Resize"));
        return;
      }
    }
    if (out == in && s.num == s.den) {
      // An axis of scale 1 keeps its entries whatever the coordinate transformation: the
      // runtimes (ONNX Runtime, the ONNX reference) skip it, where tf_half_pixel_for_nn with
      // nearest_mode ceil would read (o + 1/2) / 1 rounded up, entry o + 1.
      continue;
    }
    resized.push_back({axes[k] - 1, in, out, s, value.f});
    out_shape[static_cast<std::size_t>(axes[k] - 1)] = out;
  }
  if (!output_fits(i, out_shape)) {
    return;
  }
  if (string_attr(n, "mode", "nearest") == "linear") {
    // PyTorch's linear / bilinear interpolation: its source coordinate is half_pixel's
    // (clamped at 0, as ONNX's edge padding reads it), or align_corners'.
    const Transform tr = t->second;
    if (tr != Transform::half_pixel && tr != Transform::pytorch_half_pixel &&
        tr != Transform::align_corners) {
      unsupported(i, fmt::format("coordinate_transformation_mode {} in mode linear: pathlift "
                                 "reads half_pixel, pytorch_half_pixel and align_corners",
                                 transform));
      return;
    }
    if (shape.size() != 2 && shape.size() != 3) {
      unsupported(i, fmt::format("mode linear on the per-sample shape {}: pathlift interpolates "
                                 "{{C, L}} and {{C, H, W}} tensors",
                                 shape_text(shape)));
      return;
    }
    for (const ResizedAxis& a : resized) {
      if (a.axis == 0) {
        unsupported(i, "mode linear along the channels");
        return;
      }
      if (scales && a.scale.num * a.in != Wide{a.out} * a.scale.den) {
        unsupported(i, fmt::format("scale {} on dimension {} of size {}: an output of {} "
                                   "entries, which is not scale x {}: pathlift interpolates by "
                                   "scales that make whole sizes",
                                   a.given, a.axis + 1, a.in, a.out, a.in));
        return;
      }
      if (tr == Transform::pytorch_half_pixel && a.out == 1) {
        unsupported(i, fmt::format("pytorch_half_pixel to one entry on dimension {}: its "
                                   "coordinate 0 is not PyTorch's",
                                   a.axis + 1));
        return;
      }
    }
    Layer l = make_layer(LayerKind::interpolate, node_name(i), {x});
    l.output_size.assign(out_shape.begin() + 1, out_shape.end());
    l.align_corners = tr == Transform::align_corners;
    set_data(i, m_builder->add(std::move(l)));
    return;
  }
  std::vector<std::pair<Index, std::vector<Index>>> picks;
  for (const ResizedAxis& a : resized) {
    count_indices(i, a.out);
    std::vector<Index> pick(static_cast<std::size_t>(a.out));
    for (Index o = 0; o < a.out; ++o) {
      pick[static_cast<std::size_t>(o)] =
          nearest_index(o, a.in, a.out, a.scale, t->second, r->second);
    }
    if (scales && t->second != Transform::align_corners) {
      // The specification's scale is out / in; runtimes use the given one: they must agree.
      for (Index o = 0; o < a.out; ++o) {
        if (nearest_index(o, a.in, a.out, {a.out, a.in}, t->second, r->second) !=
            pick[static_cast<std::size_t>(o)]) {
          unsupported(i, fmt::format("scale {} on dimension {} of size {}: an output of {} "
                                     "entries, whose entry {} ONNX's specification (scale = {} / "
                                     "{}) and the runtimes (scale = {}) take from different "
                                     "input entries",
                                     a.given, a.axis + 1, a.in, a.out, o, a.out, a.in, a.given));
          return;
        }
      }
    }
    picks.emplace_back(a.axis, std::move(pick));
  }
  for (auto& [axis, pick] : picks) {
    if (!gather_along(i, x, axis, std::move(pick))) {
      return;
    }
  }
  set_output(i, 0, x);
}

}  // namespace pathlift::detail
