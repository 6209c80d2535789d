#pragma once
// The layer-by-layer dynamic programme behind layer_dp.hpp (docs/layers.md#path-free).
//
// A sum over partial paths is kept per layer output as a Tensor: one double per entry and one
// binary exponent for the whole tensor (values = v * 2^exp), renormalised after every layer
// so that nothing overflows or underflows however deep the network. Each layer is a linear map
// T_w of its inputs' sums whose coefficients are the unrolled edges' weights transformed by a
// Mode: |w|^s (path-norms), w^2 (the kernel), theta * v (the derivative terms of K v, 0 on
// fixed edges) or 1 (counting). A layer's parameters are gathered once per pass into a
// WeightBlock (mantissas and one exponent). Convolutions are im2col + Eigen GEMM in blocks of
// fixed shapes, so results are bit-identical for any thread count. A linear layer's transformed
// weights are used by tiles (ParamTransform), never materialised: it may hold most of theta.
//
// Pending sums of the unroller (docs/layers.md) do not change these sums: a materialised
// pending sum is a node reached by the same terms, left by edges of weight 1.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "pathlift/layers.hpp"
#include "pathlift/options.hpp"
#include "pathlift/scaled_real.hpp"
#include "pathlift/types.hpp"
#include "src/core/eigen_threads.hpp"
#include "src/layers/layer_kinds.hpp"
#include "src/layers/layers_geometry.hpp"

namespace pathlift::detail {

/// Sums of one layer output: value[i] * 2^exp.
struct Tensor {
  Buffer<double> value;
  std::int64_t exp = 0;
};
using TensorPtr = std::shared_ptr<Tensor>;

/// Position classes of every layer (layer_classes.hpp).
struct Classes;
using LayerClasses = std::vector<std::optional<Classes>>;

/// How an edge weight w enters a pass.
enum class Mode : std::uint8_t {
  power,    ///< |w|^s (s = 0: every edge 1)
  square,   ///< w^2
  product,  ///< theta_k v_k on parameter edges, 0 on fixed edges (the derivative terms of K v)
  ones      ///< 1 (path counting)
};

/// A spec's transformed weight and bias blocks, kept for the passes that share it
/// (layer_kernels.hpp's weights_of).
struct BlockCache;

struct WeightSpec {
  Mode mode = Mode::power;
  double s = 1;                       ///< Mode::power
  std::span<const double> theta;      ///< all modes but ones
  std::span<const double> direction;  ///< Mode::product: v
  /// Where set, the blocks of convolutions and batch norms are gathered once into it and read
  /// from it by every later pass with this spec (K v: theta^2 for all products, theta v for
  /// a product's two passes). Not for linear layers, whose weights are used by tiles.
  BlockCache* cache = nullptr;
};

/// A layer output's positions in classes on which a tensor is equal: cls[n] the class of
/// position n (row-major over the spatial axes), rep[k] a position of class k.
struct PositionGroups {
  std::vector<Index> cls;
  std::vector<Index> rep;
};

/// The layer graph prepared for passes: shapes, windows, the last consumer of each layer.
class LayerPlan {
 public:
  /// Validates the graph (layer_shapes).
  LayerPlan(const LayerGraph& graph, const EngineOptions& options);

  [[nodiscard]] const LayerGraph& graph() const { return *m_graph; }
  [[nodiscard]] std::size_t size() const { return m_graph->layers.size(); }
  [[nodiscard]] const Layer& layer(std::size_t l) const { return m_graph->layers[l]; }
  [[nodiscard]] std::size_t input(std::size_t l, std::size_t k = 0) const {
    return static_cast<std::size_t>(layer(l).inputs[k]);
  }
  [[nodiscard]] const std::vector<Index>& shape(std::size_t l) const { return m_shapes[l]; }
  [[nodiscard]] Index entries(std::size_t l) const { return m_entries[l]; }
  [[nodiscard]] const Window& window(std::size_t l) const { return m_windows[l]; }
  /// The last layer that reads layer l (size() when l is an output).
  [[nodiscard]] std::size_t last_use(std::size_t l) const { return m_last_use[l]; }
  [[nodiscard]] int threads() const { return m_threads; }
  /// The classes of layer l's output on which every backward sum is equal (layer_classes.hpp's
  /// backward_classes), where they save at least a quarter of its positions; nullptr elsewhere.
  /// A convolution whose output's backward sums are held whole computes its transposed map and
  /// weight products on them (conv_adjoint, conv_weight_products).
  [[nodiscard]] const PositionGroups* backward_groups(std::size_t l) const;
  /// The most entries an unkept forward pass holds at once when layer l's tensor has sizes[l]
  /// entries: each tensor from its layer to the last use of its storage (a view shares its
  /// input's).
  [[nodiscard]] Index forward_peak(const std::vector<Index>& sizes) const;
  /// Reports progress `fraction` (0..1) to the options' callback, if any.
  void report(double fraction) const;
  /// Throws TooLarge (with the sizes) when `what` would need more than the memory limit:
  /// `kept` passes whose every tensor is kept, with backward passes (0: one forward pass whose
  /// tensors are dropped after their last use: the most it holds at once, from the plan),
  /// `param_sums` per-parameter accumulators of 16 bytes, plus the largest column matrix of a
  /// convolution, a col2im block per thread, what a convolution on its backward classes holds
  /// beside them (backward_groups), and the transformed parameters in use (the
  /// largest convolution kernel; a tile of a linear layer or of edge products per thread).
  /// theta, which the caller holds, is not counted. With `classes` (forward_classes: the
  /// passes run on them), a layer that has classes holds its tensor, and a convolution its
  /// column matrix, over its classes, but an output layer is expanded to its full tensor; a
  /// `counting` pass (Mode::ones, never on classes) holds its tensors alone (its convolutions
  /// are sums over windows: no column matrix, no parameters). `per_output_bytes`: the result's
  /// bytes per output entry (a path-norm's or a count's per_output).
  void require_memory(int kept, int param_sums, std::string_view what,
                      const LayerClasses* classes = nullptr, bool counting = false,
                      double per_output_bytes = 0) const;

