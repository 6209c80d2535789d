#pragma once
// Subcommands register themselves (one file each under commands/), so adding a command does
// not touch main.cpp. `order` sorts them in --help.

#include <CLI/CLI.hpp>
#include <functional>
#include <vector>

namespace pathlift::cli {

struct Command {
  int order;
  std::function<void(CLI::App&)> add;
};

/// The registered commands.
std::vector<Command>& command_registry();

/// Registers a subcommand at static-initialisation time:
///   const CommandRegistration reg{20, add_paths_command};
struct CommandRegistration {
  CommandRegistration(int order, std::function<void(CLI::App&)> add) {
    command_registry().push_back({order, std::move(add)});
  }
};

/// What run_cli does with the chosen command: run it, or stop once the command line is parsed
/// and its options checked (no file read or written, no messages: the fuzz harness).
enum class RunMode : bool { execute, parse_only };

/// pathlift's main (app.cpp): builds the app from the registered commands, parses argv (argv[0]
/// is the program), runs the command and prints any error as "error: ..." on stderr. Returns
/// the exit status (ExitCode, exit.hpp).
int run_cli(int argc, const char* const* argv, RunMode mode);

}  // namespace pathlift::cli
