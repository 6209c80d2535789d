// layer_graph_builder.hpp: LayerGraphBuilder, the one way layer graphs are made (the torch.fx
// importer of pathlift.torch builds through it), and the batch-norm folding.

#include <pybind11/stl.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common.hpp"
#include "pathlift/error.hpp"
#include "pathlift/layer_graph_builder.hpp"
#include "results.hpp"

namespace pathlift::python {

namespace {

using IndexList = std::vector<Index>;

/// (name, shape) or None: what an importer knows of a parameter tensor.
std::optional<ParameterTensor> tensor_argument(const py::object& t, const char* what) {
  if (t.is_none()) {
    return std::nullopt;
  }
  try {
    auto [name, shape] = t.cast<std::pair<std::string, IndexList>>();
    return ParameterTensor{std::move(name), std::move(shape)};
  } catch (const py::cast_error&) {
    throw std::invalid_argument(
        fmt::format("{} must be None or (name, shape), got {}", what, repr_of(t)));
  }
}

std::vector<double> doubles(const py::object& x, const char* what) {
  const auto a = vector_argument<double>(x, what);
  const auto s = as_span<double>(a);
  return {s.begin(), s.end()};
}

}  // namespace

void bind_layer_graph_builder(py::module_& m) {
  py::class_<LayerOutput> output(m, "LayerOutput",
                                 "What LayerGraphBuilder.add returns: the layer's index, its "
                                 "output shape (per sample; empty when it failed) and ok.");
  def_fields(output, field("layer", &LayerOutput::layer, "The layer's index in the graph."));
  output.def_property_readonly(
      "shape", [](const LayerOutput& o) { return py::tuple(py::cast(o.shape)); },
      "The output shape per sample, a tuple (empty when the layer failed).");
  def_fields(output, field("ok", &LayerOutput::ok,
                           "False when the layer broke a rule (its problem is recorded) or reads "
                           "a layer that did."));
  output.def("__repr__", [](const LayerOutput& o) {
    return fmt::format("LayerOutput(layer={}, shape=({}), ok={})", o.layer,
                       fmt::join(o.shape, ", "), o.ok ? "True" : "False");
  });

  py::class_<LayerGraphBuilder>(m, "LayerGraphBuilder", R"doc(
Builds a LayerGraph layer by layer, with the rules every importer shares (layer_graph_builder.hpp):
each add() checks its layer in O(1) against the shapes of its inputs and returns its output
shape; parameter tensors given as (name, shape) are checked against the layer; names follow one
rule (names="unique": a name taken becomes name_2, name_3, ...; "strict": a problem); every
problem is collected, and finish() raises once, listing all of them (UnsupportedModelError when
problem() was called, else NetworkError).

LayerGraphBuilder(input_shape, input_name="input", *, names="unique")

Example::

    b = pathlift.LayerGraphBuilder((4,), "x")
    h = b.add(pathlift.Layer("linear", "fc", [0], out_features=3, weight_offset=0,
                             bias_offset=12), weight=("fc.weight", (3, 4)), bias=("fc.bias", (3,)))
    y = b.add(pathlift.Layer("activation", "relu", [h.layer], activation="relu"))
    b.output(y.layer)
    graph = b.finish(num_params=15)
)doc")
      .def(py::init([](const IndexList& input_shape, std::string input_name,
                       const std::string& names) {
             if (names != "unique" && names != "strict") {
               throw std::invalid_argument(
                   fmt::format("names must be 'unique' or 'strict', got '{}'", printable(names)));
             }
             return LayerGraphBuilder(input_shape, std::move(input_name),
                                      names == "unique" ? LayerNames::unique : LayerNames::strict);
           }),
           py::arg("input_shape"), py::arg("input_name") = "input", py::kw_only(),
           py::arg("names") = "unique")
      .def("input", &LayerGraphBuilder::input, "The input layer's output (layer 0).")
      .def(
          "add",
          [](LayerGraphBuilder& b, const Layer& layer, const py::object& weight,
             const py::object& bias) {
            LayerParameters p;
            p.weight = tensor_argument(weight, "weight");
            p.bias = tensor_argument(bias, "bias");
            return b.add(layer, p);
          },
          py::arg("layer"), py::kw_only(), py::arg("weight") = py::none(),
          py::arg("bias") = py::none(),
          "Appends a copy of `layer` (its name made unique under names='unique') and returns its "
          "LayerOutput. weight, bias: (name, shape) of the parameter tensors the layer reads, "
          "checked against it. A broken rule is recorded, not raised.")
      .def(
          "problem",
          [](LayerGraphBuilder& b, std::string what, const std::string& kind) {
            if (kind != "unsupported" && kind != "invalid") {
              throw std::invalid_argument(fmt::format(
                  "kind must be 'unsupported' or 'invalid', got '{}'", printable(kind)));
            }
            b.problem(std::move(what), kind == "unsupported"
                                           ? LayerGraphBuilder::Problem::unsupported
                                           : LayerGraphBuilder::Problem::invalid);
          },
          py::arg("what"), py::arg("kind") = "unsupported",
          "Records a problem the importer found: an operation pathlift cannot represent "
          "(kind='unsupported': finish() raises UnsupportedModelError) or an invalid model "
          "(kind='invalid': NetworkError).")
      .def("output", &LayerGraphBuilder::output, py::arg("layer"),
           "Marks a layer's entries as outputs.")
      .def("set_num_params", &LayerGraphBuilder::set_num_params, py::arg("num_params"),
           "Sets d: parameter blocks are then checked as layers are added.")
      .def("set_offsets", &LayerGraphBuilder::set_offsets, py::arg("layer"),
           py::arg("weight_offset"), py::arg("bias_offset"),
           "Sets where a layer's parameter blocks start in theta.")
      .def("find", &LayerGraphBuilder::find, py::arg("name"), "The layer named `name`, or -1.")
      .def(
          "layer_name",
          [](const LayerGraphBuilder& b, Index layer) {
            return b.layers().at(static_cast<std::size_t>(layer)).name;
          },
          py::arg("layer"), "The name the builder gave a layer.")
      .def_property_readonly(
          "num_layers", [](const LayerGraphBuilder& b) { return b.layers().size(); },
          "The layers added so far, the input included.")
      .def_property_readonly("problems", &LayerGraphBuilder::problems,
                             "Every problem recorded so far.")
      .def(
          "finish",
          [](LayerGraphBuilder& b, Index num_params, const py::object& weights) {
            std::optional<std::vector<double>> w;
            if (!weights.is_none()) {
              w = doubles(weights, "weights");
            }
            const py::gil_scoped_release release;
            return b.finish(num_params, std::move(w));
          },
          py::arg("num_params") = -1, py::arg("weights") = py::none(),
          "The LayerGraph (d = num_params, theta = weights when given). Raises, listing every "
          "problem recorded: UnsupportedModelError when problem() was called, else NetworkError. "
          "The builder is spent afterwards.");

  m.def(
      "batch_norm_coefficients",
      [](const py::object& mean, const py::object& var, double eps, const std::string& where) {
        const auto mu = doubles(mean, "mean");
        const auto v = doubles(var, "var");
        BatchNormCoefficients c = batch_norm_coefficients(mu, v, eps, where);
        return py::make_tuple(owning_array(std::move(c.std)), owning_array(std::move(c.mean)));
      },
      py::arg("mean"), py::arg("var"), py::arg("eps"), py::arg("where") = "batch norm",
      "(std, mean) per channel of an eval-mode batch norm: std = sqrt(var + eps), so that its "
      "affine map y = a x + b has a = gamma / std and b = beta - a mean (linear in gamma and "
      "beta; gamma = a std and beta = b + a mean invert it). NetworkError naming `where` and "
      "the channel when var + eps is not positive or a value is not finite.");
  m.def(
      "fold_batch_norm",
      [](const py::object& gamma, const py::object& beta, const py::object& mean,
         const py::object& var, double eps, const std::string& where) {
        BatchNormAffine f = fold_batch_norm(doubles(gamma, "gamma"), doubles(beta, "beta"),
                                            doubles(mean, "mean"), doubles(var, "var"), eps, where);
        return py::make_tuple(owning_array(std::move(f.a)), owning_array(std::move(f.b)));
      },
      py::arg("gamma"), py::arg("beta"), py::arg("mean"), py::arg("var"), py::arg("eps"),
      py::arg("where") = "batch norm",
      "(a, b) of an eval-mode batch norm y = gamma (x - mean) / sqrt(var + eps) + beta = a x + b, "
      "per channel (float64 arrays).");
}

}  // namespace pathlift::python
