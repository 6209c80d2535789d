#pragma once
// What the numeric harnesses (fuzz_metric, fuzz_rescale) read from their bytes: a small network
// (an MLP as a DAG, or a convolution as a layer graph), two parameter vectors whose entries are
// raw float64 bit patterns (every magnitude from 5e-324 to 1.8e308, zeros, infinities, NaNs)
// and the balance's options; and the checks their results share.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

#include "harness.hpp"
#include "pathlift/balance.hpp"
#include "pathlift/builtins.hpp"
#include "pathlift/error.hpp"
#include "pathlift/layers.hpp"
#include "pathlift/lifting.hpp"
#include "pathlift/model.hpp"
#include "pathlift/network.hpp"

namespace pathlift::fuzz {

/// Bytes read in order; past the end, zeros.
class ByteReader {
 public:
  ByteReader(const std::uint8_t* data, std::size_t size) : m_data(data), m_size(size) {}
  std::uint8_t byte() { return m_at < m_size ? m_data[m_at++] : 0; }
  /// A float64 of the next 8 bytes' bit pattern, or `fill` past the end.
  double raw_double(double fill) {
    if (m_at + 8 > m_size) {
      m_at = m_size;
      return fill;
    }
    double x = 0;
    std::memcpy(&x, m_data + m_at, 8);
    m_at += 8;
    return x;
  }

 private:
  const std::uint8_t* m_data;
  std::size_t m_size;
  std::size_t m_at = 0;
};

struct NumericCase {
  Model model;
  std::vector<double> theta;
  std::vector<double> theta2;
  BalanceOptions options;
};

/// byte 0: bit 0 picks a layer graph (input (1, 3 + bits 1-2), conv of kernel 2 with 1 + bit 3
/// channels, ReLU, flatten, linear to 1 + bit 4 outputs) or a DAG (an MLP with 1 + bits 1-2
/// inputs, bits 3-4 hidden layers of 1 + (next byte's) 2 bits each, 1 + bit 5 outputs, a bias
/// unless bit 6); byte 1: the hidden widths; byte 2: max_sweeps; then the tolerance's 8 bytes,
/// theta's and theta2's entries (8 bytes each; past the end, 1 + k / 4 and its half).
inline NumericCase numeric_case(const std::uint8_t* data, std::size_t size) {
  ByteReader in(data, size);
  const std::uint8_t shape = in.byte();
  const std::uint8_t widths = in.byte();
  BalanceOptions options;
  options.max_sweeps = in.byte() % 64;
  options.tolerance = in.raw_double(1e-10);
  Model model = [&] {
    if ((shape & 1) != 0) {
      LayerGraph g;
      const Index length = 3 + ((shape >> 1) & 3);
      const Index channels = 1 + ((shape >> 3) & 1);
      const Index outputs = 1 + ((shape >> 4) & 1);
      g.input_shape = {1, length};
      Layer input;
      input.name = "input";
      Layer conv;
      conv.kind = LayerKind::conv;
      conv.name = "conv";
      conv.inputs = {0};
      conv.out_channels = channels;
      conv.kernel = {2};
      conv.weight_offset = 0;
      conv.bias_offset = 2 * channels;
      Layer relu;
      relu.kind = LayerKind::activation;
      relu.name = "relu";
      relu.inputs = {1};
      relu.activation = Activation::relu();
      Layer flatten;
      flatten.kind = LayerKind::flatten;
      flatten.name = "flatten";
      flatten.inputs = {2};
      Layer fc;
      fc.kind = LayerKind::linear;
      fc.name = "fc";
      fc.inputs = {3};
      fc.out_features = outputs;
      fc.weight_offset = 3 * channels;
      fc.bias_offset = fc.weight_offset + outputs * channels * (length - 1);
      g.layers = {input, conv, relu, flatten, fc};
      g.outputs = {4};
      g.num_params = fc.bias_offset + outputs;
      return Model(std::move(g));
    }
    std::vector<Index> hidden;
    for (int l = 0; l < ((shape >> 3) & 3); ++l) {
      hidden.push_back(1 + ((widths >> (2 * l)) & 3));
    }
    return Model(
        feed_forward(1 + ((shape >> 1) & 3), hidden, 1 + ((shape >> 5) & 1), (shape & 0x40) == 0));
  }();
  const auto d = static_cast<std::size_t>(model.num_params());
  std::vector<double> theta(d);
  std::vector<double> theta2(d);
  for (std::size_t k = 0; k < d; ++k) {
    theta[k] = in.raw_double(1.0 + static_cast<double>(k) / 4);
  }
  for (std::size_t k = 0; k < d; ++k) {
    theta2[k] = in.raw_double(theta[k] / 2);
  }
  return {std::move(model), std::move(theta), std::move(theta2), options};
}

/// Runs f(). A bad theta or bad options may make it throw std::invalid_argument naming
/// `names` (one of them: "theta", "theta2", "tolerance", "max_sweeps"), and a result beyond
/// float64 a RangeError, TooLarge beyond the memory limit; the message not empty. Returns
/// whether f completed. Anything else (another exception, an empty message) is a finding.
template <class F>
bool expect_numeric(F&& f, std::initializer_list<std::string_view> names) {
  try {
    f();
    return true;
  } catch (const RangeError& e) {
    if (std::string_view(e.what()).empty()) {
      fail("RangeError without a message", "");
    }
  } catch (const TooLarge& e) {
    if (std::string_view(e.what()).empty()) {
      fail("TooLarge without a message", "");
    }
  } catch (const std::invalid_argument& e) {
    const std::string_view message = e.what();
    if (std::none_of(names.begin(), names.end(), [&](std::string_view n) {
          return message.find(n) != std::string_view::npos;
        })) {
      fail("the refusal names no argument", message);
    }
  } catch (const std::exception& e) {
    fail(typeid(e).name(), e.what());
  }
  return false;
}

/// Whether every entry is finite with its magnitude in [lo, hi], or 0.
inline bool moderate(std::span<const double> x, double lo, double hi) {
  return std::all_of(x.begin(), x.end(), [&](double v) {
    return v == 0 || (std::isfinite(v) && std::fabs(v) >= lo && std::fabs(v) <= hi);
  });
}

}  // namespace pathlift::fuzz
