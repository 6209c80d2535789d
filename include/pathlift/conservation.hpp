#pragma once
/// \file conservation.hpp
/// The conservation laws of gradient flow (Marcotte, Gribonval, Peyre, "Abide by the law and
/// follow the flow: conservation laws for gradient flows", 2023): for any loss of the network's
/// function, each rescaling symmetry conserves one quadratic quantity. A rescaling by
/// log-scales alpha (one per class of parameter_classes(), symmetry.hpp) moves theta_k to
/// theta_k exp(c_k), c_k = alpha[target k] - alpha[source k], and leaves the function
/// unchanged, so the gradient g of any loss satisfies sum_k c_k theta_k g_k = 0; along
/// theta' = -g, sum_k c_k theta_k^2 is then constant. For the class h (alpha = e_h):
///
///   Q_h(theta) = sum_{k entering h} theta_k^2 - sum_{k leaving h} theta_k^2
///
/// (a unit's bias enters its unit's class). A parameter that no edge carries has gradient 0:
/// theta_k^2 is conserved too. There are d - rank(dPhi) of these laws at a theta without zero
/// weights (the rank theorem: rank(dPhi) = d - h_sym), and they are independent. Under SGD with
/// step eta they drift by O(eta^2) per step. docs/dynamics.md.
///
/// Example:
/// \code
///   const pathlift::Model m(pathlift::feed_forward(64, {32}, 10));
///   const auto laws = pathlift::conservation_laws(m, theta);
///   // laws.values[j]: unit j's sum of squared weights in minus out; laws.independent = 32
/// \endcode

#include <span>
#include <string>
#include <vector>

#include "pathlift/model.hpp"
#include "pathlift/options.hpp"
#include "pathlift/types.hpp"

namespace pathlift {

/// The conserved quantities at theta: law i has value values[i] and scale squares[i].
struct ConservationLaws {
  /// Q_h per class (the first `classes` laws, in the classes' order of parameter_classes()),
  /// then theta_k^2 per parameter that no edge carries (the last `unused`).
  std::vector<double> values;
  /// The sum of the squares in and out: |values[i]| <= squares[i]. A law's drift relative to
  /// it is scale-free (a balanced network has every Q_h = 0).
  std::vector<double> squares;
  /// What each law is about: on a DAG, "node h3" or "nodes a, b and 3 more" (the nodes its
  /// incoming parameters enter); on a layer graph, "unit 5 of 'fc1' (out: 'fc2')" or
  /// "channel 3 of 'layer1.0.bn2', 'layer1.1.bn2' (out: 'layer1.1.conv1', 'layer2.0.conv1')":
  /// the channels its incoming weights and biases enter, the layers whose weights leave it;
  /// "parameter 7 (weight 2 of 'fc1'), which no edge carries". Distinct ("(class #h)" is added
  /// where two classes would read the same).
  std::vector<std::string> descriptions;
  Index classes = 0;      ///< laws of rescaling classes
  Index unused = 0;       ///< laws of parameters that no edge carries
  Index independent = 0;  ///< classes + unused: d - rank(dPhi) at a theta without zero weights
  /// The layer graph's classes were coupled by constraints that its unrolled DAG merges: the
  /// classes (and descriptions) are then the unrolled DAG's nodes'.
  bool unrolled = false;
};

/// The conservation laws of `model` at theta (d finite numbers). The classes are those of
/// parameter_classes(model) (a layer graph never unrolled), or of its unrolled DAG where the
/// layer graph keeps constraints that unrolling merges (and it fits in options.max_memory).
/// Each sum is scaled by a power of two per class, so no square overflows unless the law's
/// own sum of squares does. Throws std::invalid_argument for a theta without d finite entries
/// or for classes that constraints still couple (weights shared between layers: the conserved
/// quantities are then combinations of the Q_h, not listed), RangeError naming the parameter
/// when a law's sum of squares is beyond double's range (an overflow, or below its smallest
/// normal number: digits lost), TooLarge as parameter_classes().
/// Complexity: that of parameter_classes(), then O(d) (O(edges) more for a DAG's names).
ConservationLaws conservation_laws(const Model& model, std::span<const double> theta,
                                   const EngineOptions& options = {});

/// {"independent", "classes", "unused", "unrolled", "laws": [{"description", "value",
/// "squares"}, ...]} in the order above.
std::string to_json(const ConservationLaws& laws, int indent = -1);

}  // namespace pathlift
