#pragma once
// The table of layer kinds: every kind's unit (src/layers/kinds/<kind>.hpp, Kind<K>: its record
// and its rules), k_kinds (the records, in LayerKind's order) and visit_kind, the one dispatch
// from a kind to its unit. A pass that needs a rule of every kind calls
//   visit_kind(layer.kind, [&]<class K>(K) { return K::rule(...); })
// so that a kind without the rule fails to compile (docs/adding-a-layer-kind.md); the passes
// that concern only the layers with parameters call visit_param_kind, those over the plain
// kinds visit_plain_kind.

#include <fmt/format.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <type_traits>
#include <utility>

#include "pathlift/layers.hpp"
#include "src/layers/kinds/activation.hpp"
#include "src/layers/kinds/adaptive_avg_pool.hpp"
#include "src/layers/kinds/add.hpp"
#include "src/layers/kinds/avg_pool.hpp"
#include "src/layers/kinds/batch_norm.hpp"
#include "src/layers/kinds/concat.hpp"
#include "src/layers/kinds/conv.hpp"
#include "src/layers/kinds/conv_transpose.hpp"
#include "src/layers/kinds/flatten.hpp"
#include "src/layers/kinds/gather.hpp"
#include "src/layers/kinds/group_sort.hpp"
#include "src/layers/kinds/input.hpp"
#include "src/layers/kinds/interpolate.hpp"
#include "src/layers/kinds/k_max_pool.hpp"
#include "src/layers/kinds/kind.hpp"
#include "src/layers/kinds/linear.hpp"
#include "src/layers/kinds/max_pool.hpp"
#include "src/layers/kinds/scale.hpp"
#include "src/layers/kinds/sub.hpp"

