// The pathlift application: the registered commands on one CLI::App, parsed and run by
// run_cli(). This file owns the exit codes (docs/cli.md#exit-codes): every error is caught here
// and printed as one "error: ..." line on stderr. main.cpp calls it; the fuzz harness of the
// command line (fuzz/fuzz_cli.cpp) calls it with RunMode::parse_only.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <exception>
#include <iostream>
#include <new>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "common.hpp"
#include "pathlift/error.hpp"
#include "pathlift/limits.hpp"
#include "pathlift/version.hpp"
#include "registry.hpp"

namespace pathlift::cli {
std::vector<Command>& command_registry() {
  static std::vector<Command> commands;
  return commands;
}
}  // namespace pathlift::cli

namespace {

using pathlift::cli::ExitCode;

/// Where the messages go: stderr, or nowhere (parse_only: formatted, then dropped).
struct ErrorStream {
  bool print;

  void operator()(const std::string& text) const {
    if (print) {
      std::fflush(stdout);
      fmt::print(stderr, "{}", text);
    }
  }
};

/// A TooLarge message with the CLI's way out: the flag that raises the limit, or the
/// commands that need no enumeration (the library's messages name no flag).
std::string with_cli_hint(const pathlift::TooLarge& e) {
  if (e.reason() != pathlift::TooLarge::Reason::memory_limit) {
    return fmt::format(
        "{}; `pathlift norm`, `kernel` and `rank --no-enumerate` need no enumeration", e.what());
  }
  const bool unrolling = dynamic_cast<const pathlift::cli::UnrollTooLarge*>(&e) != nullptr;
  return fmt::format("{}{}; raise the limit with --max-memory SIZE{}", e.what(),
                     pathlift::cli::memory_note(),
                     unrolling ? fmt::format(" ({} compute on the layer graph without unrolling)",
                                             pathlift::cli::layer_graph_commands)
                               : "");
}
/// The optimal string alignment distance: insertions, deletions, substitutions and swaps of
/// two neighbours ("jacobain" is 1 from "jacobian").
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) {
    d[i][0] = i;
  }
  for (std::size_t j = 0; j <= b.size(); ++j) {
    d[0][j] = j;
  }
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

/// The candidate closest to `word`, when it is close: at most 2 edits, and fewer than half of
/// the candidate's letters.
std::optional<std::string> closest(std::string_view word, const std::vector<std::string>& names) {
  std::optional<std::string> best;
  std::size_t best_distance = 3;
  for (const std::string& name : names) {
    const std::size_t dist = edit_distance(word, name);
    if (dist < best_distance && 2 * dist < name.size()) {
      best = name;
      best_distance = dist;
    }
  }
  return best;
}

std::vector<std::string> command_names(CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
  }
  return names;
}

/// "error: unknown command 'jacobain'; did you mean 'jacobian'?" and the commands.
void print_unknown_command(const ErrorStream& err, std::string_view word,
                           const std::vector<std::string>& names) {
  const std::optional<std::string> guess = closest(word, names);
  err(fmt::format("error: unknown command '{}'{}\ncommands: {}\n", word,
                  guess ? fmt::format("; did you mean '{}'?", *guess) : std::string(),
                  fmt::join(names, ", ")));
}

/// The place in `args` of an empty word that no option takes as its value, if any, and the
/// command it belongs to (null before the command's name). CLI11 2.1 matches such a word
/// against the nameless option groups: it accepts it silently or, before another option, never
/// returns; the word is refused before parsing.
std::optional<std::pair<std::size_t, const CLI::App*>> stray_empty_word(
    CLI::App& app, const std::vector<std::string>& args) {
  const std::vector<std::string> names = command_names(app);
  const CLI::App* command = nullptr;
  bool after_separator = false;  // after "--", every word is a positional (none is expected)
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word.empty()) {
      return std::pair{i, command};
    }
    if (after_separator) {
      continue;
    }
    if (word == "--") {
      after_separator = true;
    } else if (word[0] != '-') {
      if (command == nullptr && std::find(names.begin(), names.end(), word) != names.end()) {
        command = app.get_subcommand(word);
      }
    } else if (command != nullptr) {  // the root's options (--help, --version) take no value
      const CLI::Option* opt = command->get_option_no_throw(word);  // not "--a=v" nor "-oFILE"
      if (opt != nullptr && opt->get_items_expected_min() > 0) {
        ++i;  // the option's value, whatever it is
      }
    }
  }
  return std::nullopt;
}

