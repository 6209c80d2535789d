#pragma once
// The fields a layer may have beyond kind, name and inputs (Layer's members, layers.hpp): one
// record per field (its JSON key, its member, its smallest value, whether the JSON writer
// leaves it out at its default, what it means), and the use a kind makes of it (required or
// optional). The JSON reader and writer (layers_json.cpp), layer_fields() and the docstrings of
// Python's Layer (bind_layers.cpp) are generated from these records and the kinds' lists (each
// kind's unit, kinds/*.hpp).

#include <array>
#include <cstdint>
#include <limits>
#include <string_view>
#include <variant>
#include <vector>

#include "pathlift/layers.hpp"

namespace pathlift::detail {

enum class Field : std::uint8_t {
  out_features,
  out_channels,
  groups,
  kernel,
  stride,
  padding,
  dilation,
  output_padding,
  ceil_mode,
  count_include_pad,
  output_size,
  k,
  group_size,
  descending,
  align_corners,
  scales,
  axis,
  indices,
  factor,
  activation,
  weight_offset,
  bias_offset,
};

/// The member a field is, by its type.
using FieldMember =
    std::variant<Index Layer::*, std::vector<Index> Layer::*, bool Layer::*, double Layer::*,
                 std::vector<double> Layer::*, Activation Layer::*>;

/// Everything about one field. `min` bounds an integer (or each entry of an integer list);
/// `sparse`: the writer leaves the field out at Layer's default (an empty list, false, -1).
struct FieldRecord {
  Field field;
  std::string_view key;
  FieldMember member;
  Index min;
  bool sparse;
  std::string_view doc;  ///< what it means (Python's Layer property says which kinds have it)
};

inline constexpr std::array k_fields{
    FieldRecord{Field::out_features, "out_features", &Layer::out_features, 1, false,
                "the output size"},
    FieldRecord{Field::out_channels, "out_channels", &Layer::out_channels, 1, false,
                "the output channels"},
    FieldRecord{Field::groups, "groups", &Layer::groups, 1, false, "channel groups (1 by default)"},
    FieldRecord{Field::kernel, "kernel", &Layer::kernel, 1, false,
                "one size per spatial dimension"},
    FieldRecord{Field::stride, "stride", &Layer::stride, 1, true,
                "empty for the default (1 for convolutions, the kernel for pools)"},
    FieldRecord{Field::padding, "padding", &Layer::padding, 0, true, "zero padding (empty: 0)"},
    FieldRecord{Field::dilation, "dilation", &Layer::dilation, 1, true, "empty for 1"},
    FieldRecord{Field::output_padding, "output_padding", &Layer::output_padding, 0, true,
                "PyTorch's output_padding (empty: 0)"},
    FieldRecord{Field::ceil_mode, "ceil_mode", &Layer::ceil_mode, 0, true,
                "PyTorch's ceil_mode (False by default)"},
    FieldRecord{Field::count_include_pad, "count_include_pad", &Layer::count_include_pad, 0, false,
                "divide by the window clipped to the padded input, padding included (PyTorch's)"},
    FieldRecord{Field::output_size, "output_size", &Layer::output_size, 1, false,
                "the output spatial size"},
    FieldRecord{Field::k, "k", &Layer::k, 1, false, "the k-th largest of each window (1: max)"},
    FieldRecord{Field::group_size, "group_size", &Layer::group_size, 1, false,
                "the group size along axis 0 (2: MaxMin)"},
    FieldRecord{Field::descending, "descending", &Layer::descending, 0, false,
                "largest first (False: ascending, as torch.sort)"},
    FieldRecord{Field::align_corners, "align_corners", &Layer::align_corners, 0, false,
                "PyTorch's align_corners (False by default)"},
    FieldRecord{Field::scales, "scales", &Layer::scales, 0, true,
                "PyTorch's scale_factor per spatial dimension, or empty (in / out); a list, a "
                "copy"},
    FieldRecord{Field::axis, "axis", &Layer::axis, 0, false,
                "the axis without batch (0: channels)"},
    FieldRecord{Field::indices, "indices", &Layer::indices, 0, false,
                "the input index along axis of each output index"},
    FieldRecord{Field::factor, "factor", &Layer::factor, 0, false,
                "the fixed weight of y = factor x"},
    FieldRecord{Field::activation, "activation", &Layer::activation, 0, false,
                "'identity', 'relu' or 'leaky_relu:<slope>'"},
    FieldRecord{Field::weight_offset, "weight_offset", &Layer::weight_offset, 0, false,
                "where the weight (batch_norm: a) block starts in theta; -1: none"},
    FieldRecord{Field::bias_offset, "bias_offset", &Layer::bias_offset, -1, true,
                "where the bias (batch_norm: b) block starts in theta; -1: no bias"},
};

static_assert(
    [] {
      for (std::size_t i = 0; i < k_fields.size(); ++i) {
        if (static_cast<std::size_t>(k_fields[i].field) != i) {
          return false;
        }
      }
      return true;
    }(),
    "k_fields: one row per Field, in declaration order");

constexpr const FieldRecord& field_record(Field f) {
  return k_fields[static_cast<std::size_t>(f)];
}

/// A field a kind has: required (the JSON reader and the builder insist on it) or optional
/// (Layer's default when absent).
struct FieldUse {
  Field field;
  bool required;
};

}  // namespace pathlift::detail
