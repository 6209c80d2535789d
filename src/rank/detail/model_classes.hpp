#pragma once
// The rescaling classes of a model that each rescale on their own, the one choice behind
// PathCond, ENorm (balance.cpp) and the conservation laws (conservation.cpp).

#include <memory>

#include "pathlift/model.hpp"
#include "pathlift/network.hpp"
#include "pathlift/options.hpp"
#include "pathlift/symmetry.hpp"

namespace pathlift::detail {

/// A model's parameter classes, and the DAG they are the classes of.
struct ModelClasses {
  ParameterClasses classes;
  /// The unrolled DAG whose nodes the classes are, where the layer graph's own were coupled;
  /// null when they are the model's own (its DAG's, or its layer graph's).
  std::shared_ptr<const Network> unrolled;
};

/// parameter_classes(model). A layer graph's classes are merged per channel and tap, and may
/// keep as constraints equalities that its unrolled network merges (one convolution without
/// bias reading two layers' channels side by side, after a concatenation along a spatial axis:
/// alpha(a_c) = alpha(b_c)); the unrolled network's classes are then taken where they are
/// independent and it fits in options.max_memory. Otherwise the classes returned may keep
/// constraints (classes.constraints > 0): the caller refuses them in its own words.
ModelClasses independent_classes(const Model& model, const EngineOptions& options);

}  // namespace pathlift::detail
