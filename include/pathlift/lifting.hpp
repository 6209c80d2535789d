#pragma once
/// \file lifting.hpp
/// The path-lifting Phi(theta), the skeleton B and the Jacobian dPhi (paper: Definition 1,
/// Definition 2, Proposition 2), sparse. float64 by default; float32 instantiations exist for
/// the paper's experiment. Rows follow the canonical path order of paths.hpp.

#include <cstdint>
#include <span>
#include <vector>

#include "pathlift/network.hpp"
#include "pathlift/options.hpp"
#include "pathlift/paths.hpp"
#include "pathlift/sparse.hpp"

namespace pathlift {

/// Phi(theta)_p = prod_{e in p} theta_e, for every path p in canonical order, computed from
/// prefix products during the walk (one multiply per path emitted, no path re-walked).
/// theta has d entries. Throws std::invalid_argument for a wrong size, TooLarge over the limit.
/// Complexity: O(P) after O(m + d) set-up.
template <class T>
Buffer<T> path_lifting(const Network& net, std::span<const T> theta,
                       const EngineOptions& options = {});

/// The same Phi from an enumerated path set (one product per path over its edges).
template <class T>
Buffer<T> path_lifting(const PathSet& paths, std::span<const T> theta,
                       const EngineOptions& options = {});

/// The skeleton B (P x d): B[p, k] = 1 iff edge k is on path p; row p has len(p) ones, column
/// indices sorted. Shares the path set's arrays when its walk order is sorted.
CsrPattern skeleton(const PathSet& paths, const EngineOptions& options = {});

/// B, enumerating the paths first.
CsrPattern skeleton(const Network& net, const EngineOptions& options = {});

/// dPhi (P x d) with B's pattern: dPhi[p, k] = prod_{e in p, e != k} theta_e (prefix x suffix
/// products, exact when some theta_e = 0). Computed in one walk; the result's pattern is B.
template <class T>
CsrMatrix<T> jacobian(const Network& net, std::span<const T> theta,
                      const EngineOptions& options = {});

/// dPhi from an enumerated path set; its pattern is skeleton(paths) (shared arrays).
template <class T>
CsrMatrix<T> jacobian(const PathSet& paths, std::span<const T> theta,
                      const EngineOptions& options = {});

/// The paper's formula diag(Phi) B diag(1/theta) (Proposition 2). Undefined (inf/NaN) where a
/// theta_k is 0: tests and benchmarks compare it with jacobian().
template <class T>
CsrMatrix<T> jacobian_paper_formula(const PathSet& paths, std::span<const T> phi,
                                    std::span<const T> theta, const EngineOptions& options = {});

/// dPhi as a dense row-major P x d matrix (zeros off the paths), computed row by row from the
/// path set (prefix x suffix products, exact at zero weights). Only when asked for: throws
/// TooLarge, with the sizes, when P x d values exceed options.max_memory.
/// Complexity: O(P d) memory and time (the zero fill), O(nnz) for the values.
template <class T>
Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> dense_jacobian(
    const PathSet& paths, std::span<const T> theta, const EngineOptions& options = {});

#define PATHLIFT_LIFTING_EXTERN(T)                                                                 \
  extern template Buffer<T> path_lifting(const Network&, std::span<const T>,                       \
                                         const EngineOptions&);                                    \
  extern template Buffer<T> path_lifting(const PathSet&, std::span<const T>,                       \
                                         const EngineOptions&);                                    \
  extern template CsrMatrix<T> jacobian(const Network&, std::span<const T>, const EngineOptions&); \
  extern template CsrMatrix<T> jacobian(const PathSet&, std::span<const T>, const EngineOptions&); \
  extern template CsrMatrix<T> jacobian_paper_formula(const PathSet&, std::span<const T>,          \
                                                      std::span<const T>, const EngineOptions&);
PATHLIFT_LIFTING_EXTERN(double)
PATHLIFT_LIFTING_EXTERN(float)
#undef PATHLIFT_LIFTING_EXTERN

// ---------------------------------------------------------------------------------------------
// The sign and log10 forms: exact at any magnitude (magnitude.hpp tells when they are needed).

/// Values as sign and log10 magnitude: x = sign * 10^log10, sign in {-1, 0, 1} and log10 = -inf
/// where x = 0.
struct SignedLog10 {
  std::vector<std::int8_t> sign;
  std::vector<double> log10;
};

/// Phi(theta) as sign and log10|Phi_p|, in canonical path order: log10|Phi_p| is the sum of
/// log10|theta_e| along the path, exact to rounding at any magnitude (the paper's Lemma 1).
/// Complexity: O(nnz) time and memory (the path set is enumerated).
SignedLog10 log_path_lifting(const Network& net, std::span<const double> theta,
                             const EngineOptions& options = {});

/// dPhi as sign and log10 magnitude with B's pattern: log10|dPhi[p, k]| is the sum over the
/// other edges of the path; exact at zero weights (no division). Networks with one parameter
/// per edge only (otherwise NetworkError).
/// Complexity: O(nnz) time and memory.
struct LogJacobian {
  CsrPattern pattern;
  SignedLog10 values;  ///< parallel to pattern.indices()
};
LogJacobian log_jacobian(const Network& net, std::span<const double> theta,
                         const EngineOptions& options = {});

}  // namespace pathlift
