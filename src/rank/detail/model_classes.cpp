#include "src/rank/detail/model_classes.hpp"

#include <utility>

#include "pathlift/error.hpp"

namespace pathlift::detail {

ModelClasses independent_classes(const Model& model, const EngineOptions& options) {
  ModelClasses out{parameter_classes(model, options), nullptr};
  if (out.classes.constraints > 0 && model.is_layer_graph()) {
    try {
      std::shared_ptr<const Network> dag = model.unrolled(options);
      ParameterClasses merged = parameter_classes(*dag, options);
      if (merged.constraints == 0) {
        return {std::move(merged), std::move(dag)};
      }
    } catch (const TooLarge&) {
      // the layer graph's classes, with their constraints, for the caller to refuse
    }
  }
  return out;
}

}  // namespace pathlift::detail
