#pragma once
// Position classes of a forward pass from constant sources (docs/layers.md#position-classes).
//
// A path-norm pass starts from every input entry equal (1) and adds one bias sum per channel,
// and a layer's weights do not depend on the position. So two output positions of a
// convolution or pooling whose windows read, tap by tap, inputs of one class (and cross the
// border at the same taps) hold equal sums for any weights: the border bands differ, the
// interior is one class. Per spatial axis, a tensor is kept as one entry per class, and a
// window layer is computed at one representative position per output class. On resnet18 at
// 224 x 224 the stem and layer1 shrink from 3,136 positions to about a hundred; the layers at
// 7 x 7, where every position differs, run on the full tensors as before. A backward pass
// whose sums only edge products against such forward sums read keeps, per layer, its sums over
// the same classes: they propagate through the transposed maps by themselves. Behind a global
// average pool the backward sums themselves repeat over positions (backward_classes): the
// layers held whole there run their transposed maps and weight products once per class.

#include <optional>
#include <vector>

#include "src/layer_dp/detail/layer_dp_engine.hpp"
#include "src/layer_dp/detail/layer_kernels.hpp"

namespace pathlift::detail {

/// The classes of one spatial axis: positions with equal sums.
struct AxisClasses {
  std::vector<Index> of;   ///< full position -> its class
  std::vector<Index> rep;  ///< class -> its first position (where it is computed)

  [[nodiscard]] Index size() const { return static_cast<Index>(rep.size()); }
};

/// The classes of a {C, H, W} tensor ({C, L}: H = 1), stored as C x h.size() x w.size().
struct Classes {
  AxisClasses h;
  AxisClasses w;

  [[nodiscard]] Index positions() const { return h.size() * w.size(); }
  [[nodiscard]] Index full_positions() const {
    return static_cast<Index>(h.of.size() * w.of.size());
  }
};

/// The classes of every layer's output in a forward pass whose input entries are all equal
/// and whose bias nodes count one value per layer: std::nullopt where the layer is computed
/// on its full tensor (no spatial dimension, no position shared, or a kind kept whole:
/// the forms dense, reshape, pick, adjoint_window and lerp, a concat along a spatial axis). An add,
/// a sub or a concat along the channels works on the common refinement of its inputs' classes.
/// O(layers x positions x kernel).
LayerClasses forward_classes(const LayerPlan& plan);

/// Per layer, classes of its output's positions on which every backward sum is equal, whatever
/// the (position-independent) weights: where the sums reach the layer only through global
/// average pools (all input positions one class) and back through batch norms, activations,
/// scales, adds, subs and convolutions (an input position's class: the output classes that read
/// it, tap by tap). std::nullopt where a consumer is of another kind, where the layer is an
/// output (its seed may differ by position) or has no spatial axis. On resnet18 at 224: layer4's
/// last convolution 1 class of 49 positions, the one before 9, layer4.0's output 25.
/// O(layers x positions per axis x kernel).
LayerClasses backward_classes(const LayerPlan& plan);

/// x (channels x from.positions()) gathered onto `to` (a refinement of `from`: each of its
/// classes lies in one class of `from`), or onto the full positions when `to` is null.
TensorPtr regather(const Tensor& x, Index channels, const Classes& from, const Classes* to,
                   int threads);

/// The sums of a pass with the output layers' tensors moved to their full positions.
std::vector<TensorPtr> expand_outputs(const LayerPlan& plan, std::vector<TensorPtr> sums,
                                      const LayerClasses& classes);

/// y (channels x the full positions) summed over each class of `c` (channels x c.positions()).
TensorPtr class_sums(const Tensor& y, Index channels, const Classes& c, int threads);

/// y (channels x fine.positions(), class sums) summed onto `coarse`, whose classes are unions
/// of fine's (fine refines coarse: an add's classes and those of one of its inputs); y itself
/// when they are the same classes.
TensorPtr coarsen(const TensorPtr& y, Index channels, const Classes& fine, const Classes& coarse,
                  int threads);

/// The backward map on class sums: x_sums (channels_in x in.positions(), zeroed by the
/// caller) += the sums over each input class of W^T y, y given by its sums over each output class
/// (channels_out x out.positions()). Exact, because every position of an output class reads, tap by
/// tap, the same input classes (docs/layers.md#position-classes).
void conv_transpose_classes(const ConvShape& c, const double* wm, const double* y_sums,
                            const Classes& in, const Classes& out, double* x_sums, int threads);

/// y = W x per group on position classes : x (channels_in x
/// in.positions()), y (channels_out x out.positions()), each output class computed at its
/// representative position.
void conv_forward_classes(const ConvShape& c, const double* wm, const double* x, const Classes& in,
                          const Classes& out, double* y, int threads);

/// The weight products on position classes: for each term (at most two), x (channels_in x
/// in.positions()) and y, the backward sums of the output summed over each of out's classes
/// (channels_out x out.positions()); the positions of a class read, tap by tap, equal entries
/// of x.
void conv_weight_products_classes(const ConvShape& c, std::span<const ProductTerm> terms,
                                  const Classes& in, const Classes& out, const ProductSink& sink,
                                  int threads);

/// Layer l's sums on its classes (classes[l] set), its inputs held on theirs.
TensorPtr classes_forward(const LayerPlan& plan, std::size_t l, const std::vector<TensorPtr>& sums,
                          const WeightSpec& spec, double bias_value, const LayerClasses& classes);

}  // namespace pathlift::detail
