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

}  // namespace pathlift::cli
