// builtins.hpp: the paper's examples, feed-forward networks in PyTorch order, random DAGs.

#include <pybind11/stl.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "common.hpp"
#include "pathlift/builtins.hpp"

namespace pathlift::python {

void bind_builtins(py::module_& m) {
  m.def("fig1", &fig1,
        "The paper's Figure 1: I = {a, c, g} (g a bias), H = {d, f}, O = {h}; edges 0..6 are "
        "a->d, a->f, c->d, c->f, d->h, f->h, g->h. P = 5, d = 7, h = 2.");
  m.def("sketch_h0", &sketch_h0,
        "The sketch of proof's network without hidden node: inputs a, b; outputs c (designated, "
        "feeds d) and d; edges a->d, a->c, b->d, b->c, c->d.");
  m.def("sketch_h1", &sketch_h1,
        "The sketch's network with one hidden node: nodes a, b, u, k, f; edges a->f, a->k, "
        "b->u, u->f, u->k, k->f; k designated output.");
  m.def(
      "feed_forward",
      [](Index r, const std::vector<Index>& widths, Index q, bool bias) {
        py::gil_scoped_release release;
        return feed_forward(r, widths, q, bias);
      },
      py::arg("r"), py::arg("widths"), py::arg("q"), py::arg("bias") = true,
      "Feed-forward ReLU network: r inputs x0.., hidden layers of the given widths (nodes "
      "h<l>_<j>), q outputs y0..; with bias, one bias node b<l> per Linear layer. Parameter "
      "order is PyTorch's nn.Sequential(Linear, ReLU, ..., Linear): per layer W (out x in, "
      "row-major) then b. ValueError for a zero width or r, q = 0.");
  m.def(
      "random_dag",
      [](Index nodes, double p, Seed seed, double parallel_edge_probability,
         double designated_output_probability, double bias_probability, bool shuffle) {
        return random_dag(nodes, p, seed,
                          {.parallel_edge_probability = parallel_edge_probability,
                           .designated_output_probability = designated_output_probability,
                           .bias_probability = bias_probability,
                           .shuffle = shuffle});
      },
      py::arg("m"), py::arg("p"), py::arg("seed"), py::kw_only(),
      py::arg("parallel_edge_probability") = RandomDagOptions{}.parallel_edge_probability,
      py::arg("designated_output_probability") = RandomDagOptions{}.designated_output_probability,
      py::arg("bias_probability") = RandomDagOptions{}.bias_probability,
      py::arg("shuffle") = RandomDagOptions{}.shuffle, py::call_guard<py::gil_scoped_release>(),
      "A random valid DAG with m >= 2 nodes: each ordered pair (i < j) of a hidden random "
      "order gets an edge with probability p; isolated nodes are then connected. Reproducible "
      "on every platform for the same arguments.");
  m.def("builtin_network", &builtin_network, py::arg("name"),
        "A built-in network by name: 'fig1', 'sketch-h0', 'sketch-h1', 'ff:r,w1,...,wL,q', "
        "'ff-nobias:r,w1,...,wL,q', 'random-dag:m,p,seed'. ValueError listing the names "
        "otherwise.");
  m.def("builtin_network_names", &builtin_network_names,
        "The names builtin_network() accepts (parameterised forms as patterns).");
  m.def("parse_layer_sizes", &parse_layer_sizes, py::arg("text"),
        "Parses 'r,w1,...,wL,q' into a list of ints. ValueError naming the bad entry.");
  m.def(
      "normal_weights",
      [](Index d, Seed seed) {
        if (d < 0) {
          throw std::invalid_argument("normal_weights: d must be >= 0");
        }
        std::vector<double> w;
        {
          py::gil_scoped_release release;
          w = normal_weights(d, seed);
        }
        return owning_array(std::move(w));
      },
      py::arg("d"), py::arg("seed"),
      "d standard normal weights from seed (float64; reproducible on every platform): the "
      "CLI's --seed.");
}

}  // namespace pathlift::python
