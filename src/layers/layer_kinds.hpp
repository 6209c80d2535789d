#pragma once
// The layer kinds' records (k_kinds: one row per kind, everything static about it: its JSON
// name, its sort among the passes, its traits, its JSON fields) and the sorts the passes switch
// over: ParamKind for the passes that concern only the layers with parameters (the layer DP's
// parameter maps and edge products, the builder's parameter blocks, the symmetries'
// constraints), PlainKind for those over the kinds without parameters; a new kind's sort makes
// the compiler list each of them (docs/adding-a-layer-kind.md).

#include <fmt/format.h>

#include <array>
#include <cstddef>
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

/// The traits a layer kind may have (KindRecord::traits, a mask).
enum KindTrait : std::uint8_t {
  kNoTrait = 0,
  kTraitSum = 1,          ///< its entries are pending sums of terms (the unroller)
  kTraitWindow = 2,       ///< a window over a {C, L} or {C, H, W} input (layers_geometry.hpp)
  kTraitMaxNodes = 4,     ///< its entries are order statistics: DAG nodes of activation max:<k>
  kTraitReadsValues = 8,  ///< its terms read its operand's entries as node values
  kTraitView = 16,        ///< its entries are other layers' entries: no node, no edge
};

/// Everything static about a layer kind, one row of k_kinds: its JSON name, its sort among the
/// passes (its ParamKind, its PlainKind, or neither: the input), its traits and its JSON fields.
/// The kind's rules with code are in the passes that switch over LayerKind, ParamKind or
/// PlainKind (docs/adding-a-layer-kind.md).
struct KindRecord {
  LayerKind kind;
  std::string_view name;  ///< the JSON name: to_string, parse_layer_kind, layer_kinds()
  std::optional<ParamKind> param;
  std::optional<PlainKind> plain;
  unsigned traits;        ///< KindTrait values or-ed
  std::string_view keys;  ///< its JSON fields beyond kind, name and inputs, space-separated

  [[nodiscard]] constexpr bool has(KindTrait t) const { return (traits & t) != 0; }
};

/// One row per kind, in LayerKind's declaration order (the order of the JSON names and of
/// Python's layer_kinds()).
inline constexpr std::array k_kinds{
    KindRecord{LayerKind::input, "input", {}, {}, kNoTrait, ""},
    KindRecord{LayerKind::linear,
               "linear",
               ParamKind::linear,
               {},
               kTraitSum | kTraitReadsValues,
               "out_features weight_offset bias_offset"},
    KindRecord{LayerKind::conv,
               "conv",
               ParamKind::conv,
               {},
               kTraitSum | kTraitWindow | kTraitReadsValues,
               "out_channels kernel stride padding dilation groups weight_offset bias_offset"},
    KindRecord{LayerKind::max_pool,
               "max_pool",
               {},
               PlainKind::max_pool,
               kTraitWindow | kTraitMaxNodes | kTraitReadsValues,
               "kernel stride padding dilation ceil_mode"},
    KindRecord{LayerKind::avg_pool,
               "avg_pool",
               {},
               PlainKind::avg_pool,
               kTraitSum | kTraitWindow | kTraitReadsValues,
               "kernel stride padding dilation ceil_mode count_include_pad"},
    KindRecord{LayerKind::adaptive_avg_pool,
               "adaptive_avg_pool",
               {},
               PlainKind::adaptive_avg_pool,
               kTraitSum | kTraitWindow | kTraitReadsValues,
               "output_size"},
    KindRecord{LayerKind::batch_norm,
               "batch_norm",
               ParamKind::batch_norm,
               {},
               kTraitSum | kTraitReadsValues,
               "weight_offset bias_offset"},
    KindRecord{
        LayerKind::activation, "activation", {}, PlainKind::activation, kNoTrait, "activation"},
    KindRecord{LayerKind::add, "add", {}, PlainKind::add, kTraitSum, ""},
    KindRecord{LayerKind::sub, "sub", {}, PlainKind::sub, kTraitSum, ""},
    KindRecord{LayerKind::concat, "concat", {}, PlainKind::concat, kTraitView, "axis"},
    KindRecord{LayerKind::flatten, "flatten", {}, PlainKind::flatten, kTraitView, ""},
    KindRecord{LayerKind::gather, "gather", {}, PlainKind::gather, kTraitView, "axis indices"},
    KindRecord{LayerKind::conv_transpose,
               "conv_transpose",
               ParamKind::conv_transpose,
               {},
               kTraitSum | kTraitWindow | kTraitReadsValues,
               "out_channels kernel stride padding dilation groups output_padding weight_offset "
               "bias_offset"},
    KindRecord{
        LayerKind::scale, "scale", {}, PlainKind::scale, kTraitSum | kTraitReadsValues, "factor"},
    KindRecord{LayerKind::k_max_pool,
               "k_max_pool",
               {},
               PlainKind::k_max_pool,
               kTraitWindow | kTraitMaxNodes | kTraitReadsValues,
               "kernel stride padding dilation ceil_mode k"},
    KindRecord{LayerKind::group_sort,
               "group_sort",
               {},
               PlainKind::group_sort,
               kTraitMaxNodes | kTraitReadsValues,
               "group_size descending"},
    KindRecord{LayerKind::interpolate,
               "interpolate",
               {},
               PlainKind::interpolate,
               kTraitSum | kTraitReadsValues,
               "output_size align_corners scales"},
};

