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

/// The layer kinds without parameters that map their inputs' entries (every kind but the input
/// and the parameter kinds): the passes over them (the layer DP's plain maps) switch over
/// PlainKind.
enum class PlainKind : std::uint8_t {
  max_pool,
  avg_pool,
  adaptive_avg_pool,
  activation,
  add,
  sub,
  concat,
  flatten,
  gather,
  scale,
  k_max_pool,
  group_sort,
  interpolate
};

/// A kind's place among the passes: its ParamKind, its PlainKind, or neither (the input).
struct KindSort {
  std::optional<ParamKind> param;
  std::optional<PlainKind> plain;
};

/// The one switch that sorts every kind (docs/adding-a-layer-kind.md).
constexpr KindSort sort_kind(LayerKind kind) {
  switch (kind) {
    case LayerKind::input:
      return {};
    case LayerKind::linear:
      return {ParamKind::linear, {}};
    case LayerKind::conv:
      return {ParamKind::conv, {}};
    case LayerKind::conv_transpose:
      return {ParamKind::conv_transpose, {}};
    case LayerKind::batch_norm:
      return {ParamKind::batch_norm, {}};
    case LayerKind::max_pool:
      return {{}, PlainKind::max_pool};
    case LayerKind::avg_pool:
      return {{}, PlainKind::avg_pool};
    case LayerKind::adaptive_avg_pool:
      return {{}, PlainKind::adaptive_avg_pool};
    case LayerKind::activation:
      return {{}, PlainKind::activation};
    case LayerKind::add:
      return {{}, PlainKind::add};
    case LayerKind::sub:
      return {{}, PlainKind::sub};
    case LayerKind::concat:
      return {{}, PlainKind::concat};
    case LayerKind::flatten:
      return {{}, PlainKind::flatten};
    case LayerKind::gather:
      return {{}, PlainKind::gather};
    case LayerKind::scale:
      return {{}, PlainKind::scale};
    case LayerKind::k_max_pool:
      return {{}, PlainKind::k_max_pool};
    case LayerKind::group_sort:
      return {{}, PlainKind::group_sort};
    case LayerKind::interpolate:
      return {{}, PlainKind::interpolate};
  }
  return {};
}

/// The parameter kind of `kind`, or nullopt for a kind without parameters.
constexpr std::optional<ParamKind> param_kind(LayerKind kind) {
  return sort_kind(kind).param;
}

/// The plain kind of `kind`, or nullopt for the input and the parameter kinds.
constexpr std::optional<PlainKind> plain_kind(LayerKind kind) {
  return sort_kind(kind).plain;
}

/// Whether the entries of layers of `kind` are max nodes (an order statistic of their inputs,
/// over fixed edges 1): max_pool, k_max_pool, group_sort.
constexpr bool makes_max_nodes(LayerKind kind) {
  return kind == LayerKind::max_pool || kind == LayerKind::k_max_pool ||
         kind == LayerKind::group_sort;
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

/// The plain kind of layer `ly`, which `pass` is only given layers without parameters that map
/// inputs (std::logic_error naming the pass and the layer otherwise: a bug).
inline PlainKind plain_kind_of(const Layer& ly, std::string_view pass) {
  if (const auto k = plain_kind(ly.kind)) {
    return *k;
  }
  throw std::logic_error(fmt::format("{}: layer '{}' of kind {} is the input or has parameters",
                                     pass, ly.name, to_string(ly.kind)));
}

}  // namespace pathlift::detail
