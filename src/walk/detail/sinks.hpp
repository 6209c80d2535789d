#pragma once
// What the walk of engine.hpp writes: path structure (edge ids, end nodes), Phi, or CSR rows
// of B and dPhi. Each sink writes rows [first_path, ...) and entries [first_entry, ...) of
// arrays sized from the DP counts.

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "src/walk/detail/engine.hpp"

namespace pathlift::detail {

/// Writes a row of a block at dst: the prefix's a edges pe, then the memo row's b edges src.
/// Paths are short (a few edges): plain loops beat memcpy calls here. The restrict pointers are
/// locals, not parameters: with restrict parameters GCC turns the loops into memmove calls
/// (+1.7% instructions, 304M of them in memmove: the calls behind an earlier helper's 20%
/// slower B + dPhi in engine_bench). As written, both sinks compile to the instructions of the
/// loops written out in place, up to register choice and block layout: callgrind, on
/// ff:5,64,64,64,2 and one thread, counts jacobian<double> at +0.01% (384.37M against 384.32M
/// instructions) and jacobian<float>, skeleton and enumerate_paths equal.
[[gnu::always_inline]] inline void write_row_edges(EdgeId* dst, const EdgeId* pe, Index a,
                                                   const EdgeId* src, Index b) {
  EdgeId* __restrict out = dst;
  for (Index i = 0; i < a; ++i) {
    out[i] = pe[i];
  }
  const EdgeId* __restrict me = src;
  for (Index k = 0; k < b; ++k) {
    out[a + k] = me[k];
  }
}

/// Edge ids in walk order, end (and start) nodes, row offsets.
template <class T>
struct StructureSink {
  const WalkTables* t;
  Index* offsets;  // offsets[row + 1] is written for each row
  EdgeId* edges;
  NodeId* start;  // may be null
  NodeId* end;    // may be null
  Index row;
  Index entry;

  // Paths are short (a few edges): plain loops beat memcpy calls here.
  void single(const Prefix<T>& p, NodeId w) {
    EdgeId* __restrict out = edges + entry;
    const EdgeId* __restrict pe = p.edges.data();
    for (Index i = 0; i < p.length; ++i) {
      out[i] = pe[i];
    }
    entry += p.length;
    if (start != nullptr) {
      start[row] = p.start;
    }
    if (end != nullptr) {
      end[row] = w;
    }
    offsets[++row] = entry;
  }

  void block(const Prefix<T>& p, NodeId v) {
    const auto [r0, r1] = t->memo_block(v);
    const Index* moff = t->memo_offsets.data();
    const EdgeId* medges = t->memo_edges.data();
    const Index a = p.length;
    const EdgeId* pe = p.edges.data();
    for (Index r = r0; r < r1; ++r) {
      const Index b = moff[r + 1] - moff[r];
      write_row_edges(edges + entry, pe, a, medges + moff[r], b);
      entry += a + b;
      if (start != nullptr) {
        start[row] = p.start;
      }
      if (end != nullptr) {
        end[row] = t->memo_end[static_cast<std::size_t>(r)];
      }
      offsets[++row] = entry;
    }
  }
};

/// Phi: one value per path. memo_phi holds the suffix products of the memo pool's rows.
/// With `stream`, blocks are written with non-temporal stores: a result much larger than the
/// caches then skips the read-for-ownership of every line it writes, which halves the memory
/// traffic (run_plan fences the stores before its barrier). The values are the same.
template <class T>
struct PhiSink {
  const WalkTables* t;
  const T* memo_phi;
  T* out;
  Index row;
  bool stream = false;

  void single(const Prefix<T>& p, NodeId /*w*/) { out[row++] = p.product(); }

  void block(const Prefix<T>& p, NodeId v) {
    const auto [r0, r1] = t->memo_block(v);
    const Index n = r1 - r0;
    const T pp = p.product();
    const T* __restrict src = memo_phi + r0;
    T* __restrict dst = out + row;
    Index j = 0;
#if defined(__SSE2__)
    if (stream) {
      // Plain stores up to a 16-byte boundary, then two doubles or four floats a store.
      for (; j < n && (reinterpret_cast<std::uintptr_t>(dst + j) & 15U) != 0; ++j) {
        dst[j] = pp * src[j];
      }
      if constexpr (std::is_same_v<T, double>) {
        const __m128d vp = _mm_set1_pd(pp);
        for (; j + 2 <= n; j += 2) {
          _mm_stream_pd(dst + j, _mm_mul_pd(vp, _mm_loadu_pd(src + j)));
        }
      } else if constexpr (std::is_same_v<T, float>) {
        const __m128 vp = _mm_set1_ps(pp);
        for (; j + 4 <= n; j += 4) {
          _mm_stream_ps(dst + j, _mm_mul_ps(vp, _mm_loadu_ps(src + j)));
        }
      }
    }
#endif
    for (; j < n; ++j) {
      dst[j] = pp * src[j];
    }
    row += n;
  }
};

/// Results at least this large are written with streaming stores where a sink supports them.
inline constexpr std::size_t k_stream_min_bytes = std::size_t{8} << 20;

/// CSR rows of B (column indices, sorted) and optionally dPhi (values) and Phi (products).
/// memo_phi / memo_others hold the memo pool's suffix products and, per entry, the product of
/// the row's other weights.
template <class T>
struct JacobianSink {
  const WalkTables* t;
  const T* theta;
  const T* memo_phi;
  const T* memo_others;
  Index* offsets;
  EdgeId* cols;
  T* values;  // may be null (pattern only)
  T* phi;     // may be null
  Index row;
  Index entry;
  bool sort_rows;  // sort each row by column (networks whose edges do not increase along paths)

