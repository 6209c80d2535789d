#pragma once
// Layer kinds sorted for the passes that concern only the layers with parameters (the layer
// DP's parameter maps and edge products, the builder's parameter blocks, the symmetries'
// constraints): they switch over ParamKind, so a new parameter kind makes the compiler list
// each of them, and a kind without parameters touches only param_kind()
// (docs/adding-a-layer-kind.md).

#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "pathlift/layers.hpp"

namespace pathlift::detail {

/// The layer kinds that read parameters from theta (weight and bias blocks).
enum class ParamKind : std::uint8_t { linear, conv, conv_transpose, batch_norm };

/// The parameter kind of `kind`, or nullopt for a kind without parameters: the one switch that
/// sorts every kind by its parameters.
constexpr std::optional<ParamKind> param_kind(LayerKind kind) {
  switch (kind) {
    case LayerKind::linear:
      return ParamKind::linear;
    case LayerKind::conv:
      return ParamKind::conv;
    case LayerKind::conv_transpose:
      return ParamKind::conv_transpose;
    case LayerKind::batch_norm:
      return ParamKind::batch_norm;
    case LayerKind::input:
    case LayerKind::max_pool:
    case LayerKind::avg_pool:
    case LayerKind::adaptive_avg_pool:
    case LayerKind::activation:
    case LayerKind::add:
    case LayerKind::sub:
    case LayerKind::concat:
    case LayerKind::flatten:
    case LayerKind::gather:
    case LayerKind::scale:
      return std::nullopt;
  }
  return std::nullopt;
}

/// Whether layers of `kind` (of layer `ly`'s kind) read parameters from theta.
constexpr bool has_parameters(LayerKind kind) {
  return param_kind(kind).has_value();
}
constexpr bool has_parameters(const Layer& ly) {
  return has_parameters(ly.kind);
}

/// The parameter kind of layer `ly`, which `pass` is only given layers with parameters
/// (std::logic_error naming the pass and the layer otherwise: a bug, not an input error).
inline ParamKind param_kind_of(const Layer& ly, std::string_view pass) {
  if (const auto k = param_kind(ly.kind)) {
    return *k;
  }
  throw std::logic_error(fmt::format("{}: layer '{}' of kind {} has no parameters", pass, ly.name,
                                     to_string(ly.kind)));
}

}  // namespace pathlift::detail
