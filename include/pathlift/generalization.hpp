#pragma once
/// \file generalization.hpp
/// The generalization bound of the path-norm toolkit (Gonon, Brisebarre, Riccietti, Gribonval,
/// "A path-norm toolkit for modern networks", ICLR 2024, Theorem 3.1 and Remark 3.1), with every
/// constant read from the model: docs/generalization.md.
///
/// For a DAG ReLU network whose neurons are ReLU, identity or max-pooling ones, n i.i.d.
/// training samples with ||x||_inf <= B, and the cross-entropy loss, the expected
/// generalization gap of any estimator over the parameters with ||Phi(theta)||_1 <= r is at most
///   4 C max(B, 1) / sqrt(n) x r,
///   C = sqrt(D log((3 + 2P) K) + log((3 + 2P) / (1 + P) (d_in + 1) d_out)),
/// with D the depth (the longest input-to-output path, in edges), P the number of distinct
/// kinds of max-pooling neurons (0 or 1 here: max pooling only), K the most inputs of a
/// max-pooling neuron (1 without one), d_in and d_out the input and output dimensions. Remark
/// 3.1 sharpens C to sqrt(D log 3 + M log K + log((d_in + 1) d_out)), M the most max-pooling
/// neurons on one path.

#include <span>
#include <string>
#include <vector>

#include "pathlift/model.hpp"
#include "pathlift/options.hpp"
#include "pathlift/scaled_real.hpp"
#include "pathlift/types.hpp"

namespace pathlift {

struct GeneralizationBoundOptions {
  double samples = 0;      ///< n, the number of training samples (> 0)
  double input_bound = 0;  ///< B >= ||x||_inf over the training inputs (>= 0)
  EngineOptions engine;
};

/// The bound and each of its ingredients, named as the paper names them.
struct GeneralizationBound {
  Index depth = 0;  ///< D: the longest input-to-output path of the DAG (edges)
  /// Whether D is the longest path itself (always on a DAG; on a layer graph when its path
  /// lengths were counted) or an upper bound from the layers (the bound stays valid: C grows
  /// with D).
  bool depth_exact = true;
  Index max_pool_types = 0;       ///< P: the distinct k of the k-max-pooling neurons (max: k = 1)
  Index max_pool_kernel = 1;      ///< K: the most inputs of a *-max-pooling neuron (1: none)
  Index max_pools_on_a_path = 0;  ///< M: the most max-pooling neurons on one path
  Index inputs = 0;               ///< d_in (bias nodes excluded)
  Index outputs = 0;              ///< d_out
  double samples = 0;             ///< n
  double input_bound = 0;         ///< B
  double constant = 0;            ///< C
  double coefficient = 0;         ///< 4 C max(B, 1) / sqrt(n)
  ScaledReal path_norm;           ///< ||Phi(theta)||_1
  ScaledReal bound;               ///< coefficient x ||Phi(theta)||_1
  double sharp_constant = 0;      ///< Remark 3.1's C
  double sharp_coefficient = 0;   ///< 4 C_sharp max(B, 1) / sqrt(n)
  ScaledReal sharp_bound;         ///< sharp_coefficient x ||Phi(theta)||_1
};

/// The assumptions under which the bound holds, one sentence each (the report's and the docs').
std::vector<std::string> generalization_assumptions();

/// The bound of Theorem 3.1 (and Remark 3.1) for `model` at `theta`: D, P, K, M, d_in, d_out
/// from the graph (a layer graph is never unrolled), the L1 path-norm by path_norm (path_free).
/// Throws std::invalid_argument for n <= 0 or not whole, B < 0 or a non-finite one (naming the
/// value), for a bad theta (check_theta), and for a neuron the theorem does not cover (a leaky
/// ReLU: the message names the node or layer); TooLarge as path_norm and the unroller's plan.
/// Complexity: one path-norm pass and one counting pass; O(layers) beyond them on a layer
/// graph, O(m) on a DAG.
GeneralizationBound generalization_bound(const Model& model, std::span<const double> theta,
                                         const GeneralizationBoundOptions& options);

/// The report as JSON: "D", "D_exact", "P", "K", "M", "d_in", "d_out", "n", "B", "C",
/// "coefficient", "l1_path_norm" (null beyond double's range), "log10_l1_path_norm", "bound",
/// "log10_bound", "C_sharp", "coefficient_sharp", "bound_sharp", "log10_bound_sharp" and
/// "assumptions".
std::string to_json(const GeneralizationBound& report, int indent = 2);

}  // namespace pathlift
