#pragma once
// A layer kind is one entry of the list pathlift/layer_kinds.def (its name, the JSON name, and
// its one-line description) and one unit: `Kind<LayerKind::x>`, the one file
// src/layers/kinds/x.hpp, holds everything else specific to the kind (its spec: traits, inputs,
// fields; its rule: the output shape it checks and returns; its map: the form it is, which every
// pass computing through the layers visits). The table (src/layers/layer_kinds.hpp) includes
// every unit, joins each spec to its entry of the list into the kind's record, and dispatches
// on a kind once, by visit_kind; a kind without a rule a pass asks for fails to compile there.
// docs/adding-a-layer-kind.md lists the steps.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "pathlift/layers.hpp"
#include "src/layers/kinds/fields.hpp"

namespace pathlift::detail {

class LayerChecker;

/// The traits a layer kind may have (KindSpec::traits, a mask).
enum KindTrait : std::uint8_t {
  kNoTrait = 0,
  kTraitSum = 1,          ///< its entries are pending sums of terms (the unroller)
  kTraitWindow = 2,       ///< a window over a {C, L} or {C, H, W} input (layers_geometry.hpp)
  kTraitMaxNodes = 4,     ///< its entries are order statistics: DAG nodes of activation max:<k>
  kTraitReadsValues = 8,  ///< its terms read its operand's entries as node values
  kTraitView = 16,        ///< its entries are other layers' entries: no node, no edge
};

/// Any number of inputs (KindSpec::max_inputs).
inline constexpr std::size_t k_any_inputs = SIZE_MAX;

/// What a kind's unit says of it: its traits, how many inputs it takes and its fields beyond
/// kind, name and inputs (the keys its JSON may have). A kind with the field weight_offset has
/// parameters (blocks of theta). By default: no trait, one input, no field.
struct KindSpec {
  unsigned traits = kNoTrait;  ///< KindTrait values or-ed
  std::size_t min_inputs = 1;
  std::size_t max_inputs = 1;
  std::span<const FieldUse> fields{};

  [[nodiscard]] constexpr bool has(KindTrait t) const { return (traits & t) != 0; }
  /// Whether the kind has field f (required or not).
  [[nodiscard]] constexpr bool has(Field f) const {
    for (const FieldUse& u : fields) {
      if (u.field == f) {
        return true;
      }
    }
    return false;
  }
  /// Whether layers of the kind read parameters from theta (weight and bias blocks).
  [[nodiscard]] constexpr bool has_parameters() const { return has(Field::weight_offset); }
  [[nodiscard]] constexpr bool requires_field(Field f) const {
    for (const FieldUse& u : fields) {
      if (u.field == f) {
        return u.required;
      }
    }
    return false;
  }
};

/// Everything static about a layer kind: its unit's spec, and its entry of the list
/// pathlift/layer_kinds.def (the table, layer_kinds.hpp, joins them). Every kind but the input
/// and those with parameters is plain (it maps its inputs' entries with fixed weights, or shows
/// them).
struct KindRecord : KindSpec {
  LayerKind kind;
  std::string_view name;  ///< the JSON name: to_string, parse_layer_kind, layer_kinds()
  std::string_view doc;   ///< what a layer of the kind is, in one line (describe())