 private:
  const LayerGraph* m_graph;
  std::vector<std::vector<Index>> m_shapes;
  std::vector<Index> m_entries;
  std::vector<Window> m_windows;
  std::vector<std::size_t> m_last_use;
  int m_threads = 1;
  Index m_total_entries = 0;          // entries of the layers that are not views
  Index m_max_col2im = 0;             // the largest col2im block of a transposed convolution
  Index m_max_kernel = 0;             // the largest convolution kernel (its parameter count)
  Index m_forward_peak = 0;           // the most entries an unkept forward pass holds at once
  Index m_max_grouped = 0;            // the most a convolution on its backward classes holds beside
  bool m_has_adjoint_window = false;  // a forward pass then needs col2im blocks too
  std::vector<std::size_t> m_owner;   // the layer whose tensor layer l's is (a view's input's)
  std::vector<std::size_t> m_end;     // the last use of the tensor owned by layer l
  std::vector<std::optional<PositionGroups>> m_backward;  // backward_classes(), where they save
  const EngineOptions* m_options;
};

/// What a pass reports progress over: [from, to) of the whole computation.
struct Span {
  double from = 0;
  double to = 1;
};

/// Forward sums of every layer output, inputs and bias nodes counting `source` (1; 0 for the
/// derivative sums C of K v). With `extra` (the kept tensors A of a first pass) and `extra_w`,
/// each parameter layer adds T_extra(A of its input) + its bias block (bias nodes count 1):
/// C = T_sq(C) + T_prod(A). `keep`: every tensor is kept (for a backward pass); otherwise one
/// is dropped after its last use and only the outputs survive. With `classes`
/// (forward_classes(plan), layer_classes.hpp; not for counting), the layers that have classes
/// are computed and kept on them (`extra` too must have been computed with them); an unkept
/// pass returns its outputs on their full positions (expand_outputs), a kept one every tensor
/// on its classes.
std::vector<TensorPtr> forward_pass(const LayerPlan& plan, const WeightSpec& w, bool keep,
                                    double source, const std::vector<TensorPtr>* extra,
                                    const WeightSpec* extra_w, Span progress,
                                    const LayerClasses* classes = nullptr);

/// Backward sums G = [output] + sum over consumers of T^T G (outputs seeded with 1 when
/// `seed_outputs`), with `extra` (kept backward tensors B) as in forward_pass:
/// E = T_sq^T E + T_prod^T B. At each parameter layer l, once G_l is final, visit(l, G_l) is
/// called. Returns every G when `keep`: empty pointers where no output is reached, and where
/// no parameter layer reads G (the input, and layers that only fixed layers on the input feed).
/// With `classes` (forward_classes(plan)), a layer that has classes holds its G as the sums
/// over each of its classes (channels x classes), `extra` too, and visit sees them so: all
/// that edge products against forward sums on the same classes need, computed by transposes
/// on the classes (layer_classes.hpp).
std::vector<TensorPtr> backward_pass(const LayerPlan& plan, const WeightSpec& w, bool seed_outputs,
                                     bool keep, const std::vector<TensorPtr>* extra,
                                     const WeightSpec* extra_w,
                                     const std::function<void(std::size_t, const Tensor&)>& visit,
                                     Span progress, const LayerClasses* classes = nullptr);

/// Per-parameter sums over the edges of each parameter of layer l (linear, conv or
/// batch_norm): (out_m[k], out_k[k]) += sum_{e of k} X(src e) Y(dst e), with X the forward sums
/// of l's input, Y the backward sums of l's output, and `bias_value` the forward sum of a bias
/// node; each term multiplied by factor[k] when `factor` is given (indexed by parameter).
/// Accumulated with dp_merge (out_m starts at 0 and out_k at dp_no_exponent); without out_k,
/// added to out_m as doubles (each term converted, +-inf beyond double's range). With
/// `classes` (those of the passes that made x and y), x is held on its input's classes and y
/// as the sums over l's classes, where they have them.
void edge_products(const LayerPlan& plan, std::size_t l, const Tensor& x, const Tensor& y,
                   double bias_value, const double* factor, double* out_m, std::int64_t* out_k,
                   const LayerClasses* classes = nullptr);

/// One term X . Y of a sum of edge products, bias nodes counting bias_value.
struct EdgeTerm {
  const Tensor* x;
  const Tensor* y;
  double bias_value;
};

/// Where a convolution's weight sums start: out_m[k] = v[k] ab[k] is written as each block is
/// merged, instead of being read (K v's own term v_k [A . B]_k, for a layer whose weights no
/// other layer shares: each of its sums is merged once).
struct MergeStart {
  const double* v;
  const double* ab;
};

/// The sum of the terms' edge products, as edge_products each: a convolution's terms (at most
/// two) share its GEMM blocks and one merge per parameter (K v's C . B + A . E). With `start`
/// (a convolution, doubles only), its weight sums start there.
void edge_products(const LayerPlan& plan, std::size_t l, std::span<const EdgeTerm> terms,
                   const double* factor, double* out_m, std::int64_t* out_k,
                   const LayerClasses* classes = nullptr, const MergeStart* start = nullptr);

/// The number of input-to-output paths of unroll(graph) of each length (in edges), as
/// (mantissa, exponent) per length: a counting pass whose tensors are split by length.
/// `nodes` is the unroller's node_entries(): a pending sum that becomes a node (1) puts one more
/// edge on the paths through it; activations, max_pool entries and the output nodes always do.
std::vector<std::pair<double, std::int64_t>> length_histogram(
    const LayerPlan& plan, const std::vector<std::vector<std::uint8_t>>& nodes, Span progress);

/// What length_histogram costs, from the layers alone (O(layers)): `bytes`, an upper bound on
/// the tensors it holds at once (per layer, its entries times the lengths its sums can span,
/// summed over the tensors alive together); `work`, its multiply-adds (each layer's forward
/// work times the lengths it spans: a chain of L layers with biases spans up to L, so the work
/// grows as L^2); `forward_work`, one counting pass's; `lengths`, the most lengths a layer spans.
struct HistogramCost {
  double bytes = 0;
  double work = 0;
  double forward_work = 0;
  Index lengths = 0;
};
HistogramCost length_histogram_cost(const LayerPlan& plan);

/// The sum over the paths of unroll(graph) of their lengths (in edges, nnz(B) with one parameter
/// per edge): the counting pass in dual numbers (paths, and the sum of their lengths), two
/// tensors a layer whatever the range of lengths; the same node rules as length_histogram.
ScaledReal total_path_length(const LayerPlan& plan,
                             const std::vector<std::vector<std::uint8_t>>& nodes, Span progress);

/// The forward map of parameter layer l (linear, conv, batch_norm) applied to x, bias nodes
/// counting bias_value; normalised. With `classes`, a layer that has classes is computed on
/// them (x on its input's).
TensorPtr param_forward(const LayerPlan& plan, std::size_t l, const Tensor& x,
                        const WeightSpec& spec, double bias_value,
                        const LayerClasses* classes = nullptr);
/// The forward map of a layer without parameters, its inputs read from sums[input].
TensorPtr plain_forward(const LayerPlan& plan, std::size_t l, const std::vector<TensorPtr>& sums,
                        const WeightSpec& spec);

/// Batch norm l's scale a of `in` by channel into `out` (both `entries` long): its forward map
/// without the bias, and its transposed map; out's exponent is a's plus in's. Returns the
/// channel count.
Index batch_norm_scale(const LayerPlan& plan, std::size_t l, const WeightSpec& spec,
                       const Tensor& in, Tensor& out, Index entries);

/// A pick layer l (its form: pick): transpose false, out[o, i, r] = in[o, indices[i], r]; true: the
/// transposed map, out[o, indices[i], r] += in[o, i, r] (out zeroed by the caller).
void pick_apply(const LayerPlan& plan, std::size_t l, const double* in, double* out,
                bool transpose);

/// The sum over every output entry of a pass's sums (the output layers on their full positions:
/// expand_outputs), and each entry as a ScaledReal when `each` is given.
ScaledReal outputs_total(const LayerPlan& plan, const std::vector<TensorPtr>& sums,
                         std::vector<ScaledReal>* each);

/// Eigen's own GEMM threads are set to 1 for the guard's lifetime (EigenSingleThread: the engine
/// splits the work itself, in blocks of fixed shapes), then restored. Every entry point of the
/// layer DP holds one: when the outermost guard of a thread ends, the engine's reusable layer
/// buffers (layer_kernels.hpp's layer_buffer) are released, so nothing stays allocated between
/// calls.
class EigenSerial {
 public:
  EigenSerial();
  EigenSerial(const EigenSerial&) = delete;
  EigenSerial& operator=(const EigenSerial&) = delete;
  ~EigenSerial();

 private:
  EigenSingleThread m_eigen;
};

}  // namespace pathlift::detail
