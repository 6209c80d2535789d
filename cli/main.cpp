// pathlift: the command-line tool. One subcommand a file under commands/, each registering
// itself with registry.hpp.

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>

#include "pathlift/error.hpp"
#include "pathlift/version.hpp"
#include "registry.hpp"

namespace pathlift::cli {
std::vector<Command>& command_registry() {
  static std::vector<Command> commands;
  return commands;
}
}  // namespace pathlift::cli

namespace {

/// A TooLarge message with the CLI's way out: the flag that raises the limit, or the
/// commands that need no enumeration (the library's messages name no flag).
std::string with_cli_hint(const pathlift::TooLarge& e) {
  const std::string_view hint =
      e.reason() == pathlift::TooLarge::Reason::memory_limit
          ? "; raise the limit with --max-memory SIZE"
          : "; `pathlift norm`, `kernel` and `rank --no-enumerate` need no enumeration";
  return std::string(e.what()) + std::string(hint);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "pathlift: path-lifting Phi, skeleton B and Jacobian dPhi of DAG ReLU networks.\n"
      "A network comes from a pathlift-network or pathlift-layers JSON file (--network), an ONNX\n"
      "model (--onnx FILE [--input-shape C,H,W]), a feed-forward shape (--ff r,w1,...,q) or a\n"
      "built-in example (--example fig1 | sketch-h0 | sketch-h1 | ...).\n"
      "Run 'pathlift COMMAND --help' for a command's options.",
      "pathlift"};
  app.set_version_flag("--version", std::string("pathlift ") + pathlift::version_string);
  app.require_subcommand(1);
  auto commands = pathlift::cli::command_registry();
  std::stable_sort(commands.begin(), commands.end(),
                   [](const auto& a, const auto& b) { return a.order < b.order; });
  for (const auto& c : commands) {
    c.add(app);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::Error& e) {
    return app.exit(e);
  } catch (const pathlift::TooLarge& e) {
    std::fflush(stdout);
    fmt::print(stderr, "error: {}\n", with_cli_hint(e));
    return 1;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
  return 0;
}
