// paths.hpp: path enumeration in canonical order (a PathSet of CSR arrays, as read-only numpy
// views) and the paper's grouping of paths by output.

#include <fmt/format.h>

#include <memory>
#include <stdexcept>
#include <utility>

#include "common.hpp"
#include "pathlift/paths.hpp"
#include "results.hpp"

namespace pathlift::python {

namespace {

Index checked_path(const PathSet& ps, Index p) {
  if (p < 0) {
    p += ps.size();
  }
  if (p < 0 || p >= ps.size()) {
    throw std::out_of_range(
        fmt::format("path {} does not exist (there are {} paths)", p, ps.size()));
  }
  return p;
}

/// The paths of net for the engine overloads of enumerate_paths and group_by_output (their
/// keywords threads, progress, max_memory), walked with the GIL released.
PathSet enumerate_engine(const Network& net, int threads, const py::object& progress,
                         std::size_t max_memory, const char* label) {
  const EngineOptions o = engine_options(threads, max_memory, progress, label);
  py::gil_scoped_release release;
  return enumerate_paths(net, o);
}

/// group_by_output indexes by end node: refuse a path set that is not from this network.
void check_paths_of(const Network& net, const PathSet& paths) {
  if (paths.num_edges != net.num_edges()) {
    throw std::invalid_argument(fmt::format(
        "the path set has {} edges but the network has {}: it was enumerated from another "
        "network",
        paths.num_edges, net.num_edges()));
  }
  for (const NodeId v : paths.end) {
    if (v < 0 || v >= net.num_nodes() || !net.is_output(v)) {
      throw std::invalid_argument(
          fmt::format("the path set ends at node {}, which is not an output of the network: it "
                      "was enumerated from another network",
                      v));
    }
  }
}

bool uniform(const OutputGrouping& g) {
  for (const Index c : g.counts) {
    if (c != g.counts.front()) {
      return false;
    }
  }
  return !g.counts.empty();
}

py::object layout(const OutputGrouping& g, const py::object& values) {
  if (!uniform(g)) {
    throw std::invalid_argument(fmt::format(
        "the outputs have different path counts ({}): there is no (q, P1) layout; index with "
        "grouping.order and split by grouping.counts instead",
        fmt::join(g.counts, ", ")));
  }
  py::module_ np = py::module_::import("numpy");
  py::array arr = np.attr("asarray")(values);
  if (arr.ndim() < 1 || arr.shape(0) != static_cast<py::ssize_t>(g.order.size())) {
    throw std::invalid_argument(
        fmt::format("layout expects an array with one row per path ({} rows)", g.order.size()));
  }
  py::array order({static_cast<py::ssize_t>(g.order.size())}, {sizeof(Index)}, g.order.data());
  py::object taken = np.attr("take")(arr, order, py::arg("axis") = 0);
  py::list shape;
  shape.append(g.counts.size());
  shape.append(g.counts.front());
  for (py::ssize_t k = 1; k < arr.ndim(); ++k) {
    shape.append(arr.shape(k));
  }
  return taken.attr("reshape")(py::tuple(shape));
}

}  // namespace

void bind_paths(py::module_& m) {
  py::class_<PathSet, std::shared_ptr<PathSet>> path_set(m, "PathSet", R"doc(
The paths of a network in canonical order (depth-first from the inputs in node order, outgoing
edges by increasing index; a path is emitted at each output reached), in CSR form: path p is
edges[offsets[p]:offsets[p+1]] in walk order. The arrays are read-only views of the C++
buffers (no copy), shared with the skeleton and Jacobians computed from this path set.
)doc");
  path_set
      .def_property_readonly(
          "offsets", [](const PathSet& ps) { return shared_array<Index>(ps.offsets); },
          "int64 array of P + 1 offsets into edges (read-only view).")
      .def_property_readonly(
          "edges", [](const PathSet& ps) { return shared_array<EdgeId>(ps.edges); },
          "int32 array of nnz edge ids, each path in walk order (read-only view).")
      .def_property_readonly("start", member_view(&PathSet::start),
                             "int32 array: the input node of each path (read-only view).")
      .def_property_readonly("end", member_view(&PathSet::end),
                             "int32 array: the output node of each path (read-only view).");
  def_fields(path_set, field("num_edges", &PathSet::num_edges, "d, the number of columns of B."),
             field("walk_order_sorted", &PathSet::walk_order_sorted,
                   "True when every path's edges increase in walk order (B then shares the "
                   "edges array)."));
  path_set.def_property_readonly("num_paths", &PathSet::size, "P.")
      .def_property_readonly("nnz", &PathSet::nnz, "nnz(B) = the sum of the path lengths.")
      .def("__len__", &PathSet::size, "P.")
      .def(
          "path",
          [](const py::object& self, Index p) {
            const auto& ps = self.cast<const PathSet&>();
            return view_array<EdgeId>(ps.path(checked_path(ps, p)), self);
          },
          py::arg("p"), "The edges of path p in walk order (int32, read-only view).")
      .def("__repr__", [](const PathSet& ps) {
        return fmt::format("<pathlift.PathSet: {} paths, nnz = {}, d = {}>", ps.size(), ps.nnz(),
                           ps.num_edges);
      });

  m.def(
      "enumerate_paths",
      [](const NetworkArg& arg, int threads, const py::object& progress, std::size_t max_memory) {
        return std::make_shared<PathSet>(enumerate_engine(arg.dag(max_memory), threads, progress,
                                                          max_memory, "enumerate_paths"));
      },
      py::arg("net"), py::kw_only(), py::arg("threads") = 0, py::arg("progress") = py::none(),
      py::arg("max_memory") = 0,
      R"doc(Enumerates every path in canonical order, in parallel (identical for any thread
count). threads: 0 = all cores; max_memory: bytes, 0 = half of physical RAM. Raises TooLarge
(MemoryError) with P, nnz and the bytes needed over the limit. Complexity: O(nnz).)doc");

