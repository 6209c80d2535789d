// counting.hpp: path counts by dynamic programming, on a Network or (layer_dp.hpp) on a
// LayerNetwork's layer graph without unrolling. An exact count is a Python int; a count beyond
// 64 bits is a Count object that knows its log10.

#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "counting.hpp"
#include "pathlift/path_free.hpp"
#include "results.hpp"

namespace pathlift::python {

py::object count_to_python(const Count& c) {
  if (c.exact()) {
    return py::int_(c.value());
  }
  return py::cast(c);
}

namespace {

py::list counts_to_list(const std::vector<Count>& counts) {
  py::list out;
  for (const Count& c : counts) {
    out.append(count_to_python(c));
  }
  return out;
}

double log10_of(const Count& c) {
  return c.log10();
}

}  // namespace

void bind_counting(py::module_& m) {
  py::class_<Count>(m, "Count", R"doc(
A count too large for 64 bits, known by its log10 (exact counts are plain Python ints).
float(c) is the count as a float (inf beyond float range); int(c) raises CountOverflow.
)doc")
      .def(py::init([](double log10_value) { return Count::from_log10(log10_value); }),
           py::arg("log10"), "A count known by its log10.")
      .def_property_readonly("exact", &Count::exact,
                             "True when the count fits in 64 bits (then value is exact).")
      .def_property_readonly("value", &Count::value,
                             "The exact count; CountOverflow (OverflowError) when not exact.")
      .def_property_readonly("log10", &Count::log10, "log10 of the count (-inf for 0).")
      .def_property_readonly("approx", &Count::approx,
                             "The count as a float (inf beyond float range).")
      .def("__float__", &Count::approx)
      .def("__int__", &Count::value)
      .def("__str__", &Count::to_string)
      .def("__repr__",
           [](const Count& c) { return fmt::format("pathlift.Count('{}')", c.to_string()); })
      .def(
          "__eq__", [](const Count& a, const Count& b) { return a == b; }, py::is_operator())
      .def("__hash__", [](const Count& c) { return py::hash(py::float_(c.log10())); });

  py::class_<PathCounts> counts(m, "PathCounts",
                                "Path counts of a network (count_paths). Each count is an int "
                                "when it fits in 64 bits, else a Count.");
  def_to_dict(counts,
              "The JSON form (to_json): the path keys of `pathlift info --json` (P, nnz, their "
              "log10 and exactness, max_path_length, length_histogram).");
  counts
      .def_property_readonly(
          "paths", [](const PathCounts& c) { return count_to_python(c.paths); }, "P.")
      .def_property_readonly(
          "nnz", [](const PathCounts& c) { return count_to_python(c.nnz); },
          "nnz(B) = sum of the path lengths.")
      .def_property_readonly(
          "log10_paths", [](const PathCounts& c) { return log10_of(c.paths); },
          "log10(P) as a float, whether or not P is exact.")
      .def_property_readonly(
          "per_output", [](const PathCounts& c) { return counts_to_list(c.per_output); },
          "Paths ending at each output, in output order.")
      .def_property_readonly(
          "per_input", [](const PathCounts& c) { return counts_to_list(c.per_input); },
          "Paths starting at each input (bias included), in input order.")
      .def_property_readonly(
          "per_edge", [](const PathCounts& c) { return counts_to_list(c.per_edge); },
          "Paths through each edge (the column sums of B).")
      .def_property_readonly(
          "length_histogram",
          [](const PathCounts& c) { return counts_to_list(c.length_histogram); },
          "length_histogram[l] = number of paths of length l (entry 0 is 0).");
  def_fields(counts,
             field("length_histogram_refused", &PathCounts::length_histogram_refused,
                   "Empty when length_histogram was computed; else why not (the bytes it needs "
                   "and the memory limit); the other counts are computed regardless."),
             field("max_path_length", &PathCounts::max_path_length,
                   "The longest input-to-output path, in edges."));
  counts.def("__repr__", [](const PathCounts& c) {
    return fmt::format("<pathlift.PathCounts: P = {}, nnz = {}, max path length {}>",
                       c.paths.to_string(), c.nnz.to_string(), c.max_path_length);
  });

  m.def(
      "count_paths",
      [](const NetworkArg& net, int threads, const py::object& progress, std::size_t max_memory) {
        const EngineOptions o = engine_options(threads, max_memory, progress, "count_paths");
        const py::gil_scoped_release release;
        return count_paths(net.model(), o);
      },
      py::arg("net"), py::kw_only(), py::arg("threads") = 0, py::arg("progress") = py::none(),
      py::arg("max_memory") = 0,
      "Counts paths by dynamic programming (never enumerating): P, nnz(B), per output, per "
      "input, per edge, the length histogram. Overflow beyond 64 bits is detected, never "
      "wrapped. When the histogram's working memory would exceed max_memory (bytes, 0 = half "
      "of physical RAM), it alone is skipped: length_histogram is empty and "
      "length_histogram_refused says why. A LayerNetwork is counted layer by layer without "
      "unrolling: per_input and per_edge are then empty lists (they are per node and per "
      "edge), counts exact below 2^53 and a Count (log10) beyond. threads: 0 = all cores. "
      "Complexity: O((m + d) * max path length).");
  m.def(
      "count_paths_total",
      [](const NetworkArg& net, int threads, const py::object& progress) {
        Count c;
        {
          const EngineOptions o = engine_options(threads, 0, progress, "count_paths_total");
          py::gil_scoped_release release;
          c = count_paths_total(net.model(), o);
        }
        return count_to_python(c);
      },
      py::arg("net"), py::kw_only(), py::arg("threads") = 0, py::arg("progress") = py::none(),
      "P alone (an int, or a Count beyond 64 bits); a LayerNetwork without unrolling. "
      "Complexity: O(m + d).");
}

}  // namespace pathlift::python
