#pragma once
// The kernels of the layer dynamic programme (layer_dp_engine.hpp): scaled tensors, parameter
// blocks, convolutions as im2col + Eigen GEMM (forward, transposed, weight products) and
// window sums, each parallel over blocks of fixed shapes so that results do not depend on
// the thread count.

#include <Eigen/Core>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "src/layer_dp/detail/layer_dp_engine.hpp"

namespace pathlift::detail {

using RowMat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatMap = Eigen::Map<RowMat, 0, Eigen::OuterStride<>>;
using ConstMatMap = Eigen::Map<const RowMat, 0, Eigen::OuterStride<>>;
using VecMap = Eigen::Map<Eigen::VectorXd>;
using ConstVecMap = Eigen::Map<const Eigen::VectorXd>;

// Block shapes of the products: fixed, so that every entry is computed by the same sequence of
// operations whatever the thread count.
constexpr Index k_cols = 256;       // columns (output positions) per GEMM block
constexpr Index k_rows = 128;       // rows (output channels) per GEMM block
constexpr Index k_chunk = 1 << 14;  // entries per element-wise task
// Tiles of a linear layer's transformed weights, which are never materialised whole (a layer
// may hold most of theta): k_rows x k_tile_cols forward, k_trows x k_tcols transposed, 512 KiB
// each.
constexpr Index k_tile_cols = 512;
constexpr Index k_tcols = 512;
constexpr Index k_trows = 128;

template <class F>
void for_tasks(Index n, int threads, const F& f) {
  if (threads > 1 && n > 1) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (Index i = 0; i < n; ++i) {
      f(i);
    }
  } else {
    for (Index i = 0; i < n; ++i) {
      f(i);
    }
  }
}

/// f(begin, end) over [0, n) in chunks of k_chunk.
template <class F>
void for_chunks(Index n, int threads, const F& f) {
  const Index tasks = (n + k_chunk - 1) / k_chunk;
  for_tasks(tasks, threads, [&](Index t) { f(t * k_chunk, std::min(n, (t + 1) * k_chunk)); });
}

/// p[0, n) = 0 in parallel chunks (a d-long result: the first touch of its pages, the
/// kernel's page clearing included, shared by the threads).
void fill_zero(double* p, Index n, int threads);

/// ceil(a / b) for a >= 0, b > 0.
Index ceil_div(Index a, Index b);

/// f(r0, r1, c0, c1) over the tiles of a rows x cols matrix in blocks of row_block x
/// col_block (fixed shapes: the same tiles for any thread count), in parallel.
template <class F>
void for_tiles(Index rows, Index cols, Index row_block, Index col_block, int threads, const F& f) {
  const Index col_blocks = (cols + col_block - 1) / col_block;
  const Index row_blocks = (rows + row_block - 1) / row_block;
  for_tasks(row_blocks * col_blocks, threads, [&](Index task) {
    const Index r0 = (task / col_blocks) * row_block;
    const Index c0 = (task % col_blocks) * col_block;
    f(r0, std::min(rows, r0 + row_block), c0, std::min(cols, c0 + col_block));
  });
}

/// 2^e as a double for e <= 0 (0 below the subnormals).
double down(std::int64_t e);

/// Rescales t so that its largest magnitude lies in [0.5, 1) (the exponent absorbs 2^e).
void normalize(Tensor& t, int threads);

/// A tensor of n entries, zeros when `zero` (else left for the caller to write).
TensorPtr make_tensor(Index n, std::int64_t exp = 0, bool zero = true);

/// A scratch buffer of at least n doubles owned by the calling thread (reused across calls,
/// so that im2col blocks cost no allocation and no page fault after the first).
double* scratch(std::size_t n);

/// Reusable buffers of the calling thread for a whole layer's worth of doubles (a convolution's
/// column matrix, a transposed convolution's, a weight block's products): at least n doubles,
/// kept from layer to layer and pass to pass so that they are page-faulted once, and released
/// by release_layer_buffers() when the outermost EigenSerial guard ends. One per use (`slot`),
/// distinct from scratch(). Within the memory the plan accounts for (LayerPlan::require_memory:
/// the largest column matrix and convolution kernel).
enum class LayerBuffer : std::uint8_t { columns, columns_second };
double* layer_buffer(LayerBuffer slot, std::size_t n);
/// Frees the calling thread's layer buffers.
void release_layer_buffers();

