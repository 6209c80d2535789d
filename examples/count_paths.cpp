// Counts the paths of a network, computes its path-lifting Phi(theta) and checks the rank
// theorem rank(dPhi) = rank(B) = d - h.
//   count_paths [network.json | builtin name]   (default: fig1, the paper's Figure 1)
#include <cstdio>
#include <exception>
#include <span>
#include <string>
#include <vector>

#include <pathlift/pathlift.hpp>

int main(int argc, char** argv) {
  try {
    const std::string source = argc > 1 ? argv[1] : "fig1";
    const pathlift::Network net = source.ends_with(".json") ? pathlift::read_network(source)
                                                            : pathlift::builtin_network(source);
    const pathlift::PathCounts counts = pathlift::count_paths(net);
    std::printf("%s: d = %lld parameters, h = %lld hidden nodes, P = %s paths, nnz(B) = %s\n",
                source.c_str(), static_cast<long long>(net.num_params()),
                static_cast<long long>(net.num_hidden()), counts.paths.to_string().c_str(),
                counts.nnz.to_string().c_str());

    // theta: the weights stored with the network, else standard normal weights (seed 0).
    const std::vector<double> theta = pathlift::default_theta(net);
    const auto phi = pathlift::path_lifting<double>(net, std::span<const double>(theta));
    std::printf("Phi(theta) has %zu entries; the first ones:", phi.size());
    for (std::size_t p = 0; p < phi.size() && p < 5; ++p) {
      std::printf(" %.4g", phi[p]);
    }
    std::printf("\n");

    const pathlift::RankReport report = pathlift::check_rank_theorem(net, theta);
    std::printf("%s\n", pathlift::to_json(report).c_str());
    return pathlift::is_failure(report.status) ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
