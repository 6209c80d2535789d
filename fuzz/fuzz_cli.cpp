// The command line: the input is split into argv words (at NUL bytes when it has one, else at
// newlines) and given to run_cli in parse-only mode: CLI11's parsing and option checks of every
// command, the "unknown command" and "did you mean" messages, --help and --version, with no
// command run (no file read or written). Then the option values the commands check before any
// work (--max-memory, --input-shape, the extension of -o) go through those checks. Exit 3 (an
// internal error) and any exception other than a usage error are findings.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "common.hpp"
#include "harness.hpp"
#include "matrix_io.hpp"
#include "registry.hpp"

namespace {

std::vector<std::string> split_words(std::string_view text) {
  const char separator = text.find('\0') != std::string_view::npos ? '\0' : '\n';
  std::vector<std::string> words;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(separator, start), text.size());
    words.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  if (!words.empty() && words.back().empty()) {
    words.pop_back();  // a final separator ends the last word
  }
  return words;
}

/// What a command does with an option's value before its work, or nothing.
void check_value(std::string_view option, const std::string& value) {
  using namespace pathlift::cli;
  if (option == "--max-memory") {
    (void)parse_memory_size(value);
  } else if (option == "--input-shape") {
    (void)parse_input_shape(value);
  } else if (option == "-o" || option == "--output") {
    (void)format_of(value);
  }
}

/// check_value for each option of `words` (--name value or --name=value), held to the CLI's
/// contract: a usage error (exit 2) or nothing.
void check_values(const std::vector<std::string>& words) {
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& word = words[i];
    const std::size_t eq = word.find('=');
    try {
      if (word.rfind("--", 0) == 0 && eq != std::string::npos) {
        check_value(std::string_view(word).substr(0, eq), word.substr(eq + 1));
      } else if (i + 1 < words.size()) {
        check_value(word, words[i + 1]);
      }
    } catch (const std::invalid_argument& e) {
      if (std::string_view(e.what()).empty()) {
        pathlift::fuzz::fail("empty message", word);
      }
    } catch (const pathlift::TooLarge&) {
    } catch (const std::exception& e) {
      pathlift::fuzz::fail("an option check threw", e.what());
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::vector<std::string> words =
      split_words(std::string_view(reinterpret_cast<const char*>(data), size));
  std::vector<const char*> argv{"pathlift"};
  for (const std::string& word : words) {
    argv.push_back(word.c_str());
  }
  const int code = pathlift::cli::run_cli(static_cast<int>(argv.size()), argv.data(),
                                          pathlift::cli::RunMode::parse_only);
  if (code == pathlift::cli::exit_internal) {
    pathlift::fuzz::fail("exit 3 (internal error) from parsing", words.empty() ? "" : words[0]);
  }
  check_values(words);
  return 0;
}