/// A fixed edge weight as it enters a pass (|w|^s, w^2, 1 or 0 by the pass's mode), m * 2^exp
/// with m in [0.5, 1) or 0: a scale factor of any finite size (1e300 squared) stays in range.
struct FixedWeight {
  double m = 0;
  std::int64_t exp = 0;
  /// m * 2^exp as a double (0 or +-inf beyond its range): for weights of at most 1 (pools).
  [[nodiscard]] double value() const;
};
FixedWeight fixed(double w, const WeightSpec& spec);
inline constexpr FixedWeight unit_weight{0.5, 1};  ///< 1

/// The transformed parameters theta[offset, offset + count) as mantissas * 2^exp.
struct Block {
  Buffer<double> m;
  std::int64_t exp = 0;
  bool zero = true;
};

/// The transformed parameters theta[offset, offset + count) of a pass as mantissas * 2^exp:
/// the exponent is fixed by the whole block, the mantissas are computed for any range of it,
/// so that a large block (a linear layer's weights) is used by tiles, never materialised.
class ParamTransform {
 public:
  ParamTransform(const WeightSpec& spec, Index offset, Index count, int threads);
  /// Every mantissa 0.
  [[nodiscard]] bool zero() const { return m_zero; }
  [[nodiscard]] std::int64_t exp() const { return m_exp; }
  /// The mantissas of entries [begin, end) of the block into out[0, end - begin) (one thread).
  void fill(Index begin, Index end, double* out) const;

 private:
  Mode m_mode;
  double m_s;
  bool m_ones = false;
  bool m_zero = true;
  bool m_tiny = false;
  const double* m_t = nullptr;
  const double* m_v = nullptr;
  int m_et = 0;
  int m_ev = 0;
  double m_ft = 1;
  double m_fv = 1;
  double m_frac = 1;
  std::int64_t m_exp = 0;
};

using BlockPtr = std::shared_ptr<const Block>;

/// A spec's blocks by parameter offset (WeightSpec::cache), filled as the passes ask for them
/// (by the thread that runs the layers, one at a time). An entry of an older generation is
/// refilled in place when asked for: a cache reused for a new direction (K v's theta v, one
/// generation per product) keeps its memory, page-faulted once.
struct BlockCache {
  struct Entry {
    std::shared_ptr<Block> block;
    std::uint64_t generation = 0;
  };
  std::unordered_map<Index, Entry> blocks;
  std::uint64_t generation = 0;
};

/// The transformed parameters theta[offset, offset + count) of the pass, materialised (small
/// blocks: a convolution's kernel, a bias, a batch norm's scale).
Block materialise(const WeightSpec& spec, Index offset, Index count, int threads);

/// y = W x, W (rows x cols, row-major) the transformed block `w`, by tiles: each tile's partial
/// sums, added in column order (the same for any thread count).
void linear_forward(const ParamTransform& w, Index rows, Index cols, const double* x, double* y,
                    int threads);
/// x += W^T y by tiles of k_trows x k_tcols.
void linear_transpose(const ParamTransform& w, Index rows, Index cols, const double* y, double* x,
                      int threads);
/// The weight block of a parameter layer (count entries from its weight_offset), from the
/// spec's cache where it has one.
BlockPtr weights_of(const Layer& ly, Index count, const WeightSpec& spec, int threads);
/// The bias block (empty when the layer has no bias), likewise.
BlockPtr bias_of(const Layer& ly, Index count, const WeightSpec& spec, int threads);

/// y (channels x positions, exponent y.exp) += bias[c] * bias_value, then normalised.
void add_bias(Tensor& y, const Block& bias, Index channels, Index positions, double bias_value,
              int threads);

struct ConvShape {
  const Window* w;
  Index cg_in;   // input channels per group
  Index cg_out;  // output channels per group
  Index kk;      // kernel taps (kh * kw)
  Index rows;    // cg_in * kk: the rows of a group's column matrix
  Index n_in;    // input positions (H * W)
  Index n_out;   // output positions
  bool direct;   // 1x1, stride 1, no padding: the input is its own column matrix
};

ConvShape conv_shape(const Window& w);

/// Group g's outputs y (channels_out x n, row-major) = W_g cm, cm the group's column matrix
/// (rows x n, row stride ld), in GEMM blocks of k_rows x k_cols.
void forward_gemm(const ConvShape& c, const double* wm, Index g, const double* cm, Index ld,
                  Index n, double* y, int threads);

