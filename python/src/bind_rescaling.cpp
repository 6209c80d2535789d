// Bindings of pathlift/rescaling.hpp: rescaling vectors and the rescaling matrix, rescale, and
// path magnitudes (path_free.hpp: a LayerNetwork without unrolling).

#include "pathlift/path_free.hpp"
#include "pathlift/rescaling.hpp"

#include "common.hpp"

namespace pathlift::python {

void bind_rescaling(py::module_& m) {
  m.def(
      "rescaling_vector",
      [](const NetworkArg& arg, NodeId v) {
        const Network& net = arg.dag(0);
        const std::vector<int> z = rescaling_vector(net, v);
        return index_array(z);
      },
      py::arg("net"), py::arg("v"),
      "The rescaling vector z_v of hidden node v (int64, d entries): +1 on the edges into v, "
      "-1 on the edges out of v, 0 elsewhere. B z_v = 0 (a path through v uses one edge in and "
      "one edge out). ValueError when v is not hidden. Complexity: O(d).");
  m.def(
      "rescaling_matrix",
      [](const NetworkArg& arg) {
        const Network& net = arg.dag(0);
        CsrMatrix<double> z = rescaling_matrix(net);
        return make_csr(owning_array(std::move(z.values)), std::move(z.pattern));
      },
      py::arg("net"),
      R"doc(The d x h rescaling matrix Z as a scipy.sparse.csr_matrix (float64 entries +-1): column j
is rescaling_vector(net, net.hidden[j]), so row k (edge u -> v) has +1 in v's column when v is
hidden and -1 in u's column when u is hidden. B @ Z = 0, rank Z = h, and d log(theta) =
Z d log(lambda) is the tangent of the rescaling orbit. Only for one parameter per edge
(NetworkError otherwise: see rescaling_symmetry_dimension). Complexity: O(d).)doc");
  m.def(
      "rescale",
      [](const NetworkArg& arg, const py::object& theta, const py::object& lambdas) {
        const Network& net = arg.dag(0);
        const auto t = theta_argument<double>(theta, arg);
        const auto l = vector_argument<double>(lambdas, "lambdas");
        return owning_array(rescale(net, as_span<double>(t), as_span<double>(l)));
      },
      py::arg("net"), py::arg("theta"), py::arg("lambdas"),
      R"doc(theta rescaled by lambdas, a new float64 array: lambdas has one factor per hidden node
(net.hidden order), each finite and > 0; the parameter of edge u -> v is multiplied by
lambda_v / lambda_u (lambda = 1 on inputs and outputs). Phi, and the function the network
computes, are unchanged. With shared parameters every edge of a parameter must get the same
factor and every fixed edge (pooling, skip) the factor 1, else ValueError names the parameter or
edge (such lambdas are not a symmetry). theta and lambdas: numpy arrays, lists or torch tensors.
Complexity: O(edges).)doc");
  m.def(
      "path_magnitude",
      [](const NetworkArg& net, const py::object& theta, int threads, const py::object& progress) {
        const EngineOptions o = engine_options(threads, 0, progress, "path_magnitude");
        return owning_array(with_theta(net, theta, [&](std::span<const double> t) {
          return path_magnitude(net.model(), t, o);
        }));
      },
      py::arg("net"), py::arg("theta") = py::none(), py::kw_only(), py::arg("threads") = 0,
      py::arg("progress") = py::none(),
      R"doc(The path magnitude of each parameter: a float64 array of d entries, sum over the paths p
through parameter k of |Phi_p| (counted once per edge of p carrying k) -- how much of
||Phi||_1 goes through k, the score of magnitude-based path pruning. theta_k times the gradient
of ||Phi||_1 (path_norm_gradient with s = 1), by one forward and one backward pass: no path is
enumerated, and a LayerNetwork is not unrolled. Invariant under rescale. Entries beyond
double's range are inf. theta: d finite numbers; None uses the stored weights. threads: 0 = all
cores. The GIL is released. Complexity: O(m + d).)doc");
}

}  // namespace pathlift::python