static_assert(
    [] {
      for (std::size_t i = 0; i < k_kinds.size(); ++i) {
        if (static_cast<std::size_t>(k_kinds[i].kind) != i) {
          return false;
        }
      }
      return true;
    }(),
    "k_kinds: one row per LayerKind, in declaration order");

/// Whether `kind` is a declared LayerKind. Exhaustive, with no default (-Wswitch is an error): a
/// kind appended to the enum fails to compile here until it has its case, and then the
/// static_assert below until it has its row in k_kinds.
constexpr bool is_declared(LayerKind kind) {
  switch (kind) {
    case LayerKind::input:
    case LayerKind::linear:
    case LayerKind::conv:
    case LayerKind::max_pool:
    case LayerKind::avg_pool:
    case LayerKind::adaptive_avg_pool:
    case LayerKind::batch_norm:
    case LayerKind::activation:
    case LayerKind::add:
    case LayerKind::sub:
    case LayerKind::concat:
    case LayerKind::flatten:
    case LayerKind::gather:
    case LayerKind::conv_transpose:
    case LayerKind::scale:
    case LayerKind::k_max_pool:
    case LayerKind::group_sort:
    case LayerKind::interpolate:
      return true;
  }
  return false;
}

static_assert(!is_declared(static_cast<LayerKind>(k_kinds.size())),
              "k_kinds: a LayerKind without a row (src/layers/layer_kinds.hpp)");

/// The record of `kind` (std::logic_error for a value that is no kind: a bug).
constexpr const KindRecord& record(LayerKind kind) {
  const auto i = static_cast<std::size_t>(kind);
  if (i >= k_kinds.size()) {
    throw std::logic_error("a layer kind without a row in k_kinds (src/layers/layer_kinds.hpp)");
  }
  return k_kinds[i];
}

/// The parameter kind of `kind`, or nullopt for a kind without parameters.
constexpr std::optional<ParamKind> param_kind(LayerKind kind) {
  return record(kind).param;
}

/// The plain kind of `kind`, or nullopt for the input and the parameter kinds.
constexpr std::optional<PlainKind> plain_kind(LayerKind kind) {
  return record(kind).plain;
}

/// Whether the entries of layers of `kind` are max nodes (an order statistic of their inputs,
/// over fixed edges 1): max_pool, k_max_pool, group_sort.
constexpr bool makes_max_nodes(LayerKind kind) {
  return record(kind).has(kTraitMaxNodes);
}

/// Whether `kind` is a convolution (conv, conv_transpose): a window with parameters.
constexpr bool is_convolution(LayerKind kind) {
  return record(kind).param.has_value() && record(kind).has(kTraitWindow);
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
