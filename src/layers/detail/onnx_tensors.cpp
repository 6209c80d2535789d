// The ONNX importer's readers (onnx_import.hpp): attributes, and tensors with every size checked
// before anything is read or reserved.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "pathlift/error.hpp"
#include "src/layers/detail/onnx_import.hpp"

namespace pathlift::detail {

const onnx::AttributeProto* attribute(const NodeProto& n, std::string_view name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) {
      return &a;
    }
  }
  return nullptr;
}

std::int64_t int_attr(const NodeProto& n, std::string_view name, std::int64_t fallback) {
  const auto* a = attribute(n, name);
  return a != nullptr ? a->i() : fallback;
}

double float_attr(const NodeProto& n, std::string_view name, double fallback) {
  const auto* a = attribute(n, name);
  return a != nullptr ? static_cast<double>(a->f()) : fallback;
}

std::optional<std::vector<Index>> ints_attr(const NodeProto& n, std::string_view name) {
  const auto* a = attribute(n, name);
  if (a == nullptr) {
    return std::nullopt;
  }
  return std::vector<Index>(a->ints().begin(), a->ints().end());
}

std::string string_attr(const NodeProto& n, std::string_view name, const char* fallback) {
  const auto* a = attribute(n, name);
  return a != nullptr ? a->s() : fallback;
}

std::string shape_text(const std::vector<Index>& shape) {
  return fmt::format("{{{}}}", fmt::join(shape, ", "));
}

std::string type_name(int data_type) {
  if (TensorProto::DataType_IsValid(data_type)) {
    return TensorProto::DataType_Name(static_cast<TensorProto::DataType>(data_type));
  }
  return fmt::format("{} (not an ONNX type)", data_type);
}

bool is_floating(int data_type) {
  return data_type == TensorProto::FLOAT || data_type == TensorProto::DOUBLE;
}

namespace {

/// "tensor 'w'" for messages.
std::string tensor_label(const TensorProto& t) {
  return fmt::format("tensor '{}'", printable(t.name()));
}

/// The bytes of one entry of `data_type` in raw_data, or 0 for a type without numbers.
std::size_t raw_size(int data_type) {
  switch (data_type) {
    case TensorProto::FLOAT:
    case TensorProto::INT32:
    case TensorProto::UINT32:
      return 4;
    case TensorProto::DOUBLE:
    case TensorProto::INT64:
    case TensorProto::UINT64:
      return 8;
    case TensorProto::INT16:
    case TensorProto::UINT16:
    case TensorProto::FLOAT16:
    case TensorProto::BFLOAT16:
      return 2;
    case TensorProto::INT8:
    case TensorProto::UINT8:
    case TensorProto::BOOL:
      return 1;
    default:
      return 0;
  }
}

/// The number of values in t's typed list for its type.
std::size_t list_size(const TensorProto& t) {
  switch (t.data_type()) {
    case TensorProto::FLOAT:
      return static_cast<std::size_t>(t.float_data_size());
    case TensorProto::DOUBLE:
      return static_cast<std::size_t>(t.double_data_size());
    case TensorProto::INT64:
      return static_cast<std::size_t>(t.int64_data_size());
    case TensorProto::UINT32:
    case TensorProto::UINT64:
      return static_cast<std::size_t>(t.uint64_data_size());
    default:  // the small integer types, bool, float16 and bfloat16 live in int32_data
      return static_cast<std::size_t>(t.int32_data_size());
  }
}

template <class T>
T raw_entry(const std::string& raw, std::size_t k) {
  T x;
  std::memcpy(&x, raw.data() + k * sizeof(T), sizeof(T));
  return x;
}

}  // namespace

std::vector<Index> tensor_dims(const TensorProto& t) {
  std::vector<Index> dims(t.dims().begin(), t.dims().end());
  Index n = 1;
  for (const Index d : dims) {
    if (d < 0) {
      throw FormatError(fmt::format("{} has dims {}: a dimension is negative", tensor_label(t),
                                    shape_text(dims)));
    }
    if (__builtin_mul_overflow(n, d, &n)) {
      throw FormatError(fmt::format("{} has dims {}: more entries than a 64-bit count holds",
                                    tensor_label(t), shape_text(dims)));
    }
  }
  return dims;
}

Index tensor_entries(const TensorProto& t) {
  Index n = 1;
  for (const Index d : tensor_dims(t)) {
    n *= d;  // checked by tensor_dims
  }
  return n;
}

