// The ONNX importer's readers (onnx_import.hpp): attributes, and tensors with every size checked
// before anything is read or reserved.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "pathlift/error.hpp"
#include "src/core/checked.hpp"
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

std::string constant_text(const Constant& c) {
  std::string out = "[";
  for (std::size_t k = 0; k < c.values.size(); ++k) {
    const Scalar& v = c.values[k];
    out += (k > 0 ? ", " : "") + (v.batch  ? std::string("batch")
                                  : c.real ? fmt::format("{}", v.f)
                                           : std::to_string(v.i));
  }
  return out + "]";
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

/// The raw bytes read at a time (a tensor's raw data is never held whole), and the values
/// read_floats hands over at a time.
constexpr std::size_t k_raw_block = std::size_t{1} << 16;
constexpr std::size_t k_float_block = k_raw_block / sizeof(float);

/// f(k, x) for the entries k = 0 .. n-1 of t's raw data read as T, in blocks of k_raw_block
/// bytes.
template <class T, class F>
void for_raw_entries(const OnnxModel& model, const TensorProto& t, std::size_t n, F&& f) {
  constexpr std::size_t per_block = k_raw_block / sizeof(T);
  std::vector<char> block(std::min(n, per_block) * sizeof(T));
  for (std::size_t first = 0; first < n; first += per_block) {
    const std::size_t count = std::min(per_block, n - first);
    model.read_raw(t, first * sizeof(T), count * sizeof(T), block.data());
    for (std::size_t i = 0; i < count; ++i) {
      T x;
      std::memcpy(&x, block.data() + i * sizeof(T), sizeof(T));
      f(first + i, x);
    }
  }
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
    if (mul_overflows(n, d, n)) {
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

void check_tensor_data(const OnnxModel& model, const TensorProto& t) {
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
  if (model.has_raw_data(t)) {
    std::size_t bytes = 0;
    if (mul_overflows(static_cast<std::size_t>(n), size, bytes) || model.raw_size(t) != bytes) {
      throw FormatError(fmt::format("{} of dims {} ({}) has {} bytes of data, not {} x {}",
                                    tensor_label(t), shape_text(tensor_dims(t)),
                                    type_name(t.data_type()), model.raw_size(t), n, size));
    }
  } else if (list_size(t) != static_cast<std::size_t>(n)) {
    throw FormatError(fmt::format("{} of dims {} ({}) has {} values, not {}", tensor_label(t),
                                  shape_text(tensor_dims(t)), type_name(t.data_type()),
                                  list_size(t), n));
  }
}

namespace {

/// Checks that t is a FLOAT or DOUBLE tensor whose data holds its entries; their number.
std::size_t checked_floats(const OnnxModel& model, const TensorProto& t) {
  if (!is_floating(t.data_type())) {
    throw FormatError(
        fmt::format("{} has data type {}: weights must be floating point (FLOAT or "
                    "DOUBLE)",
                    tensor_label(t), type_name(t.data_type())));
  }
  check_tensor_data(model, t);
  return static_cast<std::size_t>(tensor_entries(t));
}

}  // namespace

void read_floats(const OnnxModel& model, const TensorProto& t,
                 const std::function<void(std::size_t, std::span<const double>)>& visit) {
  const std::size_t n = checked_floats(model, t);
  const bool single = t.data_type() == TensorProto::FLOAT;
  if (!model.has_raw_data(t)) {
    if (single) {
      // Converted in blocks, as the raw data is.
      std::vector<double> block(std::min(n, k_float_block));
      for (std::size_t first = 0; first < n; first += k_float_block) {
        const std::size_t count = std::min(k_float_block, n - first);
        for (std::size_t i = 0; i < count; ++i) {
          block[i] = static_cast<double>(t.float_data(static_cast<int>(first + i)));
        }
        visit(first, {block.data(), count});
      }
    } else {
      for (std::size_t first = 0; first < n; first += k_float_block) {
        visit(first, {t.double_data().data() + first, std::min(k_float_block, n - first)});
      }
    }
    return;
  }
  std::vector<double> block(std::min(n, k_float_block));
  std::size_t first = 0;
  std::size_t filled = 0;
  const auto put = [&](std::size_t k, double x) {
    if (filled == block.size()) {
      visit(first, {block.data(), filled});
      first = k;
      filled = 0;
    }
    block[filled++] = x;
  };
  if (single) {
    for_raw_entries<float>(model, t, n, [&](std::size_t k, float x) { put(k, x); });
  } else {
    for_raw_entries<double>(model, t, n, put);
  }
  if (filled > 0) {
    visit(first, {block.data(), filled});
  }
}

void append_floats(const OnnxModel& model, const TensorProto& t, std::vector<double>& out) {
  out.reserve(out.size() + checked_floats(model, t));
  read_floats(model, t, [&](std::size_t /*first*/, std::span<const double> values) {
    out.insert(out.end(), values.begin(), values.end());
  });
}

std::vector<double> float_values(const OnnxModel& model, const TensorProto& t) {
  std::vector<double> out;
  append_floats(model, t, out);
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

namespace {

/// The entries of t's raw data, of type T, as the integers of c.
template <class T>
void raw_integers(const OnnxModel& model, const TensorProto& t, Constant& c) {
  for_raw_entries<T>(model, t, c.values.size(), [&](std::size_t k, T x) {
    if constexpr (std::is_same_v<T, std::uint64_t>) {
      if (x > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        throw FormatError(fmt::format("{} entry {} is {}, beyond int64", tensor_label(t), k, x));
      }
    }
    c.values[k].i = static_cast<std::int64_t>(x);
  });
}

/// The entries of t's typed list as the integers of c.
void listed_integers(const TensorProto& t, Constant& c) {
  for (std::size_t k = 0; k < c.values.size(); ++k) {
    const int at = static_cast<int>(k);
    std::int64_t x = 0;
    switch (t.data_type()) {
      case TensorProto::INT64:
        x = t.int64_data(at);
        break;
      case TensorProto::UINT64: {
        const std::uint64_t u = t.uint64_data(at);
        if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
          throw FormatError(fmt::format("{} entry {} is {}, beyond int64", tensor_label(t), k, u));
        }
        x = static_cast<std::int64_t>(u);
        break;
      }
      case TensorProto::UINT32:
        x = static_cast<std::int64_t>(t.uint64_data(at));
        break;
      default:  // the small integer types and bool live in int32_data
        x = t.int32_data(at);
        break;
    }
    c.values[k].i = x;
  }
}

}  // namespace

Constant constant_of(const OnnxModel& model, const TensorProto& t) {
  check_tensor_data(model, t);
  Constant c;
  c.dims = tensor_dims(t);
  const auto n = static_cast<std::size_t>(tensor_entries(t));
  const int type = t.data_type();
  c.values.resize(n);
  if (is_floating(type)) {
    c.real = true;
    read_floats(model, t, [&](std::size_t first, std::span<const double> values) {
      for (std::size_t k = 0; k < values.size(); ++k) {
        c.values[first + k].f = values[k];
      }
    });
    return c;
  }
  if (type == TensorProto::FLOAT16 || type == TensorProto::BFLOAT16) {
    throw FormatError(fmt::format("{} has data type {}: pathlift reads FLOAT and DOUBLE constants",
                                  tensor_label(t), type_name(type)));
  }
  if (!model.has_raw_data(t)) {
    listed_integers(t, c);
  } else {
    switch (type) {
      case TensorProto::INT64:
        raw_integers<std::int64_t>(model, t, c);
        break;
      case TensorProto::UINT64:
        raw_integers<std::uint64_t>(model, t, c);
        break;
      case TensorProto::UINT32:
        raw_integers<std::uint32_t>(model, t, c);
        break;
      case TensorProto::INT32:
        raw_integers<std::int32_t>(model, t, c);
        break;
      case TensorProto::INT16:
        raw_integers<std::int16_t>(model, t, c);
        break;
      case TensorProto::UINT16:
        raw_integers<std::uint16_t>(model, t, c);
        break;
      case TensorProto::INT8:
        raw_integers<std::int8_t>(model, t, c);
        break;
      default:  // UINT8, BOOL
        raw_integers<std::uint8_t>(model, t, c);
        break;
    }
  }
  if (type == TensorProto::BOOL) {
    for (Scalar& x : c.values) {
      x.i = x.i != 0 ? 1 : 0;
    }
  }
  return c;
}

}  // namespace pathlift::detail
