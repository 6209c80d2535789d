#pragma once
/// \file counting.hpp
/// Path counting by dynamic programming over the DAG, never by enumeration: P, paths per
/// output and per input node, paths through each edge, the length histogram, nnz(B).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "pathlift/count.hpp"
#include "pathlift/network.hpp"
#include "pathlift/options.hpp"

namespace pathlift {

/// Path counts of a network (docs/conventions.md#paths: paths from an input to an output,
/// passing through output nodes allowed).
struct PathCounts {
  Count paths;                    ///< P
  Count nnz;                      ///< nnz(B) = sum of path lengths
  std::vector<Count> per_output;  ///< paths ending at each output, in output order
  std::vector<Count> per_input;   ///< paths starting at each input (bias included), input order
  std::vector<Count> per_edge;    ///< paths through each edge (column sums of B)
  /// length_histogram[l] = number of paths of length l (entry 0 is always 0); empty when
  /// refused (length_histogram_refused says why).
  std::vector<Count> length_histogram;
  /// Empty when length_histogram was computed; else why it was not: the TooLarge message with
  /// the bytes it needs and the memory limit. The other counts are computed regardless.
  std::string length_histogram_refused;
  /// The histogram was refused for the memory limit (a larger limit computes it), not for its
  /// work.
  bool length_histogram_memory_bound = false;
  /// Longest input-to-output path (edges); -1 on a layer graph whose histogram was not
  /// computed (length_histogram_refused: it comes from the histogram there).
  int max_path_length = 0;
};

/// The counts as JSON: P (exact, else its double; null beyond double's range), P_exact,
/// log10_P, nnz, nnz_exact, max_path_length (null when -1), length_histogram (length -> count,
/// the non-zero ones; null when refused) and, when refused, length_histogram_refused. The
/// per-output, per-input and per-edge counts are left out (as many entries as the network has).
std::string to_json(const PathCounts& counts, int indent = 2);

/// Counts paths by dynamic programming: forward counts F(v) (partial paths input -> v) and
/// backward counts G(v) = [v output] + sum_{v->w} G(w). Overflow is detected, never wrapped.
/// The length histogram holds, for each node still to be read by a successor, its counts over
/// its range of path lengths; when that peak exceeds `options.max_memory` (0:
/// default_max_memory()), the histogram alone is skipped and length_histogram_refused says so
/// (never a throw). Complexity: O(m + d) for the counts; the histogram O(sum over edges of the
/// source's range of lengths) time (O(d) in a layered network, up to O(d * max_path_length)) and
/// memory O(m + the largest sum of the live nodes' ranges).
PathCounts count_paths(const Network& net, const EngineOptions& options = {});

/// P alone (cheaper than count_paths). Complexity: O(m + d).
Count count_paths_total(const Network& net);

}  // namespace pathlift