  void single(Prefix<T>& p, NodeId /*w*/) {
    const Index n = p.length;
    EdgeId* c = cols + entry;
    std::memcpy(c, p.edges.data(), static_cast<std::size_t>(n) * sizeof(EdgeId));
    if (values != nullptr) {
      p.compute_others(theta);
      std::memcpy(values + entry, p.others.data(), static_cast<std::size_t>(n) * sizeof(T));
    }
    if (phi != nullptr) {
      phi[row] = p.product();
    }
    if (sort_rows) {
      sort_row(c, values != nullptr ? values + entry : nullptr, n);
    }
    entry += n;
    offsets[++row] = entry;
  }

  void block(Prefix<T>& p, NodeId v) {
    const auto [r0, r1] = t->memo_block(v);
    const Index* moff = t->memo_offsets.data();
    const EdgeId* medges = t->memo_edges.data();
    const Index a = p.length;
    const EdgeId* pe = p.edges.data();
    const T pp = p.product();
    if (values != nullptr) {
      p.compute_others(theta);
    }
    const T* po = p.others.data();
    for (Index r = r0; r < r1; ++r) {
      const Index b = moff[r + 1] - moff[r];
      EdgeId* __restrict c = cols + entry;
      write_row_edges(c, pe, a, medges + moff[r], b);
      if (values != nullptr) {
        T* __restrict val = values + entry;
        const T sp = memo_phi[r];
        for (Index i = 0; i < a; ++i) {
          val[i] = po[i] * sp;
        }
        const T* __restrict mo = memo_others + moff[r];
        for (Index k = 0; k < b; ++k) {
          val[a + k] = pp * mo[k];
        }
      }
      if (phi != nullptr) {
        phi[row] = pp * memo_phi[r];
      }
      if (sort_rows) {
        sort_row(c, values != nullptr ? values + entry : nullptr, a + b);
      }
      entry += a + b;
      offsets[++row] = entry;
    }
  }
};

/// The memo pool's values for theta: suffix products (memo_phi, one per pool row) and, per
/// pool entry, the product of the row's other weights (memo_others, when wanted). Rows of a
/// node are built from its children's rows, children first.
template <class T>
void compute_memo_values(const WalkTables& t, const T* theta, Buffer<T>& memo_phi,
                         Buffer<T>* memo_others) {
  const Index rows = t.memo_rows;
  memo_phi.resize(static_cast<std::size_t>(rows));
  if (memo_others != nullptr) {
    memo_others->resize(t.memo_edges.size());
  }
  Prefix<T> prefix(t.max_length);
  // Pool offsets are theta-independent, so the sink rewrites them with equal values into a
  // scratch copy rather than the shared tables (only the Jacobian's sink writes them).
  if (memo_others != nullptr && !t.has_memo_structure) {
    throw std::logic_error("compute_memo_values: the Jacobian needs the pool's structure");
  }
  Buffer<Index> scratch_offsets(memo_others != nullptr ? t.memo_offsets.size() : 0);
  Buffer<EdgeId> scratch_cols(memo_others != nullptr ? t.memo_edges.size() : 0);
  for (NodeId v : t.memo_nodes) {
    const Index r0 = t.memo_row[static_cast<std::size_t>(v)];
    prefix.length = 0;
    if (memo_others != nullptr) {
      JacobianSink<T> sink{&t,
                           theta,
                           memo_phi.data(),
                           memo_others->data(),
                           scratch_offsets.data(),
                           scratch_cols.data(),
                           memo_others->data(),
                           memo_phi.data(),
                           r0,
                           t.memo_offsets[static_cast<std::size_t>(r0)],
                           /*sort_rows=*/false};  // memo rows stay in walk order
      walk_from(t, v, prefix, theta, sink, /*memo_at_root=*/false);
    } else {
      PhiSink<T> sink{&t, memo_phi.data(), memo_phi.data(), r0, false};
      walk_from(t, v, prefix, theta, sink, /*memo_at_root=*/false);
    }
  }
}

}  // namespace pathlift::detail
