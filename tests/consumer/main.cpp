// Built by the ctest `consumer.build_and_run` against the installed package: it compiles only
// when pathlift::pathlift carries C++20 (std::span in the public headers) and links only when
// the package brings what the static library needs.
#include <cstdio>
#include <span>
#include <vector>

#include <pathlift/pathlift.hpp>

static_assert(__cplusplus >= 202002L, "pathlift::pathlift must propagate cxx_std_20");

int main() {
  const pathlift::Network net = pathlift::fig1();
  const std::vector<double> theta = pathlift::normal_weights(net.num_edges(), 0);
  const auto phi = pathlift::path_lifting<double>(net, std::span<const double>(theta));
  const pathlift::Count paths = pathlift::count_paths(net).paths;
  std::printf("pathlift %s: fig1 has %s paths, Phi has %zu entries\n", pathlift::version_string,
              paths.to_string().c_str(), phi.size());
  // The DP count and the enumeration agree.
  return paths.exact() && paths.value() == phi.size() ? 0 : 1;
}
