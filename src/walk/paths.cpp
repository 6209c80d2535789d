#include "pathlift/paths.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <stdexcept>

#include "pathlift/limits.hpp"
#include "pathlift/path_memory.hpp"
#include "src/core/progress.hpp"
#include "src/walk/detail/engine.hpp"
#include "src/walk/detail/sinks.hpp"

namespace pathlift {

PathSet enumerate_paths(const Network& net, const EngineOptions& options) {
  const detail::WalkTables t = detail::make_walk_tables(net);
  const Count p(static_cast<std::uint64_t>(t.num_paths));
  const Count nnz(static_cast<std::uint64_t>(t.nnz));
  require_memory(p, nnz, net.num_params(),  // the message's d; the set stores edge ids
                 estimate_bytes(p, nnz, net.num_edges(), PathObject::path_set), options.max_memory,
                 "enumerating the paths");
  const auto np = static_cast<std::size_t>(t.num_paths);
  auto offsets = std::make_shared<Buffer<Index>>(np + 1);
  auto edges = std::make_shared<Buffer<EdgeId>>(static_cast<std::size_t>(t.nnz));
  PathSet out;
  out.num_edges = net.num_edges();
  out.params = net.parameter_map();
  out.start.resize(np);
  out.end.resize(np);
  (*offsets)[0] = 0;
  const detail::WalkPlan plan = detail::plan_walk(t, detail::walk_grain(t.num_paths));
  detail::run_plan<double>(t, plan, nullptr, options.threads,
                           detail::phase_callback(options.progress, "enumerating paths"),
                           [&](const detail::WalkTask& task) {
                             return detail::StructureSink<double>{&t,
                                                                  offsets->data(),
                                                                  edges->data(),
                                                                  out.start.data(),
                                                                  out.end.data(),
                                                                  task.first_path,
                                                                  task.first_entry};
                           });
  out.offsets = std::move(offsets);
  out.edges = std::move(edges);
  out.walk_order_sorted = t.sorted;
  return out;
}

OutputGrouping group_by_output(const Network& net, const PathSet& paths) {
  const auto m = static_cast<std::size_t>(net.num_nodes());
  std::vector<Index> slot(m, -1);
  const auto outputs = net.outputs();
  for (std::size_t j = 0; j < outputs.size(); ++j) {
    slot[static_cast<std::size_t>(outputs[j])] = static_cast<Index>(j);
  }
  if (paths.num_edges != net.num_edges()) {
    throw std::invalid_argument(fmt::format(
        "group_by_output: the path set has {} edges but the network has {} (another network's "
        "paths?)",
        paths.num_edges, net.num_edges()));
  }
  OutputGrouping g;
  g.counts.assign(outputs.size(), 0);
  const Index np = paths.size();
  for (Index p = 0; p < np; ++p) {
    const NodeId end = paths.end[static_cast<std::size_t>(p)];
    if (end < 0 || static_cast<std::size_t>(end) >= m || slot[static_cast<std::size_t>(end)] < 0) {
      throw std::invalid_argument(fmt::format(
          "group_by_output: path {} ends at node {}, which is not an output of the network "
          "(another network's paths?)",
          p, end));
    }
  }
  for (Index p = 0; p < np; ++p) {
    ++g.counts[static_cast<std::size_t>(
        slot[static_cast<std::size_t>(paths.end[static_cast<std::size_t>(p)])])];
  }
  std::vector<Index> next(outputs.size(), 0);
  for (std::size_t j = 1; j < outputs.size(); ++j) {
    next[j] = next[j - 1] + g.counts[j - 1];
  }
  g.order.resize(static_cast<std::size_t>(np));
  for (Index p = 0; p < np; ++p) {
    const auto j = static_cast<std::size_t>(
        slot[static_cast<std::size_t>(paths.end[static_cast<std::size_t>(p)])]);
    g.order[static_cast<std::size_t>(next[j]++)] = p;
  }
  return g;
}

}  // namespace pathlift
