// pathlift: the command-line tool. One subcommand a file under commands/, each registering
// itself with registry.hpp; app.cpp parses the command line, runs the command and turns every
// error into one "error: ..." line and an exit code (docs/cli.md#exit-codes).

#include <csignal>

#include "registry.hpp"

int main(int argc, char** argv) {
  // A file-size limit (ulimit -f) makes a write fail with EFBIG, an ordinary write error (exit
  // 2, the temporary removed: output_file.hpp), instead of killing the process by SIGXFSZ.
  std::signal(SIGXFSZ, SIG_IGN);
  return pathlift::cli::run_cli(argc, argv, pathlift::cli::RunMode::execute);
}
