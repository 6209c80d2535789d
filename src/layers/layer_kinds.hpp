#pragma once
// The table of layer kinds: every kind's unit (src/layers/kinds/<kind>.hpp, Kind<K>: its spec
// and its rules), k_kinds (the records: each unit's spec joined to its entry of the list
// pathlift/layer_kinds.def, in LayerKind's order) and visit_kind, the one dispatch from a kind to
// its unit. All three are made from the list, which is the one place that names the kinds. A
// pass that needs a rule of every kind calls
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
#include "src/layers/kinds/kind.hpp"
// Every kind's unit: one #include of src/layers/kinds/<name>.hpp per entry of the list,
// generated from it by src/CMakeLists.txt (a kind in the list without its unit file fails here).
#include "src/layers/kind_units.inc"

namespace pathlift::detail {

/// Calls f(Kind<kind>{}) (an empty tag: f reads the unit's members through its type) and returns
/// what it returns; otherwise() for a value that is no kind. A case per entry of the list, with
/// no default (-Wswitch is an error): a kind in the list fails to compile here until its unit
/// specializes Kind.
template <class F, class G>
constexpr decltype(auto) visit_kind_or(LayerKind kind, F&& f, G&& otherwise) {
  switch (kind) {
#define PATHLIFT_LAYER_KIND(name, description) \
  case LayerKind::name:                        \
    return f(Kind<LayerKind::name>{});
#include "pathlift/layer_kinds.def"
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

/// The unit's kind: kind_of_unit<Kind<K>> is K.
template <class Unit>
inline constexpr LayerKind kind_of_unit = LayerKind{};
template <LayerKind K>
inline constexpr LayerKind kind_of_unit<Kind<K>> = K;

/// One record per kind, in LayerKind's declaration order (the order of the JSON names and of
/// Python's layer_kinds()): the list's entry joined to its unit's spec.
inline constexpr std::array k_kinds{
#define PATHLIFT_LAYER_KIND(name, description) \
  KindRecord{Kind<LayerKind::name>::spec, LayerKind::name, #name, description},
#include "pathlift/layer_kinds.def"
};

// What the passes assume of the kinds, checked once here.
static_assert(
    [] {
      // visit_kind_or reaches the unit of each kind, and only the kinds
      const auto unit = [](auto u) { return kind_of_unit<decltype(u)>; };
      for (std::size_t i = 0; i < k_kinds.size(); ++i) {
        const KindRecord& r = k_kinds[i];
        if (static_cast<std::size_t>(r.kind) != i ||
            visit_kind_or(r.kind, unit, [] { return LayerKind{}; }) != r.kind) {
          return false;
        }
      }
      return !visit_kind_or(
          static_cast<LayerKind>(k_kinds.size()), [](auto) { return true; }, [] { return false; });
    }(),
    "k_kinds: one row per LayerKind, in declaration order, each visiting its own unit");
static_assert(
    [] {
      for (std::size_t i = 0; i < k_kinds.size(); ++i) {
        const KindRecord& r = k_kinds[i];
        if (r.name.empty() || r.doc.empty() || r.min_inputs < 1 || r.min_inputs > r.max_inputs ||
            (r.has(Field::bias_offset) && !r.has_parameters())) {
          return false;
        }
        for (std::size_t j = 0; j < i; ++j) {
          if (k_kinds[j].name == r.name) {
            return false;
          }
        }
      }
      return true;
    }(),
    "k_kinds: every kind has a name of its own and a description, takes 1 <= min_inputs <= "
    "max_inputs inputs, and has a bias only with a weight");
static_assert(k_kinds[0].kind == LayerKind::input,
              "the input is kind 0, LayerKind{} (Layer's default kind, layer 0's kind)");

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
    if constexpr (K::spec.has_parameters()) {
      return f(k);
    } else {
      throw std::logic_error(fmt::format("{}: layer '{}' of kind {} has no parameters", pass,
                                         ly.name, record(kind_of_unit<K>).name));
    }
  });
}

/// visit_kind for a pass over the layers without parameters that map inputs (PlainMaps); a
/// std::logic_error naming the pass and the layer for the input or a layer with parameters.
template <class F>
decltype(auto) visit_plain_kind(const Layer& ly, std::string_view pass, F&& f) {
  using R = std::invoke_result_t<F&, Kind<k_a_plain_kind>>;
  return visit_kind(ly.kind, [&]<class K>(K k) -> R {
    if constexpr (record(kind_of_unit<K>).is_plain()) {
      return f(k);
    } else {
      throw std::logic_error(fmt::format("{}: layer '{}' of kind {} is the input or has parameters",
                                         pass, ly.name, record(kind_of_unit<K>).name));
    }
  });
}

}  // namespace pathlift::detail
