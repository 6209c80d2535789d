// pathlift.top_paths, sample_paths and path_norm_shares (heavy_paths.hpp, path_shares.hpp): the
// paths themselves and the shares of the path-norm, without enumerating the paths.

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "common.hpp"
#include "pathlift/error.hpp"
#include "pathlift/heavy_paths.hpp"
#include "pathlift/path_shares.hpp"
#include "results.hpp"

namespace pathlift::python {

namespace {

/// The paths of one call, held in C++ (10,000 sampled paths of 60 nodes as Python dicts would
/// be millions of objects, and Python's collector would walk them): pathlift.PathList (_paths.py)
/// makes the dict of path i when it is read.
class PathList {
 public:
  PathList(const NetworkArg& net, std::vector<WeightedPath> paths)
      : m_model(std::make_shared<const Model>(net.model())),
        m_names(*m_model),
        m_paths(std::move(paths)) {}

  [[nodiscard]] std::size_t size() const { return m_paths.size(); }

  /// Path i as a dict with the keys of to_json (value, sign, log10_abs, nodes by name, entries
  /// on a layer graph, edges, params, weights).
  [[nodiscard]] py::dict path(std::size_t i) const {
    const WeightedPath& p = m_paths.at(i);
    py::dict d;
    d["value"] = p.magnitude.fits_double() || p.magnitude.is_zero()
                     ? py::object(py::float_(p.value()))
                     : py::object(py::none());
    d["sign"] = py::int_(p.sign);
    const double lg = p.log10_abs();
    d["log10_abs"] = std::isfinite(lg) ? py::object(py::float_(lg)) : py::object(py::none());
    py::list nodes;
    if (m_model->layer_graph() != nullptr) {
      py::list entries;
      for (const PathEntry& e : p.entries) {
        const std::vector<Index> index = m_names.index(e);
        nodes.append(py::str(m_names.name(e, index)));
        py::tuple at(index.size());
        for (std::size_t j = 0; j < index.size(); ++j) {
          at[j] = py::int_(index[j]);
        }
        entries.append(py::make_tuple(m_names.layer(e), at));
      }
      d["nodes"] = nodes;
      d["entries"] = entries;
      d["edges"] = py::none();
    } else {
      for (std::size_t j = 0; j < p.nodes.size(); ++j) {
        nodes.append(py::str(m_names.node(p, j)));
      }
      d["nodes"] = nodes;
      d["edges"] = py::cast(p.edges);
    }
    py::list params;
    for (const Index k : p.params) {
      params.append(k < 0 ? py::object(py::none()) : py::object(py::int_(k)));
    }
    d["params"] = params;
    d["weights"] = py::cast(p.weights);
    return d;
  }

  /// log10 |Phi_p| of every path (-inf for 0), exact at any magnitude.
  [[nodiscard]] py::array_t<double> log10_abs() const {
    std::vector<double> out;
    out.reserve(m_paths.size());
    for (const WeightedPath& p : m_paths) {
      out.push_back(p.log10_abs());
    }
    return owning_array(std::move(out));
  }

  /// The sign of every Phi_p: +1, -1, or 0.
  [[nodiscard]] py::array_t<std::int8_t> signs() const {
    std::vector<std::int8_t> out;
    out.reserve(m_paths.size());
    for (const WeightedPath& p : m_paths) {
      out.push_back(static_cast<std::int8_t>(p.sign));
    }
    return owning_array(std::move(out));
  }

  /// Phi_p of every path; RangeError naming the first beyond float64.
  [[nodiscard]] py::array_t<double> values() const {
    std::vector<double> out;
    out.reserve(m_paths.size());
    for (std::size_t i = 0; i < m_paths.size(); ++i) {
      const WeightedPath& p = m_paths[i];
      if (!p.magnitude.fits_double() && !p.magnitude.is_zero()) {
        throw RangeError(fmt::format(
            "path {} has |Phi_p| = 10^{:.1f}, beyond float64: log10_abs and signs hold every "
            "path's magnitude and sign",
            i, p.log10_abs()));
      }
      out.push_back(p.value());
    }
    return owning_array(std::move(out));
  }

