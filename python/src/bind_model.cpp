// model.hpp: load_model and parse_model, the one reader of every model format. A DAG comes back
// as a Network, a layer graph as a LayerNetwork (pathlift.load_model and pathlift.from_onnx in
// __init__.py choose the call from the argument's type).

#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common.hpp"
#include "pathlift/model.hpp"

namespace pathlift::python {

namespace {

py::object model_object(Model model, std::size_t max_memory) {
  if (model.dag() != nullptr) {
    return py::cast(std::const_pointer_cast<Network>(model.unrolled()));
  }
  return py::cast(LayerNetworkObject{std::move(model), max_memory});
}

ModelOptions model_options(const py::object& input_shape, std::size_t max_memory) {
  ModelOptions o;
  if (!input_shape.is_none()) {
    o.input_shape = input_shape.cast<std::vector<Index>>();
  }
  o.engine.max_memory = max_memory;
  return o;
}

/// The model that read(options) gives (read without the GIL), as a Python object.
template <class Read>
py::object read_model(const py::object& input_shape, std::size_t max_memory, const Read& read) {
  const ModelOptions o = model_options(input_shape, max_memory);
  std::optional<Model> model;
  {
    const py::gil_scoped_release release;
    model.emplace(read(o));
  }
  return model_object(std::move(*model), max_memory);
}

}  // namespace

void bind_model(py::module_& m) {
  m.def(
      "_load_model",
      [](const std::string& path, const py::object& input_shape, std::size_t max_memory) {
        return read_model(input_shape, max_memory,
                          [&](const ModelOptions& o) { return load_model(path, o); });
      },
      py::arg("path"), py::arg("input_shape") = py::none(), py::arg("max_memory") = 0,
      "load_model of model.hpp (use pathlift.load_model).");
  m.def(
      "_parse_model",
      [](const py::bytes& data, const py::object& input_shape, std::size_t max_memory) {
        const std::string_view bytes = data;
        return read_model(input_shape, max_memory,
                          [&](const ModelOptions& o) { return parse_model(bytes, o); });
      },
      py::arg("data"), py::arg("input_shape") = py::none(), py::arg("max_memory") = 0,
      "parse_model of model.hpp (use pathlift.load_model).");
  m.def(
      "model_format",
      [](const py::bytes& data) { return to_string(model_format(std::string_view(data))); },
      py::arg("data"),
      "The format of a model file's bytes: 'network' (pathlift-network JSON), 'layers' "
      "(pathlift-layers JSON) or 'onnx'.");
}

}  // namespace pathlift::python
