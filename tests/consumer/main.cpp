// Built by the ctest `consumer.build_and_run` against the installed package: it compiles only
// when pathlift::pathlift carries C++20 (std::span in the public headers) and links only when
// the package brings what the static library needs.
#include <cstdio>
#include <span>
#include <vector>

#include <pathlift/pathlift.hpp>

static_assert(__cplusplus >= 202002L, "pathlift::pathlift must propagate cxx_std_20");

/// README.md's C++ example, verbatim between the markers (tests/python/test_readme.py checks
/// that the README shows exactly these lines): it compiles and runs against the installed
/// package.
bool readme_example() {
  // README begin
  pathlift::Network net = pathlift::builtin_network("ff:5,64,64,64,2");
  std::vector<double> theta = pathlift::normal_weights(net.num_edges(), 0);
  auto phi = pathlift::path_lifting<double>(net, std::span<const double>(theta));  // P values
  auto jac = pathlift::jacobian<double>(net, std::span<const double>(theta));  // CSR, pattern = B
  // README end
  return phi.size() == 3154050 && jac.rows() == 3154050 && jac.cols() == net.num_edges();
}

int main() {
  if (!readme_example()) {
    std::printf("README.md's C++ example gave the wrong sizes\n");
    return 1;
  }
  const pathlift::Network net = pathlift::fig1();
  const std::vector<double> theta = pathlift::normal_weights(net.num_edges(), 0);
  const auto phi = pathlift::path_lifting<double>(net, std::span<const double>(theta));
  const pathlift::Count paths = pathlift::count_paths(net).paths;
  std::printf("pathlift %s: fig1 has %s paths, Phi has %zu entries\n", pathlift::version_string,
              paths.to_string().c_str(), phi.size());
  // The DP count and the enumeration agree.
  return paths.exact() && paths.value() == phi.size() ? 0 : 1;
}
