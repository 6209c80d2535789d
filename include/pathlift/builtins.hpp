#pragma once
/// \file builtins.hpp
/// Networks built into pathlift: the paper's examples, feed-forward networks in PyTorch
/// parameter order, and reproducible random DAGs.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pathlift/network.hpp"

namespace pathlift {

/// The paper's Figure 1: I = {a, c, g} (g a bias), H = {d, f}, O = {h}; edges 0..6 are
/// a->d, a->f, c->d, c->f, d->h, f->h, g->h (the paper's 1..7). P = 5, d = 7, h = 2.
Network fig1();

/// The sketch of proof's network without hidden node: inputs a, b; outputs c (designated,
/// feeds d) and d; edges a->d, a->c, b->d, b->c, c->d. Phi = (t1, t2, t2 t5, t3, t4, t4 t5)
/// in the paper's 1-based numbering.
Network sketch_h0();

/// The sketch's network with one hidden node: nodes a, b, u, k, f; edges a->f, a->k, b->u,
/// u->f, u->k, k->f; k designated output. Phi = (t1, t2, t2 t6, t3 t4, t3 t5, t3 t5 t6).
Network sketch_h1();

/// Feed-forward ReLU network: r inputs x0.., hidden layers of the given widths (nodes
/// h<l>_<j>, l from 1), q outputs y0..; with `bias`, one bias node b<l> per Linear layer
/// (l = 1..L+1). Parameter order is PyTorch's nn.Sequential(Linear, ReLU, ..., Linear):
/// per layer W (out x in, row-major) then b. Node order: inputs, b1, layer 1, b2, layer 2,
/// ..., b<L+1>, outputs. Throws std::invalid_argument for a zero width or r, q = 0, and for
/// sizes whose node or edge count exceeds NodeId or EdgeId (naming the sizes).
Network feed_forward(Index r, const std::vector<Index>& widths, Index q, bool bias = true);

/// Options of random_dag; the defaults exercise every feature of the model.
struct RandomDagOptions {
  double parallel_edge_probability = 0.1;       ///< an edge is doubled with this probability
  double designated_output_probability = 0.15;  ///< per non-sink node with incoming edges
  double bias_probability = 0.2;                ///< per source node
  bool shuffle = true;                          ///< shuffle node and edge order (non-topological)
};

/// The largest m random_dag takes: 8192 nodes, 33.5 million pairs drawn.
inline constexpr Index random_dag_max_nodes = 8192;

/// A random valid DAG with 2 <= m <= random_dag_max_nodes nodes: each ordered pair (i < j)
/// of a hidden random order gets an edge with probability p; isolated nodes are then
/// connected. Reproducible: the same (m, p, seed, options) give the same network on every
/// platform. Complexity: O(m^2) draws.
Network random_dag(Index m, double p, std::uint64_t seed, const RandomDagOptions& options = {});

/// A built-in network by name: "fig1", "sketch-h0", "sketch-h1", "ff:r,w1,...,wL,q",
/// "ff-nobias:r,w1,...,wL,q", "random-dag:m,p,seed". Throws std::invalid_argument listing the
/// names otherwise.
Network builtin_network(std::string_view name);

/// The fixed names builtin_network() accepts, and the parameterised forms as patterns.
std::vector<std::string> builtin_network_names();

/// Parses "r,w1,...,wL,q" (at least r and q). Throws std::invalid_argument naming the entry.
std::vector<Index> parse_layer_sizes(std::string_view text);

}  // namespace pathlift

namespace pathlift {

/// d standard normal weights from `seed` (reproducible on every platform).
std::vector<double> normal_weights(Index d, std::uint64_t seed);

/// Where default_theta() takes theta from.
enum class ThetaSource : std::uint8_t {
  stored_weights,  ///< the weights stored with the network (Network::has_weights())
  normal_seed_0    ///< none stored: normal_weights(d, 0)
};

/// Where default_theta(net) takes theta from: the stored weights when the network has them.
ThetaSource default_theta_source(const Network& net);

/// theta for a computation given none: the network's stored weights, else
/// normal_weights(d, 0): the default of the CLI's commands and of Python's rank functions, which
/// say where it came from with default_theta_source(). Complexity: O(d).
std::vector<double> default_theta(const Network& net);

}  // namespace pathlift