void check_tensor_data(const TensorProto& t) {
  const Index n = tensor_entries(t);
  if (t.data_location() == TensorProto::EXTERNAL) {
    throw FormatError(fmt::format(
        "{} is stored in an external data file, which pathlift does not read", tensor_label(t)));
  }
  const std::size_t size = raw_size(t.data_type());
  if (size == 0) {
    throw FormatError(fmt::format("{} has data type {}, which holds no numbers pathlift reads",
                                  tensor_label(t), type_name(t.data_type())));
  }
  if (t.has_raw_data()) {
    std::size_t bytes = 0;
    if (__builtin_mul_overflow(static_cast<std::size_t>(n), size, &bytes) ||
        t.raw_data().size() != bytes) {
      throw FormatError(fmt::format("{} of dims {} ({}) has {} bytes of data, not {} x {}",
                                    tensor_label(t), shape_text(tensor_dims(t)),
                                    type_name(t.data_type()), t.raw_data().size(), n, size));
    }
  } else if (list_size(t) != static_cast<std::size_t>(n)) {
    throw FormatError(fmt::format("{} of dims {} ({}) has {} values, not {}", tensor_label(t),
                                  shape_text(tensor_dims(t)), type_name(t.data_type()),
                                  list_size(t), n));
  }
}

void append_floats(const TensorProto& t, std::vector<double>& out) {
  if (!is_floating(t.data_type())) {
    throw FormatError(
        fmt::format("{} has data type {}: weights must be floating point (FLOAT or "
                    "DOUBLE)",
                    tensor_label(t), type_name(t.data_type())));
  }
  check_tensor_data(t);
  const auto n = static_cast<std::size_t>(tensor_entries(t));
  out.reserve(out.size() + n);
  const bool single = t.data_type() == TensorProto::FLOAT;
  if (t.has_raw_data()) {
    for (std::size_t k = 0; k < n; ++k) {
      out.push_back(single ? static_cast<double>(raw_entry<float>(t.raw_data(), k))
                           : raw_entry<double>(t.raw_data(), k));
    }
  } else if (single) {
    for (const float x : t.float_data()) {
      out.push_back(static_cast<double>(x));
    }
  } else {
    out.insert(out.end(), t.double_data().begin(), t.double_data().end());
  }
}

std::vector<double> float_values(const TensorProto& t) {
  std::vector<double> out;
  append_floats(t, out);
  return out;
}

std::int64_t checked_integer(double v, std::string_view what) {
  // 2^63 is exactly representable; every double below it in magnitude converts.
  constexpr double k_limit = 9223372036854775808.0;
  if (!std::isfinite(v) || v != std::trunc(v) || v >= k_limit || v < -k_limit) {
    throw FormatError(fmt::format("{} is {}, not an integer in the range of int64", what, v));
  }
  return static_cast<std::int64_t>(v);
}

Constant constant_of(const TensorProto& t) {
  check_tensor_data(t);
  Constant c;
  c.dims = tensor_dims(t);
  const auto n = static_cast<std::size_t>(tensor_entries(t));
  const int type = t.data_type();
  c.values.resize(n);
  if (is_floating(type)) {
    c.real = true;
    const std::vector<double> v = float_values(t);
    for (std::size_t k = 0; k < n; ++k) {
      c.values[k].f = v[k];
    }
    return c;
  }
  if (type == TensorProto::FLOAT16 || type == TensorProto::BFLOAT16) {
    throw FormatError(fmt::format("{} has data type {}: pathlift reads FLOAT and DOUBLE constants",
                                  tensor_label(t), type_name(type)));
  }
  const std::string& raw = t.raw_data();
  const bool is_raw = t.has_raw_data();
  for (std::size_t k = 0; k < n; ++k) {
    std::int64_t x = 0;
    switch (type) {
      case TensorProto::INT64:
        x = is_raw ? raw_entry<std::int64_t>(raw, k) : t.int64_data(static_cast<int>(k));
        break;
      case TensorProto::UINT64: {
        const std::uint64_t u =
            is_raw ? raw_entry<std::uint64_t>(raw, k) : t.uint64_data(static_cast<int>(k));
        if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
          throw FormatError(fmt::format("{} entry {} is {}, beyond int64", tensor_label(t), k, u));
        }
        x = static_cast<std::int64_t>(u);
        break;
      }
      case TensorProto::UINT32:
        x = is_raw ? raw_entry<std::uint32_t>(raw, k)
                   : static_cast<std::int64_t>(t.uint64_data(static_cast<int>(k)));
        break;
      case TensorProto::INT32:
        x = is_raw ? raw_entry<std::int32_t>(raw, k) : t.int32_data(static_cast<int>(k));
        break;
      case TensorProto::INT16:
        x = is_raw ? raw_entry<std::int16_t>(raw, k) : t.int32_data(static_cast<int>(k));
        break;
      case TensorProto::UINT16:
        x = is_raw ? raw_entry<std::uint16_t>(raw, k) : t.int32_data(static_cast<int>(k));
        break;
      case TensorProto::INT8:
        x = is_raw ? raw_entry<std::int8_t>(raw, k) : t.int32_data(static_cast<int>(k));
        break;
      default:  // UINT8, BOOL
        x = is_raw ? raw_entry<std::uint8_t>(raw, k) : t.int32_data(static_cast<int>(k));
        if (type == TensorProto::BOOL) {
          x = x != 0 ? 1 : 0;
        }
        break;
    }
    c.values[k].i = x;
  }
  return c;
}

}  // namespace pathlift::detail