namespace pathlift::detail {

/// Calls f(Kind<kind>{}) (an empty tag: f reads the unit's members through its type) and returns
/// what it returns; otherwise() for a value that is no kind. Exhaustive, with no default
/// (-Wswitch is an error): a kind appended to the enum fails to compile here until it has its
/// case and its unit.
template <class F, class G>
constexpr decltype(auto) visit_kind_or(LayerKind kind, F&& f, G&& otherwise) {
  switch (kind) {
    case LayerKind::input:
      return f(Kind<LayerKind::input>{});
    case LayerKind::linear:
      return f(Kind<LayerKind::linear>{});
    case LayerKind::conv:
      return f(Kind<LayerKind::conv>{});
    case LayerKind::max_pool:
      return f(Kind<LayerKind::max_pool>{});
    case LayerKind::avg_pool:
      return f(Kind<LayerKind::avg_pool>{});
    case LayerKind::adaptive_avg_pool:
      return f(Kind<LayerKind::adaptive_avg_pool>{});
    case LayerKind::batch_norm:
      return f(Kind<LayerKind::batch_norm>{});
    case LayerKind::activation:
      return f(Kind<LayerKind::activation>{});
    case LayerKind::add:
      return f(Kind<LayerKind::add>{});
    case LayerKind::sub:
      return f(Kind<LayerKind::sub>{});
    case LayerKind::concat:
      return f(Kind<LayerKind::concat>{});
    case LayerKind::flatten:
      return f(Kind<LayerKind::flatten>{});
    case LayerKind::gather:
      return f(Kind<LayerKind::gather>{});
    case LayerKind::conv_transpose:
      return f(Kind<LayerKind::conv_transpose>{});
    case LayerKind::scale:
      return f(Kind<LayerKind::scale>{});
    case LayerKind::k_max_pool:
      return f(Kind<LayerKind::k_max_pool>{});
    case LayerKind::group_sort:
      return f(Kind<LayerKind::group_sort>{});
    case LayerKind::interpolate:
      return f(Kind<LayerKind::interpolate>{});
  }
  return otherwise();
}

/// visit_kind_or, std::logic_error for a value that is no kind (a bug).
template <class F>
constexpr decltype(auto) visit_kind(LayerKind kind, F&& f) {
  using R = std::invoke_result_t<F&, Kind<LayerKind{}>>;
  return visit_kind_or(kind, std::forward<F>(f), []() -> R {
    throw std::logic_error("visit_kind: a value that is no layer kind");
  });
}

/// The number of layer kinds: the enum's values are 0 .. k_kind_count - 1, those visit_kind_or
/// knows.
inline constexpr std::size_t k_kind_count = [] {
  std::size_t n = 0;
  while (visit_kind_or(
      static_cast<LayerKind>(n), [](auto) { return true; }, [] { return false; })) {
    ++n;
  }
  return n;
}();

/// One record per kind, in LayerKind's declaration order (the order of the JSON names and of
/// Python's layer_kinds()).
inline constexpr auto k_kinds = []<std::size_t... I>(std::index_sequence<I...>) {
  return std::array<KindRecord, sizeof...(I)>{Kind<static_cast<LayerKind>(I)>::record...};
}
(std::make_index_sequence<k_kind_count>{});

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

/// The record of `kind` (std::logic_error for a value that is no kind: a bug).
constexpr const KindRecord& record(LayerKind kind) {
  const auto i = static_cast<std::size_t>(kind);
  if (i >= k_kinds.size()) {
    throw std::logic_error("a layer kind without a row in k_kinds (src/layers/layer_kinds.hpp)");
  }
  return k_kinds[i];
}

/// The forms of the maps' vocabulary (kinds/kind.hpp), for a pass that asks which one a kind
/// is rather than visiting it.
#define PATHLIFT_FORM_NAME(name, ...) name,
enum class Form : std::uint8_t { PATHLIFT_FORMS(PATHLIFT_FORM_NAME) };
#undef PATHLIFT_FORM_NAME

/// The call a kind's map makes: its form, and the flag the call passes (pool's max, sum's
/// negate_last; false for the others).
struct FormCall {
  Form form;
  bool flag = false;
};

constexpr FormCall form_call(LayerKind kind) {
  // One member per form (PATHLIFT_FORMS): the form, and its flag where its call has one.
#define PATHLIFT_FORM_CALL(name, ...)                            \
  static constexpr FormCall name(__VA_ARGS__ __VA_OPT__(flag)) { \
    return {Form::name __VA_OPT__(, flag)};                      \
  }
  struct Calls {
    PATHLIFT_FORMS(PATHLIFT_FORM_CALL)
  };
#undef PATHLIFT_FORM_CALL
  return visit_kind(kind, []<class K>(K) { return K::map(Calls{}); });
}

/// The form of `kind`'s map.
constexpr Form form_of(LayerKind kind) {
  return form_call(kind).form;
}

/// Whether `kind` is a sum that negates its last operand (its form: sum(true)).
constexpr bool negates_last(LayerKind kind) {
  const FormCall c = form_call(kind);
  return c.form == Form::sum && c.flag;
}

/// Whether the entries of layers of `kind` are max nodes (an order statistic of their inputs,
/// over fixed edges 1): max_pool, k_max_pool, group_sort.
constexpr bool makes_max_nodes(LayerKind kind) {
  return record(kind).has(kTraitMaxNodes);
}

/// Whether `kind` is a convolution or its adjoint: a window with parameters.
constexpr bool is_convolution(LayerKind kind) {
  return record(kind).has_parameters() && record(kind).has(kTraitWindow);
}

/// Whether layers of `kind` (of layer `ly`'s kind) read parameters from theta.
constexpr bool has_parameters(LayerKind kind) {
  return record(kind).has_parameters();
}
constexpr bool has_parameters(const Layer& ly) {
  return has_parameters(ly.kind);
}

/// The first kind with parameters and the first without (the input aside): their visits'
/// result types are the passes' (visit_param_kind, visit_plain_kind).
inline constexpr LayerKind k_a_param_kind = [] {
  for (const KindRecord& r : k_kinds) {
    if (r.has_parameters()) {
      return r.kind;
    }
  }
  throw std::logic_error("no kind has parameters");
}();
inline constexpr LayerKind k_a_plain_kind = [] {
  for (const KindRecord& r : k_kinds) {
    if (r.is_plain()) {
      return r.kind;
    }
  }
  throw std::logic_error("every kind has parameters");
}();

/// visit_kind for a pass that `pass` is only given layers with parameters: f is instantiated
/// for those kinds only (ParamMaps: the four parameter forms); std::logic_error naming the pass
/// and the layer for any other (a bug, not an input error).
template <class F>
decltype(auto) visit_param_kind(const Layer& ly, std::string_view pass, F&& f) {
  using R = std::invoke_result_t<F&, Kind<k_a_param_kind>>;
  return visit_kind(ly.kind, [&]<class K>(K k) -> R {
    if constexpr (K::record.has_parameters()) {
      return f(k);
    } else {
      throw std::logic_error(fmt::format("{}: layer '{}' of kind {} has no parameters", pass,
                                         ly.name, K::record.name));
    }
  });
}

/// visit_kind for a pass over the layers without parameters that map inputs (PlainMaps); a
/// std::logic_error naming the pass and the layer for the input or a layer with parameters.
template <class F>
decltype(auto) visit_plain_kind(const Layer& ly, std::string_view pass, F&& f) {
  using R = std::invoke_result_t<F&, Kind<k_a_plain_kind>>;
  return visit_kind(ly.kind, [&]<class K>(K k) -> R {
    if constexpr (K::record.is_plain()) {
      return f(k);
    } else {
      throw std::logic_error(fmt::format("{}: layer '{}' of kind {} is the input or has parameters",
                                         pass, ly.name, K::record.name));
    }
  });
}

}  // namespace pathlift::detail
