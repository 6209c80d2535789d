#pragma once
// The one canonical walk: depth-first from a node over its out-edges by increasing edge index,
// with an explicit stack (paths can be as long as the network is deep). It serves path
// enumeration and the path engine (engine.hpp), the engine's task cutting (engine.cpp) and the
// linearization (lin_walk.hpp); the canonical order of paths.hpp is this walk from each input
// in node order, a path emitted at every output reached.
//
// The visitor decides what a step means:
//   WalkStep arrive(EdgeId e, NodeId w)  the walk crossed e into w: emit what ends at w, and
//                                        return descend to walk w's out-edges next, skip not to;
//   void leave()                         the walk is done with a node it descended into and
//                                        returns to the node before it.

#include <vector>

#include "src/network/dag.hpp"

namespace pathlift::detail {

enum class WalkStep : bool { skip, descend };

/// Scratch of the walk's explicit stack: the next out-CSR entry of each node on the prefix.
struct WalkFrame {
  Index cursor;
  Index end;
};

/// Walks every continuation of node u in canonical order (see above); `frames` is scratch.
/// Needs `g` built with out targets. Complexity: O(steps taken).
/// Always inlined: the visitor's state (and its sink's) then stays in registers, as in a walk
/// written out by hand (out of line, the path engine is up to 1.4x slower).
template <class Visitor>
[[gnu::always_inline]] inline void canonical_walk(const DagView& g, NodeId u, Visitor& visitor,
                                                  std::vector<WalkFrame>& frames) {
  const NodeId* const target = g.out_target.data();
  const EdgeId* const edge = g.out_list;
  const Index* const off = g.out_off;
  frames.clear();
  frames.push_back({off[u], off[u + 1]});
  while (!frames.empty()) {
    WalkFrame& f = frames.back();
    if (f.cursor == f.end) {
      frames.pop_back();
      if (!frames.empty()) {
        visitor.leave();
      }
      continue;
    }
    const Index c = f.cursor++;
    const NodeId w = target[c];
    if (visitor.arrive(edge[c], w) == WalkStep::descend) {
      frames.push_back({off[w], off[w + 1]});
    }
  }
}

/// canonical_walk with a per-thread scratch stack (one walk at a time per thread).
template <class Visitor>
[[gnu::always_inline]] inline void canonical_walk(const DagView& g, NodeId u, Visitor& visitor) {
  thread_local std::vector<WalkFrame> frames;
  canonical_walk(g, u, visitor, frames);
}

}  // namespace pathlift::detail