 private:
  std::shared_ptr<const Model> m_model;  // on the heap: m_names points to it when moved
  PathNames m_names;
  std::vector<WeightedPath> m_paths;
};

}  // namespace

void bind_heavy_paths(py::module_& m) {
  py::class_<PathList>(m, "HeldPaths",
                       "The paths of top_paths / sample_paths, held in C++ (pathlift.PathList "
                       "reads them).")
      .def("__len__", &PathList::size)
      .def("path", &PathList::path, py::arg("i"), "Path i as a dict.")
      .def("values", &PathList::values, "Phi_p of every path (float64 array).")
      .def("signs", &PathList::signs, "The sign of every Phi_p (int8 array: +1, -1, 0).")
      .def("log10_abs", &PathList::log10_abs,
           "log10 |Phi_p| of every path (float64 array, -inf for 0).");
  m.def(
      "top_paths",
      [](const NetworkArg& net, const py::object& theta, Index k, double s, int threads,
         const py::object& progress, std::size_t max_memory) {
        const EngineOptions o =
            engine_options(threads, net.unroll_limit(max_memory), progress, "top_paths");
        auto paths = with_theta(net, theta, [&](std::span<const double> t) {
          return top_paths(net.model(), t, k, s, o);
        });
        // An object to the stub: pathlift.top_paths / sample_paths wrap it in a PathList.
        return py::object(py::cast(PathList(net, std::move(paths))));
      },
      py::arg("net"), py::arg("theta") = py::none(), py::arg("k") = 10, py::arg("s") = 1.0,
      py::kw_only(), py::arg("threads") = 0, py::arg("progress") = py::none(),
      py::arg("max_memory") = 0,
      R"doc(The k paths of largest |Phi_p| in decreasing order (ties in the canonical path order),
by a best-first search whose priority is exact (the prefix product times the largest suffix
product): no path is enumerated. A PathList (a sequence of dicts, each made when read): value (Phi_p, None beyond double's range),
sign, log10_abs, nodes (names), edges, params (the parameter of each step, None for a fixed
weight), weights (each step's). A LayerNetwork is never unrolled: the search runs backwards from
its output entries over the layers' entries; its paths' nodes are entries ("x[0,3,4]",
"conv1[12,3,4]", "conv1.bias[12]", ..., "fc[7]"), with entries ([layer, [i, j, k]]) and edges
None; ties by output entry, then backwards. ValueError for k < 0 or s < 0; MemoryError beyond
max_memory.
docs/paths.md#heavy-paths.)doc");

  m.def(
      "sample_paths",
      [](const NetworkArg& net, const py::object& theta, Index n, double s, Seed seed, int threads,
         const py::object& progress, std::size_t max_memory) {
        const EngineOptions o =
            engine_options(threads, net.unroll_limit(max_memory), progress, "sample_paths");
        auto paths = with_theta(net, theta, [&](std::span<const double> t) {
          return sample_paths(net.model(), t, n, s, seed, o);
        });
        // An object to the stub: pathlift.top_paths / sample_paths wrap it in a PathList.
        return py::object(py::cast(PathList(net, std::move(paths))));
      },
      py::arg("net"), py::arg("theta") = py::none(), py::arg("n") = 10, py::arg("s") = 1.0,
      py::arg("seed") = 0, py::kw_only(), py::arg("threads") = 0, py::arg("progress") = py::none(),
      py::arg("max_memory") = 0,
      R"doc(n paths drawn independently with probability |Phi_p|^s / ||Phi||_s^s (s finite >= 0;
s = 0: uniform), exactly: one backward pass of the sums, then each walk chooses its start and, at
each node, to stop (at an output) or an out-edge in proportion to |w|^s G(target). Never a path
of weight 0 for s > 0; the same paths for a seed whatever the thread count. A LayerNetwork is
never unrolled: an output entry is drawn in proportion to its forward sum, then, backwards, a
term of each entry in proportion to |w|^s F_s(source). The dicts of top_paths. ArithmeticError
when every path weighs 0. docs/paths.md#sampling.)doc");

  py::class_<PathNormShares> cls(m, "PathNormShares", R"doc(
The shares of ||Phi||_s^s (path_norm_shares): names[i] carries shares[i]; total = ||Phi||_s^s.
as_dict() maps each name to its share; to_dict() is the JSON form.)doc");
  def_fields(cls, field("s", &PathNormShares::s, "The exponent s."));
  cls.def_property_readonly(
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
          "The names (a list): node names, '<layer>[c]', layer names, 'theta[k]'.");
  def_fields(cls, array_field("shares", &PathNormShares::shares,
                              "The fractions of ||Phi||_s^s (a float64 array)."));
  cls.def_property_readonly(
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
