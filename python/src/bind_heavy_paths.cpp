// pathlift.top_paths, sample_paths and path_norm_shares (heavy_paths.hpp, path_shares.hpp): the
// paths themselves and the shares of the path-norm, without enumerating the paths.

#include <fmt/format.h>

#include "common.hpp"
#include "pathlift/heavy_paths.hpp"
#include "pathlift/path_shares.hpp"
#include "results.hpp"

namespace pathlift::python {

namespace {

/// The paths as a list of dicts (value, sign, log10_abs, nodes by name, edges, params).
py::object paths_object(const NetworkArg& net, const std::vector<WeightedPath>& paths,
                        std::size_t max_memory) {
  const Network& dag = net.dag(max_memory);  // the DAG the search ran on (made once)
  return from_json(to_json(std::span<const WeightedPath>(paths), dag));
}

}  // namespace

void bind_heavy_paths(py::module_& m) {
  m.def(
      "top_paths",
      [](const NetworkArg& net, const py::object& theta, Index k, double s, int threads,
         const py::object& progress, std::size_t max_memory) {
        const EngineOptions o =
            engine_options(threads, net.unroll_limit(max_memory), progress, "top_paths");
        const auto paths = with_theta(net, theta, [&](std::span<const double> t) {
          return top_paths(net.model(), t, k, s, o);
        });
        return paths_object(net, paths, max_memory);
      },
      py::arg("net"), py::arg("theta") = py::none(), py::arg("k") = 10, py::arg("s") = 1.0,
      py::kw_only(), py::arg("threads") = 0, py::arg("progress") = py::none(),
      py::arg("max_memory") = 0,
      R"doc(The k paths of largest |Phi_p| in decreasing order (ties in the canonical path order),
by a best-first search whose priority is exact (the prefix product times the largest suffix
product): no path is enumerated. A list of dicts: value (Phi_p, None beyond double's range),
sign, log10_abs, nodes (names: "x[0,3,4]", "conv1[12,3,4]", ..., "y7"), edges, params (the
parameter of each edge, None for a fixed edge). A LayerNetwork runs on its unrolled DAG, within
max_memory (MemoryError with the sizes beyond). ValueError for k < 0 or s < 0.
docs/paths.md#heavy-paths.)doc");

  m.def(
      "sample_paths",
      [](const NetworkArg& net, const py::object& theta, Index n, double s, std::uint64_t seed,
         int threads, const py::object& progress, std::size_t max_memory) {
        const EngineOptions o =
            engine_options(threads, net.unroll_limit(max_memory), progress, "sample_paths");
        const auto paths = with_theta(net, theta, [&](std::span<const double> t) {
          return sample_paths(net.model(), t, n, s, seed, o);
        });
        return paths_object(net, paths, max_memory);
      },
      py::arg("net"), py::arg("theta") = py::none(), py::arg("n") = 10, py::arg("s") = 1.0,
      py::arg("seed") = 0, py::kw_only(), py::arg("threads") = 0, py::arg("progress") = py::none(),
      py::arg("max_memory") = 0,
      R"doc(n paths drawn independently with probability |Phi_p|^s / ||Phi||_s^s (s finite >= 0;
s = 0: uniform), exactly: one backward pass of the sums, then each walk chooses its start and, at
each node, to stop (at an output) or an out-edge in proportion to |w|^s G(target). Never a path
of weight 0 for s > 0; the same paths for a seed whatever the thread count. The dicts of
top_paths. ArithmeticError when every path weighs 0. docs/paths.md#sampling.)doc");

  py::class_<PathNormShares> cls(m, "PathNormShares", R"doc(
The shares of ||Phi||_s^s (path_norm_shares): names[i] carries shares[i]; total = ||Phi||_s^s.
as_dict() maps each name to its share; to_dict() is the JSON form.)doc");
  cls.def_readonly("s", &PathNormShares::s, "The exponent s.")
      .def_property_readonly(
          "by", [](const PathNormShares& r) { return to_string(r.by); },
          "'parameter', 'node', 'channel' or 'layer'.")
      .def_property_readonly(
          "names",
          [](const PathNormShares& r) {
            std::vector<std::string> names;
            for (std::size_t i = 0; i < r.shares.size(); ++i) {
              names.push_back(r.name(i));
            }
            return names;
          },
          "The names (a list): node names, '<layer>[c]', layer names, 'theta[k]'.")
      .def_property_readonly(
          "shares",
          [](const PathNormShares& r) { return owning_array(std::vector<double>(r.shares)); },
          "The fractions of ||Phi||_s^s (a float64 array).")
      .def_property_readonly(
          "total", [](const PathNormShares& r) { return r.total.value(); },
          "||Phi||_s^s (inf beyond double's range).")
      .def_property_readonly(
          "log10_total", [](const PathNormShares& r) { return r.total.log10(); },
          "log10 ||Phi||_s^s.")
      .def(
          "as_dict",
          [](const PathNormShares& r) {
            py::dict d;
            for (std::size_t i = 0; i < r.shares.size(); ++i) {
              d[py::str(r.name(i))] = r.shares[i];
            }
            return d;
          },
          "{name: share} in order.");
  def_to_dict(cls, "The JSON form (pathlift norm --shares --json).");
  cls.def("__repr__", [](const PathNormShares& r) {
    return fmt::format("<pathlift.PathNormShares: {} shares by {}, s={}>", r.shares.size(),
                       to_string(r.by), r.s);
  });

  m.def(
      "path_norm_shares",
      [](const NetworkArg& net, const py::object& theta, double s, const std::string& by,
         int threads, const py::object& progress, std::size_t max_memory) {
        const SharesBy kind = parse_shares_by(by);
        const EngineOptions o =
            engine_options(threads, net.unroll_limit(max_memory), progress, "path_norm_shares");
        return with_theta(net, theta, [&](std::span<const double> t) {
          return path_norm_shares(net.model(), t, s, kind, o);
        });
      },
      py::arg("net"), py::arg("theta") = py::none(), py::arg("s") = 1.0, py::arg("by") = "layer",
      py::kw_only(), py::arg("threads") = 0, py::arg("progress") = py::none(),
      py::arg("max_memory") = 0,
      R"doc(The fraction of ||Phi||_s^s (s finite > 0) through each parameter, node, channel or
layer (by = 'parameter' | 'node' | 'channel' | 'layer'), by dynamic programming: a parameter's is
theta_k d||Phi||_s/dtheta_k / ||Phi||_s (its paths' |Phi_p|^s, with multiplicity), a channel's
(an output channel of a parameter layer: the paths through its weights and bias) is the sum of
F(v) G(v) over its entries and a layer's the sum of its channels' (a LayerNetwork is not unrolled
for these), a node's is F(v) G(v) / ||Phi||_s^s on the DAG (a
LayerNetwork unrolled within max_memory). A batch norm is a layer of its own (its a and b).
Returns a PathNormShares. ValueError for a bad s or by, channels or layers of a Network.
docs/paths.md#shares.)doc");
}

}  // namespace pathlift::python