/// The long option names of `cmd` and of its option groups ("--json", ...).
void collect_options(const CLI::App& cmd, std::vector<std::string>& out) {
  for (const CLI::Option* opt : cmd.get_options()) {
    for (const std::string& name : opt->get_lnames()) {
      out.push_back("--" + name);
    }
  }
  for (const CLI::App* sub : cmd.get_subcommands({})) {
    if (dynamic_cast<const CLI::Option_group*>(sub) != nullptr) {
      collect_options(*sub, out);
    }
  }
}

/// "; did you mean '--json'?" for the first argument of `args` that looks like a mistyped long
/// option of `cmd`, else "".
std::string option_suggestion(const CLI::App& cmd, const std::vector<std::string>& args) {
  std::vector<std::string> options;
  collect_options(cmd, options);
  for (const std::string& arg : args) {
    if (arg.rfind("--", 0) != 0) {
      continue;
    }
    const std::string name = arg.substr(0, arg.find('='));
    if (std::find(options.begin(), options.end(), name) != options.end()) {
      continue;
    }
    if (const auto guess = closest(name, options)) {
      return fmt::format("; did you mean '{}'?", *guess);
    }
  }
  return {};
}

/// A parse error (unknown option, missing or bad value): one "error:" line, a suggestion
/// where one is close, and where to find the options.
void print_parse_error(const ErrorStream& err, CLI::App& app, const CLI::ParseError& e,
                       const std::vector<std::string>& args) {
  const std::vector<CLI::App*> parsed = app.get_subcommands();
  const CLI::App& cmd = parsed.empty() ? app : *parsed.back();
  std::string what = e.what();
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr && !parsed.empty()) {
    // CLI11 lists the stray words ("- -o"): name the option the command does not have.
    for (const std::string& arg : cmd.remaining()) {
      const std::string name = arg.substr(0, arg.find('='));
      if (name.size() > 1 && name[0] == '-' && name != "--" &&
          cmd.get_option_no_throw(name) == nullptr) {
        what = fmt::format("'{}' has no option '{}'{}", cmd.get_name(), name,
                           name == "-o" || name == "--output"
                               ? ": it prints its result on stdout (redirect it to a file)"
                               : "");
        break;
      }
    }
  }
  std::string text = fmt::format("error: {}{}\n", what, option_suggestion(cmd, args));
  if (parsed.empty()) {
    text += fmt::format("commands: {}\n", fmt::join(command_names(app), ", "));
  }
  text += fmt::format("run 'pathlift {}--help' for the options\n",
                      parsed.empty() ? std::string() : cmd.get_name() + " ");
  err(text);
}

void print_error(const ErrorStream& err, std::string_view message) {
  err(fmt::format("error: {}\n", message));
}

/// The member that holds a command's callback (protected in CLI::App), for drop_callbacks.
struct CallbackAccess : CLI::App {
  static std::function<void()> CLI::App::*member() { return &CallbackAccess::final_callback_; }
};

/// Replaces the work of `cmd` and of its subcommands by nothing (RunMode::parse_only). The
/// replaced callback is kept inside the new one, never called: it owns the options struct
/// that CLI11 writes the parsed values into (freeing it was a use after free).
void drop_callbacks(CLI::App& cmd) {
  for (CLI::App* sub : cmd.get_subcommands([](CLI::App*) { return true; })) {
    if (dynamic_cast<CLI::Option_group*>(sub) == nullptr) {
      std::function<void()> work = std::move(sub->*CallbackAccess::member());
      sub->callback([keep = std::move(work)] {});
      drop_callbacks(*sub);
    }
  }
}

}  // namespace

