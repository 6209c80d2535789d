// The ONNX importer's gathers (onnx_import.hpp): operations that pick, repeat or reorder the
// entries of a tensor computed from the data, each a layer picking entries (gather_along) per
// axis it changes: Slice, Split, Gather, Pad in reflect and edge modes, and Reshape / Transpose
// sequences such as a channel shuffle, tracked as an EntryView until they come back to a layer's
// dimensions. The nearest resizes, also gathers, are in onnx_resize.cpp.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "pathlift/error.hpp"
#include "pathlift/limits.hpp"
#include "src/core/checked.hpp"
#include "src/layers/detail/onnx_import.hpp"
#include "src/layers/layer_kinds.hpp"

namespace pathlift::detail {

std::shared_ptr<EntryView> identity_view(Index layer, const std::vector<Index>& shape, int node) {
  auto v = std::make_shared<EntryView>();
  v->layer = layer;
  v->node = node;
  Index stride = 1;
  for (const Index d : shape) {
    stride *= d;  // below 2^31: the builder's bound
  }
  for (const Index d : shape) {
    stride /= d;
    std::vector<int> atoms;
    if (d > 1) {  // a dimension of size 1 has no digit
      atoms.push_back(static_cast<int>(v->atoms.size()));
      v->atoms.push_back({d, stride});
    }
    v->dims.push_back(std::move(atoms));
  }
  return v;
}

/// v reshaped to `shape` (the same number of entries, row-major). False when a new dimension
/// would end inside an atom that its remaining size does not divide: the reshape mixes digits.
bool reshape_view(EntryView& v, const std::vector<Index>& shape) {
  // The atoms in the view's order, merged where contiguous in the source.
  std::vector<int> seq;
  for (const auto& d : v.dims) {
    for (const int a : d) {
      if (!seq.empty()) {
        const EntryView::Atom p = v.atoms[static_cast<std::size_t>(seq.back())];
        const EntryView::Atom c = v.atoms[static_cast<std::size_t>(a)];
        if (p.stride == c.stride * c.size) {
          v.atoms.push_back({p.size * c.size, c.stride});
          seq.back() = static_cast<int>(v.atoms.size()) - 1;
          continue;
        }
      }
      seq.push_back(a);
    }
  }
  std::vector<std::vector<int>> dims;
  std::size_t next = 0;
  for (const Index size : shape) {
    std::vector<int> group;
    Index left = size;
    while (left > 1) {
      if (next >= seq.size()) {
        return false;
      }
      const EntryView::Atom a = v.atoms[static_cast<std::size_t>(seq[next])];
      if (a.size <= left) {
        if (left % a.size != 0) {
          return false;
        }
        group.push_back(seq[next]);
        left /= a.size;
        ++next;
        continue;
      }
      if (a.size % left != 0) {
        return false;
      }
      // The atom's major digits end this dimension, its minor ones start the next.
      v.atoms.push_back({left, a.stride * (a.size / left)});
      group.push_back(static_cast<int>(v.atoms.size()) - 1);
      v.atoms.push_back({a.size / left, a.stride});
      seq[next] = static_cast<int>(v.atoms.size()) - 1;
      left = 1;
    }
    dims.push_back(std::move(group));
  }
  if (next != seq.size()) {
    return false;
  }
  // Only the atoms in use are kept: at most 31 (each has 2 or more values, and a view fewer than
  // 2^31 entries), so that a view costs O(1) however many nodes made it.
  std::vector<EntryView::Atom> atoms;
  for (auto& d : dims) {
    for (int& a : d) {
      atoms.push_back(v.atoms[static_cast<std::size_t>(a)]);
      a = static_cast<int>(atoms.size()) - 1;
    }
  }
  v.atoms = std::move(atoms);
  v.dims = std::move(dims);
  return true;
}

namespace {

/// The source number of every entry of a view dimension made of `atoms` (most significant
/// first), each digit of atom a counting `unit` source numbers per a.stride.
std::vector<Index> source_indices(const EntryView& v, const std::vector<int>& atoms, Index unit) {
  Index count = 1;
  for (const int a : atoms) {
    count *= v.atoms[static_cast<std::size_t>(a)].size;
  }
  std::vector<Index> out(static_cast<std::size_t>(count));
  for (Index e = 0; e < count; ++e) {
    Index rest = e;
    Index source = 0;
    for (auto it = atoms.rbegin(); it != atoms.rend(); ++it) {
      const EntryView::Atom& a = v.atoms[static_cast<std::size_t>(*it)];
      source += (rest % a.size) * (a.stride / unit);
      rest /= a.size;
    }
    out[static_cast<std::size_t>(e)] = source;
  }
  return out;
}

}  // namespace

std::vector<Index> EntryView::shape() const {
  std::vector<Index> s;
  for (const auto& d : dims) {
    Index n = 1;
    for (const int a : d) {
      n *= atoms[static_cast<std::size_t>(a)].size;
    }
    s.push_back(n);
  }
  return s;
}

std::vector<Index> slice_indices(std::int64_t start, std::int64_t end, std::int64_t step,
                                 Index size) {
  // Negative values count from the end (no overflow: size is below 2^31), then are clamped to
  // [0, size] (step > 0) or [-1, size - 1] (step < 0).
  start = start < 0 ? std::max<std::int64_t>(start, -size - 1) + size : start;
  end = end < 0 ? std::max<std::int64_t>(end, -size - 1) + size : end;
  if (step > 0) {
    start = std::clamp<std::int64_t>(start, 0, size);
    end = std::clamp<std::int64_t>(end, 0, size);
  } else {
    start = std::clamp<std::int64_t>(start, -1, size - 1);
    end = std::clamp<std::int64_t>(end, -1, size - 1);
  }
  std::vector<Index> out;
  for (std::int64_t k = start; step > 0 ? k < end : k > end;) {
    out.push_back(k);
    if (add_overflows(k, step, k)) {
      break;
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Gathers and views

bool Importer::gather_along(int i, Index& x, Index axis, std::vector<Index> indices) {
  const std::vector<Index>& shape = m_builder->shape(x);
  bool same = std::cmp_equal(indices.size(), shape[static_cast<std::size_t>(axis)]);
  for (std::size_t k = 0; same && k < indices.size(); ++k) {
    same = indices[k] == static_cast<Index>(k);
  }
  if (same) {
    return true;
  }
  const LayerOutput y = m_builder->add(pick_layer(node_name(i), x, axis, std::move(indices)));
  x = y.layer;
  return y.ok;
}

void Importer::count_indices(int i, Index count) {
  m_indices += static_cast<double>(count);
  require_bytes(m_indices * sizeof(Index), m_max_memory,
                fmt::format("the gathers of the ONNX model ({:.0f} indices, up to node {})",
                            m_indices, label(i)));
}

void Importer::set_output(int i, int slot, Index x) {
  Tensor t;
  t.kind = Kind::data;
  t.layer = x;
  set(m_g.node(i).output(slot), std::move(t));
}

bool Importer::data_or_view(int i, Index& layer, std::shared_ptr<const EntryView>* view) {
  const Tensor& t = state(m_g.node(i).input(0));
  if (view != nullptr && t.kind == Kind::view) {
    *view = t.view;
    layer = t.layer;
    return true;
  }
  return data_input(i, 0, layer);
}

void Importer::refuse_view(const EntryView& v, const std::string& reader) {
  if (std::find(m_view_refused.begin(), m_view_refused.end(), v.node) != m_view_refused.end()) {
    return;  // one message per view
  }
  m_view_refused.push_back(v.node);
  const std::vector<Index>& source = m_builder->shape(v.layer);
  const bool reshape = m_g.node(v.node).op_type() == "Reshape";
  unsupported(v.node,
              fmt::format("{}: the entries of '{}' (per-sample shape {}) as per-sample shape {}, "
                          "read by {}; pathlift represents a reshape or transpose that comes back "
                          "to the dimensions of its source, with entries permuted within each (a "
                          "channel shuffle), or to a flatten",
                          reshape ? "not a flatten" : "a transpose",
                          printable(m_builder->layers()[static_cast<std::size_t>(v.layer)].name),
                          shape_text(source), shape_text(v.shape()), reader));
}

Index Importer::materialise(int i, const EntryView& v) {
  const std::vector<Index> source = m_builder->shape(v.layer);  // a copy: layers are added
  const std::vector<Index> shape = v.shape();
  Index x = v.layer;
  if (shape.size() == source.size()) {
    // Each view dimension d made of atoms of source dimension d: one gather_along per dimension.
    std::vector<Index> unit(source.size(), 1);  // the stride of each source dimension
    for (std::size_t d = source.size() - 1; d-- > 0;) {
      unit[d] = unit[d + 1] * source[d + 1];
    }
    bool own = true;
    for (std::size_t d = 0; d < shape.size(); ++d) {
      for (const int a : v.dims[d]) {
        const EntryView::Atom& atom = v.atoms[static_cast<std::size_t>(a)];
        own = own && atom.stride >= unit[d] && atom.stride * atom.size <= unit[d] * source[d];
      }
    }
    if (own) {
      for (std::size_t d = 0; d < shape.size(); ++d) {
        count_indices(i, shape[d]);
        if (!gather_along(i, x, static_cast<Index>(d), source_indices(v, v.dims[d], unit[d]))) {
          return -2;
        }
      }
      return x;
    }
  }
  if (shape.size() != 1) {
    return -1;
  }
  // A vector: the source flattened, its entries picked in the view's order.
  if (source.size() > 1) {
    const LayerOutput f = m_builder->add(make_layer(LayerKind::flatten, node_name(i), {x}));
    if (!f.ok) {
      return -2;
    }
    x = f.layer;
  }
  count_indices(i, shape[0]);
  return gather_along(i, x, 0, source_indices(v, v.dims[0], 1)) ? x : -2;
}

void Importer::set_view(int i, std::shared_ptr<EntryView> v) {
  v->node = i;
  if (v->dims.size() <= 3 && !v->dims.empty()) {
    const Index x = materialise(i, *v);
    if (x >= 0) {
      set_output(i, 0, x);
      return;
    }
    if (x == -2) {
      return;  // the builder recorded why
    }
  }
  Tensor t;
  t.kind = Kind::view;
  t.layer = v->layer;
  t.view = std::move(v);
  set(m_g.node(i).output(0), std::move(t));
}

Index Importer::onnx_axis(int i, std::int64_t axis, Index rank, const char* what) {
  if (axis < -rank || axis >= rank) {
    invalid(i, fmt::format("{} {} is out of range for an input of rank {} (the batch, then the "
                           "per-sample dimensions)",
                           what, axis, rank));
    return -1;
  }
  return axis < 0 ? axis + rank : axis;
}

bool Importer::output_fits(int i, const std::vector<Index>& out_shape) {
  Index entries = 1;
  for (const Index d : out_shape) {
    if (d > k_max_dim / entries) {
      invalid(i, fmt::format("its output of per-sample shape {} has more than {} entries",
                             shape_text(out_shape), k_max_dim));
      return false;
    }
    entries *= d;
  }
  return true;
}

Index Importer::sample_axis(int i, const std::vector<Index>& shape) {
  const std::int64_t written = int_attr(m_g.node(i), "axis", 0);
  const Index axis = onnx_axis(i, written, static_cast<Index>(shape.size()) + 1, "axis");
  if (axis == 0) {
    unsupported(i, fmt::format("along the batch dimension (axis {})", written));
    return -1;
  }
  return axis;
}

std::vector<Index> Importer::transpose_perm(int i, Index rank, std::string_view of) {
  std::vector<Index> perm;
  if (const auto p = ints_attr(m_g.node(i), "perm")) {
    perm = *p;
  } else {
    for (Index d = rank - 1; d >= 0; --d) {
      perm.push_back(d);  // the default reverses the dimensions
    }
  }
  std::vector<Index> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  bool valid = std::cmp_equal(sorted.size(), rank);
  for (Index d = 0; valid && d < rank; ++d) {
    valid = sorted[static_cast<std::size_t>(d)] == d;
  }
  if (!valid) {
    invalid(i, fmt::format("perm [{}] is not a permutation of the {} dimensions {}",
                           fmt::join(perm, ", "), rank, of));
    return {};
  }
  return perm;
}

void Importer::transpose(int i) {
  Index x = -1;
  std::shared_ptr<const EntryView> view;
  if (!data_or_view(i, x, &view)) {
    return;
  }
  std::shared_ptr<EntryView> v =
      view ? std::make_shared<EntryView>(*view) : identity_view(x, m_builder->shape(x), i);
  const auto rank = static_cast<Index>(v->dims.size()) + 1;
  const std::vector<Index> perm =
      transpose_perm(i, rank,
                     fmt::format("of its input (the batch, then the per-sample shape {})",
                                 shape_text(v->shape())));
  if (perm.empty()) {
    return;
  }
  if (perm[0] != 0) {
    unsupported(i, fmt::format("perm [{}] moves the batch dimension", fmt::join(perm, ", ")));
    return;
  }
  std::vector<std::vector<int>> dims;
  for (Index d = 1; d < rank; ++d) {
    dims.push_back(v->dims[static_cast<std::size_t>(perm[static_cast<std::size_t>(d)] - 1)]);
  }
  v->dims = std::move(dims);
  set_view(i, std::move(v));
}

// ---------------------------------------------------------------------------------------------
// Slice, Split, Gather

void Importer::slice(int i) {
  Index x = -1;
  if (!data_input(i, 0, x)) {
    return;
  }
  SliceArgs args;
  if (!slice_args(i, args)) {
    return;
  }
  const std::vector<Index> shape = m_builder->shape(x);
  const auto rank = static_cast<Index>(shape.size()) + 1;
  const std::size_t count = args.starts.size();
  std::vector<std::pair<Index, std::vector<Index>>> picks;
  std::vector<bool> seen(static_cast<std::size_t>(rank), false);
  for (std::size_t k = 0; k < count; ++k) {
    const Index axis = onnx_axis(i, args.axes[k], rank, "axis");
    if (axis < 0) {
      return;
    }
    const std::int64_t step = args.steps[k];
    if (seen[static_cast<std::size_t>(axis)] || step == 0) {
      invalid(
          i, step == 0 ? std::string("a step of 0") : fmt::format("axis {} is sliced twice", axis));
      return;
    }
    seen[static_cast<std::size_t>(axis)] = true;
    if (axis == 0) {
      // The whole batch, as torch writes x[:, ...] when it writes the batch at all.
      if (args.starts[k] != 0 || step != 1 || args.ends[k] < k_max_dim) {
        unsupported(i, fmt::format("it slices the batch dimension ([{}:{}:{}])", args.starts[k],
                                   args.ends[k], step));
        return;
      }
      continue;
    }
    count_indices(i, shape[static_cast<std::size_t>(axis - 1)]);
    std::vector<Index> keep = slice_indices(args.starts[k], args.ends[k], step,
                                            shape[static_cast<std::size_t>(axis - 1)]);
    if (keep.empty()) {
      unsupported(i, fmt::format("an empty slice ([{}:{}:{}]) of dimension {} of per-sample shape "
                                 "{}",
                                 args.starts[k], args.ends[k], step, axis, shape_text(shape)));
      return;
    }
    picks.emplace_back(axis - 1, std::move(keep));
  }
  for (auto& [axis, keep] : picks) {
    if (!gather_along(i, x, axis, std::move(keep))) {
      return;
    }
  }
  set_output(i, 0, x);
}

void Importer::split(int i) {
  const NodeProto& n = m_g.node(i);
  Index x = -1;
  if (!data_input(i, 0, x)) {
    return;
  }
  const std::vector<Index> shape = m_builder->shape(x);
  const Index axis = sample_axis(i, shape);
  if (axis < 0) {
    return;
  }
  std::optional<std::vector<std::int64_t>> sizes;
  if (!ints_input(i, 1, "split", sizes)) {
    return;
  }
  const Index size = shape[static_cast<std::size_t>(axis - 1)];
  const int outputs = n.output_size();
  std::vector<Index> parts;
  if (sizes) {
    std::int64_t total = 0;
    bool valid = std::cmp_equal(sizes->size(), outputs);
    for (const std::int64_t s : *sizes) {
      valid = valid && s >= 0 && s <= k_max_dim;
      total += valid ? s : 0;  // at most outputs x 2^31
    }
    if (!valid || total != size) {
      invalid(i, fmt::format("split [{}] is not {} sizes adding up to dimension {} of per-sample "
                             "shape {}",
                             fmt::join(*sizes, ", "), outputs, axis, shape_text(shape)));
      return;
    }
    parts.assign(sizes->begin(), sizes->end());
  } else {
    // Equal parts; opset 18's num_outputs allows a smaller last one.
    const std::int64_t num = int_attr(n, "num_outputs", outputs);
    const Index part = (size + outputs - 1) / outputs;
    if (num != outputs || (size % outputs != 0 && attribute(n, "num_outputs") == nullptr) ||
        part * (outputs - 1) >= size) {
      invalid(i, fmt::format("dimension {} of per-sample shape {} does not split into {} parts",
                             axis, shape_text(shape), outputs));
      return;
    }
    parts.assign(static_cast<std::size_t>(outputs) - 1, part);
    parts.push_back(size - part * (outputs - 1));
  }
  Index begin = 0;
  for (int slot = 0; slot < outputs; ++slot) {
    const Index part = parts[static_cast<std::size_t>(slot)];
    if (used(i, slot)) {
      if (part == 0) {
        unsupported(i, fmt::format("its output {} is empty", slot));
        return;
      }
      count_indices(i, part);
      std::vector<Index> keep(static_cast<std::size_t>(part));
      for (Index k = 0; k < part; ++k) {
        keep[static_cast<std::size_t>(k)] = begin + k;
      }
      Index y = x;
      if (!gather_along(i, y, axis - 1, std::move(keep))) {
        return;
      }
      set_output(i, slot, y);
    }
    begin += part;
  }
}

void Importer::gather_constant(int i) {
  Index x = -1;
  if (!data_input(i, 0, x)) {
    return;
  }
  const auto idx = constant_input(i, 1);
  if (!idx) {
    return;
  }
  const std::vector<Index> shape = m_builder->shape(x);
  const Index axis = sample_axis(i, shape);
  if (axis < 0) {
    return;
  }
  if (idx->dims.size() != 1 || idx->real) {
    unsupported(i, fmt::format("indices of shape {}: pathlift gathers with a vector of integer "
                               "indices (a scalar index drops the dimension)",
                               shape_text(idx->dims)));
    return;
  }
  const Index size = shape[static_cast<std::size_t>(axis - 1)];
  std::vector<Index> keep;
  for (const Scalar& s : idx->values) {
    if (s.batch || s.i < -size || s.i >= size) {
      invalid(i, fmt::format("index {} is out of range for dimension {} of per-sample shape {}",
                             s.batch ? std::string("batch") : std::to_string(s.i), axis,
                             shape_text(shape)));
      return;
    }
    keep.push_back(s.i < 0 ? s.i + size : s.i);
  }
  if (keep.empty()) {
    unsupported(i, "no index");
    return;
  }
  if (gather_along(i, x, axis - 1, std::move(keep))) {
    set_output(i, 0, x);
  }
}

// ---------------------------------------------------------------------------------------------
// Reflect and edge paddings

void Importer::copy_pad(int i, Index x, const std::string& mode,
                        const std::vector<std::int64_t>& pads, const std::vector<Index>& axes) {
  const std::vector<Index> shape = m_builder->shape(x);
  const bool edge = mode == "edge";
  // The output size of every padded axis first: the output must be a tensor of the builder's
  // size before any index is made.
  std::vector<Index> out_shape = shape;
  for (std::size_t k = 0; k < axes.size(); ++k) {
    const std::int64_t b = pads[k];
    const std::int64_t e = pads[k + axes.size()];
    if (b == 0 && e == 0) {
      continue;
    }
    if (axes[k] == 0) {
      unsupported(i, fmt::format("pads [{}] pad the batch dimension", fmt::join(pads, ", ")));
      return;
    }
    const Index size = shape[static_cast<std::size_t>(axes[k] - 1)];
    // reflect: the entries mirrored about the first and last (at most size - 1 of them);
    // edge: the first and last repeated. Negative pads crop.
    if (!edge && (b >= size || e >= size)) {
      unsupported(i, fmt::format("reflect pads [{}] of {} or more on dimension {} of size {}: a "
                                 "reflection pads at most size - 1",
                                 fmt::join(pads, ", "), size, axes[k], size));
      return;
    }
    if (b < -k_max_dim || e < -k_max_dim || b > k_max_dim || e > k_max_dim || b + size + e < 1) {
      unsupported(i, fmt::format("pads [{}] leave {} entries on dimension {} of size {}",
                                 fmt::join(pads, ", "), b + size + e, axes[k], size));
      return;
    }
    out_shape[static_cast<std::size_t>(axes[k] - 1)] = b + size + e;
  }
  if (!output_fits(i, out_shape)) {
    return;
  }
  std::vector<std::pair<Index, std::vector<Index>>> picks;
  for (std::size_t k = 0; k < axes.size(); ++k) {
    const std::int64_t b = pads[k];
    const Index axis = axes[k] - 1;
    if (b == 0 && pads[k + axes.size()] == 0) {
      continue;
    }
    const Index size = shape[static_cast<std::size_t>(axis)];
    const Index out = out_shape[static_cast<std::size_t>(axis)];
    count_indices(i, out);
    std::vector<Index> pick(static_cast<std::size_t>(out));
    for (Index o = 0; o < out; ++o) {
      const Index j = o - b;
      pick[static_cast<std::size_t>(o)] = j < 0       ? (edge ? 0 : -j)
                                          : j >= size ? (edge ? size - 1 : 2 * (size - 1) - j)
                                                      : j;
    }
    picks.emplace_back(axis, std::move(pick));
  }
  for (auto& [axis, pick] : picks) {
    if (!gather_along(i, x, axis, std::move(pick))) {
      return;
    }
  }
  set_output(i, 0, x);
}

}  // namespace pathlift::detail
