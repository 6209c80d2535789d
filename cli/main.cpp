// pathlift: the command-line tool. One subcommand a file under commands/, each registering
// itself with registry.hpp; app.cpp parses the command line, runs the command and turns every
// error into one "error: ..." line and an exit code (docs/cli.md#exit-codes).

#include "registry.hpp"

int main(int argc, char** argv) {
  return pathlift::cli::run_cli(argc, argv, pathlift::cli::RunMode::execute);
}