namespace pathlift::cli {

int run_cli(int argc, const char* const* argv, RunMode mode) {
  const bool execute = mode == RunMode::execute;
  if (execute) {
    pathlift::cli::note_memory_baseline();
  }
  const ErrorStream err{execute};
  CLI::App app{
      "pathlift: path-lifting Phi, skeleton B and Jacobian dPhi of DAG ReLU networks.\n"
      "A network comes from a pathlift-network or pathlift-layers JSON file (--network), an ONNX\n"
      "model (--onnx FILE [--input-shape C,H,W]), a feed-forward shape (--ff r,w1,...,q) or a\n"
      "built-in example (--example fig1 | sketch-h0 | sketch-h1 | ...).\n"
      "Run 'pathlift COMMAND --help' for a command's options. Exit status: 0 ok, 1 a check or\n"
      "theorem failed, 2 bad usage or bad input, 3 an internal error, 4 a result beyond float64\n"
      "(docs/cli.md).",
      "pathlift"};
  app.set_version_flag("--version", std::string("pathlift ") + pathlift::version_string);
  app.require_subcommand(1);
  auto commands = command_registry();
  std::stable_sort(commands.begin(), commands.end(),
                   [](const auto& a, const auto& b) { return a.order < b.order; });
  for (const auto& c : commands) {
    c.add(app);
  }
  if (!execute) {
    drop_callbacks(app);
  }
  const std::vector<std::string> args(argv + std::min(argc, 1), argv + argc);
  if (!args.empty() && args.front().rfind('-', 0) != 0) {
    const std::vector<std::string> names = command_names(app);
    if (std::find(names.begin(), names.end(), args.front()) == names.end()) {
      print_unknown_command(err, args.front(), names);
      return ExitCode::exit_bad_input;
    }
  }
  if (const auto stray = stray_empty_word(app, args)) {
    const auto [place, command] = *stray;
    const std::string after =
        place > 0 ? fmt::format(" (it follows '{}')", printable(args[place - 1])) : "";
    const std::string help = command == nullptr ? "" : command->get_name() + " ";
    err(
        fmt::format("error: argument {} is empty and is not the value of an option{}\n"
                    "run 'pathlift {}--help' for the options\n",
                    place + 1, after, help));
    return ExitCode::exit_bad_input;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    if (execute) {
      return app.exit(e);
    }
    std::ostringstream discarded;
    return app.exit(e, discarded, discarded);
  } catch (const CLI::ParseError& e) {
    print_parse_error(err, app, e, args);
    return ExitCode::exit_bad_input;
  } catch (const CheckFailed& e) {
    print_error(err, e.what());
    return ExitCode::exit_check_failed;
  } catch (const RangeError& e) {
    print_error(err, e.what());
    return ExitCode::exit_out_of_range;
  } catch (const TooLarge& e) {
    print_error(err, with_cli_hint(e));
    return ExitCode::exit_bad_input;
  } catch (const std::invalid_argument& e) {  // FormatError, NetworkError, UnsupportedModel
    print_error(err, e.what());
    return ExitCode::exit_bad_input;
  } catch (const CountOverflow& e) {  // a count of the input beyond 64 bits
    print_error(err, e.what());
    return ExitCode::exit_bad_input;
  } catch (const std::bad_alloc&) {
    print_error(err,
                "out of memory (an internal error: the work was not refused in advance; please "
                "report it, and try a lower --max-memory)");
    return ExitCode::exit_internal;
  } catch (const std::exception& e) {
    print_error(err, fmt::format("internal error: {} (this should not happen: please report it)",
                                 e.what()));
    return ExitCode::exit_internal;
  }
  return ExitCode::exit_ok;
}

}  // namespace pathlift::cli
