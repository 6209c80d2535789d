// io.hpp: the pathlift-network v1 JSON format (docs/file-format.md).

#include <string>

#include "common.hpp"
#include "pathlift/io.hpp"

namespace pathlift::python {

void bind_io(py::module_& m) {
  m.def(
      "parse_network", [](const std::string& text) { return parse_network(text); }, py::arg("text"),
      py::call_guard<py::gil_scoped_release>(),
      "Parses a network from pathlift-network v1 JSON text. Raises FormatError (ValueError) "
      "naming the key for bad JSON or a bad field, NetworkError (ValueError) for an invalid "
      "network. Complexity: O(size of the text).");
  m.def(
      "read_network",
      [](const py::object& path) {
        const std::string p = fspath(path);
        py::gil_scoped_release release;
        return read_network(p);
      },
      py::arg("path"),
      "Reads a network file (str or os.PathLike). Raises FormatError (ValueError) when the file "
      "cannot be read or parsed.");
  m.def("network_to_json", &network_to_json, py::arg("net"), py::arg("indent") = -1,
        py::call_guard<py::gil_scoped_release>(),
        "The network as pathlift-network v1 JSON (weights included when stored); one line when "
        "indent < 0, else pretty-printed with that indent.");
  m.def(
      "write_network",
      [](const Network& net, const py::object& path) {
        const std::string p = fspath(path);
        py::gil_scoped_release release;
        write_network(net, p);
      },
      py::arg("net"), py::arg("path"),
      "Writes the network as JSON to path (replaced atomically). Raises FormatError "
      "(ValueError) when the file cannot be written.");
}

}  // namespace pathlift::python