  py::class_<OutputGrouping>(m, "OutputGrouping", R"doc(
The paper's (q, P1) layout: paths grouped by output (output order), canonical order within a
group. order[k] = canonical index of the k-th path in that layout; counts[j] = number of paths
ending at output j. For a vector phi, phi[order] is grouped; layout(phi) reshapes it to
(q, P1) when every output has the same count (layered networks). For a sparse matrix J,
J[order] reorders its rows.
)doc")
      .def_property_readonly(
          "order", member_view(&OutputGrouping::order),
          "int64 array: canonical path index of each position in the grouped layout.")
      .def_property_readonly("counts", member_view(&OutputGrouping::counts),
                             "int64 array: the number of paths ending at each output.")
      .def_property_readonly("uniform", &uniform,
                             "True when every output has the same number of paths.")
      .def_property_readonly(
          "P1",
          [](const OutputGrouping& g) -> py::object {
            if (!uniform(g)) {
              return py::none();
            }
            return py::int_(g.counts.front());
          },
          "Paths per output when uniform, else None.")
      .def("layout", &layout, py::arg("values"),
           "values (one row per path, canonical order) in the (q, P1, ...) layout: "
           "values[order] reshaped. ValueError when the outputs have different counts.");

  m.def(
      "group_by_output",
      [](const NetworkArg& arg, const std::shared_ptr<PathSet>& paths) {
        const Network& net = arg.dag(0);
        if (!paths) {
          throw std::invalid_argument("paths is None");
        }
        check_paths_of(net, *paths);
        py::gil_scoped_release release;
        return group_by_output(net, *paths);
      },
      py::arg("net"), py::arg("paths"),
      "Groups the paths of `paths` (enumerated from net) by output: an OutputGrouping.");
  m.def(
      "group_by_output",
      [](const NetworkArg& arg, int threads, const py::object& progress, std::size_t max_memory) {
        const Network& net = arg.dag(max_memory);
        const PathSet paths =
            enumerate_engine(net, threads, progress, max_memory, "group_by_output");
        py::gil_scoped_release release;
        return group_by_output(net, paths);
      },
      py::arg("net"), py::kw_only(), py::arg("threads") = 0, py::arg("progress") = py::none(),
      py::arg("max_memory") = 0,
      "Enumerates the paths of net and groups them by output: an OutputGrouping.");
}

}  // namespace pathlift::python