  /// Whether the kind is neither the input nor a kind with parameters.
  [[nodiscard]] constexpr bool is_plain() const {
    return !has_parameters() && kind != LayerKind::input;
  }
};

/// A kind's unit: each kind specializes it in src/layers/kinds/<kind>.hpp with
///   static constexpr KindSpec spec;                             its spec
///   static std::vector<Index> shape(const LayerChecker& c);     its rule: checks the layer
///                                                               against its inputs' shapes
///                                                               (c.fail on a problem) and
///                                                               returns its output shape
///   template <class V> static decltype(auto) map(V&& v);        the map it is, as one call of
///                                                               the vocabulary below
///
/// The vocabulary of maps. Every pass that computes through the layers (the unroller's bounds,
/// liveness and terms; the layer DP's forward, transposed and edge-product maps, its position
/// classes and cost; the entry graph; the symmetries) is a visitor with one member per form,
/// and a kind's `map` calls the one that it is:
///   v.input()                 the data (layer 0)
///   v.dense()                 y = W x + b, every output reads every input (parameters)
///   v.window()                a convolution: per output, a window of every input channel of
///                             its group, a weight per (output channel, input channel, tap)
///   v.adjoint_window()        a window's adjoint (transposed) map with its weights: each
///                             output entry sums the window outputs that read it
///   v.channel_affine()        y = a x + b per channel (parameters a, b)
///   v.pool(max)               a window per channel with fixed weights: an order statistic
///                             (max: a max node per entry) or the mean
///   v.entrywise()             an activation, entry by entry
///   v.scaled()                y = factor x, fixed weights
///   v.sum(negate_last)        the operands' sum (negate_last: minus the last)
///   v.concat(), v.reshape(), v.pick()
///                             views: the operands' entries side by side, reshaped, or picked
///                             by index along an axis (no node, no edge)
///   v.group()                 the order statistics of groups along axis 0
///   v.lerp()                  interpolation taps with fixed weights
/// A pass that lacks a form a kind uses fails to compile (the table's visit_kind instantiates
/// every kind's map); a pass over the kinds with parameters only (visit_param_kind) implements
/// the four parameter forms.
template <LayerKind K>
struct Kind;

/// One form of a visitor written in place: a reference to a callable (a lambda of the call)
/// that returns R. A visitor is built inside the call of K::map, whose full expression keeps
/// its lambdas alive: never keep one in a variable. Not default-constructible, so that a
/// visitor written with a form left out does not compile. (The visitors name their result type,
/// Maps<R>, rather than deduce their lambdas' types: C++20's deduction for aggregates with
/// designated initializers is not in clang 14, which builds the fuzzers.)
template <class Sig>
class FormRef;
template <class R, class... A>
class FormRef<R(A...)> {
 public:
  template <class F>
  requires(!std::is_same_v<std::remove_cvref_t<F>, FormRef> &&
           std::is_invocable_r_v<R, const std::remove_reference_t<F>&, A...>)
      // NOLINTNEXTLINE(google-explicit-constructor): a lambda is a form where one is expected
      FormRef(F&& f)
  noexcept
      : m_callable(static_cast<const void*>(std::addressof(f))),
        m_call([](const void* callable, A... a) -> R {
          const auto& g = *static_cast<const std::remove_reference_t<F>*>(callable);
          if constexpr (std::is_void_v<R>) {
            g(std::forward<A>(a)...);
          } else {
            return g(std::forward<A>(a)...);
          }
        }) {}
  R operator()(A... a) const { return m_call(m_callable, std::forward<A>(a)...); }

 private:
  const void* m_callable;
  R (*m_call)(const void*, A...);
};

/// The forms of the vocabulary, each once: X(name, the argument types of its call). The
/// visitors below (Maps, ParamMaps, PlainMaps), the table's Form and form_call
/// (layer_kinds.hpp) are made from these lists, in this order: a new form is one line here,
/// then a compile error in each pass until it says what the form does there.
#define PATHLIFT_PARAM_FORMS(X) \
  X(dense, )                    \
  X(window, )                   \
  X(adjoint_window, )           \
  X(channel_affine, )
#define PATHLIFT_PLAIN_FORMS(X) \
  X(pool, bool)                 \
  X(entrywise, )                \
  X(scaled, )                   \
  X(sum, bool)                  \
  X(concat, )                   \
  X(reshape, )                  \
  X(pick, )                     \
  X(group, )                    \
  X(lerp, )
/// Every form: the input, then the parameter forms, then the plain ones.
#define PATHLIFT_FORMS(X) X(input, ) PATHLIFT_PARAM_FORMS(X) PATHLIFT_PLAIN_FORMS(X)

/// A visitor's member for a form: FormRef<R(its arguments)> name.
#define PATHLIFT_FORM_REF(name, ...) FormRef<R(__VA_ARGS__)> name;

/// A visitor of every form, one callable per form (in the vocabulary's order), for a pass over
/// every kind written in place, returning R:
///   visit_kind(ly.kind, [&]<class K>(K) { return K::map(Maps<R>{.input = [&] { ... }, ...}); });
template <class R>
struct Maps {
  PATHLIFT_FORMS(PATHLIFT_FORM_REF)
};

/// A visitor of the four parameter forms, for a pass written in place:
///   visit_param_kind(ly, "pass", [&]<class K>(K) {
///     return K::map(ParamMaps<R>{.dense = [&] { ... }, .window = [&] { ... },
///                                .adjoint_window = [&] { ... }, .channel_affine = [&] { ... }});
///   });
template <class R>
struct ParamMaps {
  PATHLIFT_PARAM_FORMS(PATHLIFT_FORM_REF)
};

/// The same for the forms of the kinds without parameters (visit_plain_kind): pool(bool max),
/// entrywise(), scaled(), sum(bool negate_last), concat(), reshape(), pick(), group(), lerp().
template <class R>
struct PlainMaps {
  PATHLIFT_PLAIN_FORMS(PATHLIFT_FORM_REF)
};

#undef PATHLIFT_FORM_REF

/// The fields of a layer with parameters: where its blocks start in theta.
inline constexpr FieldUse k_weight_offset{Field::weight_offset, true};
inline constexpr FieldUse k_bias_offset{Field::bias_offset, false};

}  // namespace pathlift::detail
