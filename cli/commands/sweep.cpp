// pathlift sweep: each quantity over many model (or theta) files, one table, locally or on a
// Dask cluster. The work is the Python package's (pathlift.sweep: a process pool, or Dask for
// --scheduler), which this command runs with the arguments it was given (docs/sweeps.md).

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "../registry.hpp"

#ifndef PATHLIFT_PYTHON
#define PATHLIFT_PYTHON "/usr/bin/python3"
#endif
#ifndef PATHLIFT_BUILD_PYTHON_DIR
#define PATHLIFT_BUILD_PYTHON_DIR ""
#endif

namespace pathlift::cli {

namespace {

/// Replaces this process by `python -m pathlift._sweep ARGS...`, the build's package first on
/// PYTHONPATH when this executable runs from its build tree (else the installed package).
[[noreturn]] void run_sweep(const std::vector<std::string>& args) {
  const std::filesystem::path build_dir = PATHLIFT_BUILD_PYTHON_DIR;
  std::error_code ec;
  if (!build_dir.empty() && std::filesystem::exists(build_dir / "pathlift" / "_sweep.py", ec)) {
    const char* old = std::getenv("PYTHONPATH");
    const std::string path =
        build_dir.string() + (old != nullptr && *old != '\0' ? ":" + std::string(old) : "");
    ::setenv("PYTHONPATH", path.c_str(), 1);
  }
  const std::string python = PATHLIFT_PYTHON;
  std::vector<std::string> words = {python, "-m", "pathlift._sweep"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  argv.reserve(words.size() + 1);
  for (std::string& w : words) {
    argv.push_back(w.data());
  }
  argv.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  ::execv(python.c_str(), argv.data());
  throw std::runtime_error(fmt::format(
      "pathlift sweep runs pathlift's Python package (with pandas, and Dask for --scheduler): "
      "could not start {}: {}",
      python, std::strerror(errno)));
}

void add_sweep_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "sweep",
      "Each quantity over many model files (or theta files of one --model), one CSV table, "
      "locally or on a Dask cluster: pathlift sweep FILES... --quantities norm:1,norm:2,top_eig:3 "
      "-o table.csv [--scheduler ADDRESS] [--workers N] (pathlift sweep --help: the options)");
  // Every argument goes to the Python command, --help included.
  cmd->prefix_command();
  cmd->set_help_flag();
  cmd->allow_extras();
  cmd->callback([cmd] { run_sweep(cmd->remaining()); });
}

const CommandRegistration sweep_registration{85, add_sweep_command};

}  // namespace

}  // namespace pathlift::cli