/// One block of weight products: channels out o0..o1 (numbered across the groups) by rows
/// r0..r1 of the weight layout, row stride ld, in the calling thread's scratch (blocks are
/// disjoint, and the same for any thread count).
using ProductSink =
    std::function<void(Index o0, Index o1, Index r0, Index r1, const double* block, Index ld)>;

/// One term of a sum of weight products: `scale` y cm^T, cm a group's column matrix (rows x n,
/// row stride ld) and y the group's output sums (channels_out x n).
struct GemmTerm {
  const double* cm;
  Index ld;
  Index n;
  const double* y;
  double scale = 1;
};

/// Group g's weight products G (channels_out x rows, the weight layout) = the sum of the terms
/// (at most two, added in their order), in fixed blocks handed to `sink` as each is made (no
/// channels_out x rows buffer: it stays in cache).
void weight_gemm(const ConvShape& c, Index g, std::span<const GemmTerm> terms,
                 const ProductSink& sink, int threads);

/// One term of a convolution's weight products: `scale` y col(x)^T (x the input's sums, y the
/// output's, on classes or full as the function says).
struct ProductTerm {
  const double* x;
  const double* y;
  double scale = 1;
};

/// y = W x per group (y: channels_out x n_out).
void conv_forward(const ConvShape& c, const double* wm, const double* x, double* y, int threads);

/// The rows of W^T y one col2im task makes in its scratch (whole input channels: all their
/// taps, 64 to 256 rows, more where n_out is small), for n_out columns.
Index col2im_block_rows(const ConvShape& c);

/// x_grad = W^T y per group, scattered back through the windows (col2im), by tasks of a few
/// input channels each. With `groups` (y equal on each group of output positions: a backward
/// pass behind a global average pool, LayerPlan::backward_groups), W^T y is made for one
/// position per group.
void conv_adjoint(const ConvShape& c, const double* wm, const double* y, double* xg, int threads,
                  const PositionGroups* groups = nullptr);

/// G (channels_out x rows per group, the weight layout) = the sum over the terms (at most two)
/// of scale y col(x)^T, by blocks to `sink`. With `groups` (each term's y equal on each group),
/// y at one position per group against col(x) summed over the group: the GEMM's inner size is
/// the number of groups.
void conv_weight_products(const ConvShape& c, std::span<const ProductTerm> terms,
                          const ProductSink& sink, int threads,
                          const PositionGroups* groups = nullptr);

/// transpose false: y[o] = sum over o's window of t(w_o) x; true: x[i] += t(w_o) y[o]. With
/// position classes, y is on out_cls's classes and x on in_cls's (forward: y computed at each
/// class's representative; transposed: both held as sums over each class).
void pool_apply(const Layer& ly, const Window& w, const WeightSpec& spec, const double* in,
                double* out, bool transpose, int threads, const Classes* in_cls = nullptr,
                const Classes* out_cls = nullptr);

/// group_sort's map in a pass (its own transpose): every entry of a group of `ly.group_size`
/// consecutive channels gets t(1) times the group's sum, at each of the positions (channels x
/// positions = the tensor's size: position classes too, the groups mix channels only).
void group_apply(const Layer& ly, const WeightSpec& spec, const double* in, double* out,
                 Index channels, Index positions, int threads);

/// interpolate's map: transpose false: y[c, o] = sum over o's taps of t(w) x[c, i]; true:
/// x[c, i] += t(w) y[c, o]. `in_shape` is the layer's input shape.
void lerp_apply(const Layer& ly, const std::vector<Index>& in_shape, const WeightSpec& spec,
                const double* in, double* out, bool transpose, int threads);

/// out[c, p] = f[c] in[c, p] (a batch norm's scale, forward or transposed).
void scale_channels(const double* f, const double* in, double* out, Index channels, Index positions,
                    int threads);

/// Tensors side by side (a concat): per outer index, each part's `row` entries in turn (a
/// part holds outer x row entries), aligned to the largest exponent, normalised.
TensorPtr concat_tensors(const std::vector<std::pair<const Tensor*, Index>>& parts, Index outer,
                         int threads);

/// sum_k f_k t_k over tensors of one size, aligned to the largest exponent (f_k's own included),
/// normalised.
TensorPtr combine(const std::vector<std::pair<const Tensor*, FixedWeight>>& terms, Index n,
                  int threads);

}  // namespace pathlift::detail
