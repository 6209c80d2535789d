#pragma once
// Options and helpers shared by the CLI's subcommands.

#include <CLI/CLI.hpp>
#include <Eigen/Dense>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "pathlift/certificate.hpp"
#include "pathlift/count.hpp"
#include "pathlift/layers.hpp"
#include "pathlift/model.hpp"
#include "pathlift/network.hpp"
#include "pathlift/paths.hpp"
#include "pathlift/scaled_real.hpp"

namespace pathlift::cli {

/// The exit status of `pathlift` (docs/cli.md#exit-codes).
enum ExitCode : int {
  exit_ok = 0,            ///< done
  exit_check_failed = 1,  ///< a check or theorem failed (CheckFailed)
  exit_bad_input = 2,     ///< bad usage or bad input: parse error, unreadable file, work refused
  exit_internal = 3,      ///< any other exception: a bug or out of memory
  exit_out_of_range = 4,  ///< a result overflows or underflows float64 (RangeError): not
                          ///< computed, or a check not run; the sign and log10 forms (--log)
                          ///< or the path-free commands give it
};

/// Thrown by a command after it printed its result, when a check or theorem it verified
/// failed: exit 1, with "error: <what>" on stderr.
class CheckFailed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The header every `--json` output starts with (docs/cli.md#json): "format":
/// "pathlift-<command>", "version": `layout_version` (of that command's keys, bumped when one
/// changes meaning), "pathlift_version", "network" (the description of the model) and "theta"
/// (where theta came from; null for a command that takes no theta).
/// A number beyond double's range for --json: its value when it fits a double, else null (its
/// log10 goes beside it).
nlohmann::ordered_json scaled_value_json(const ScaledReal& x);
/// log10 |x|, or null for 0.
nlohmann::ordered_json scaled_log10_json(const ScaledReal& x);
/// x, or null when it is not a finite double (JSON has no inf).
nlohmann::ordered_json finite_or_null(double x);
/// A path count: exact when it is, else its double (null beyond double's range).
nlohmann::ordered_json count_json(const Count& c);
/// For text: "1.2345678900e+03  (log10 3.091515)", "10^1234.5678901234  (beyond double's
/// range)", or "0".
std::string scaled_text(const ScaledReal& x);

nlohmann::ordered_json json_header(std::string_view command, int layout_version,
                                   const std::string& network,
                                   const std::optional<std::string>& theta);

/// A `--json` result on stdout: `header` followed by the keys of `body`, a JSON object written
/// by the library (to_json(...)).
void print_json(nlohmann::ordered_json header, const std::string& body);
/// A `--json` result on stdout, indented by 2.
void print_json(const nlohmann::ordered_json& j);

/// Where a command's human-readable text goes: stdout when it is the result, stderr when the
/// data goes to -o (a file, or `-`: stdout then holds the data only). docs/cli.md#streams.
std::FILE* text_stream(const std::string& output);

/// Refuses --json with `-o -` (both would write to stdout).
void require_one_stdout_result(bool json, const std::string& output);

/// How the network is chosen: --network FILE.json | --ff r,w1,..,q [--no-bias] | --example NAME
/// | --onnx FILE [--input-shape C,H,W].
struct NetworkOptions {
  std::string file;
  std::string ff;
  bool no_bias = false;
  std::string example;
  std::string onnx;
  std::string input_shape;
};

void add_network_options(CLI::App& cmd, NetworkOptions& opts);

struct ComputeOptions;

/// The chosen model (model.hpp: a DAG, or a layer graph for an ONNX model or a
/// pathlift-layers file) and a short description of it. The path-free commands (norm, kernel
/// --diag|--trace|--top-eig, info) run on a layer graph without unrolling (path_free.hpp);
/// network() unrolls it for everything that needs edges.
struct LoadedModel {
  Model model;
  std::string description;

  /// The DAG: the model's own, or the layer graph unrolled within --max-memory (progress on a
  /// terminal; TooLarge with the node and edge counts, naming the commands that run without
  /// unrolling), made once and kept by the model.
  [[nodiscard]] const Network& network(const ComputeOptions& compute) const;
};
/// Files are read under max_input_bytes(kind, max_memory) (0: default).
LoadedModel load_model(const NetworkOptions& opts, std::size_t max_memory = 0);
/// load_model() under the --max-memory of `compute`.
LoadedModel load_model(const NetworkOptions& opts, const ComputeOptions& compute);

/// The chosen network as a DAG (default: the paper's Figure 1) and a short description of it:
/// load_model() then LoadedModel::network() (the second form within --max-memory; the first uses
/// the default limit). Its weights are the network's weights.
struct LoadedNetwork {
  std::shared_ptr<const Network> dag;
  std::string description;
};
LoadedNetwork load_network(const NetworkOptions& opts);

/// "3,32,32" -> {3, 32, 32}: the per-sample shape of --input-shape (positive integers).
std::vector<Index> parse_input_shape(const std::string& text);

/// Where theta comes from: --theta FILE | --seed N, else the network file's weights, else
/// --seed 0 (standard normal). --threads and --max-memory for the engine.
struct ComputeOptions {
  std::string theta_file;
  /// The option and the vector's name in messages: --theta and theta, or a command's second
  /// vector (metric: --theta2 and theta2).
  std::string theta_flag = "--theta";
  std::string theta_name = "theta";
  std::optional<std::uint64_t> seed;
  int threads = 0;
  std::string max_memory;
};

/// load_network() unrolling a layer graph within --max-memory.
LoadedNetwork load_network(const NetworkOptions& opts, const ComputeOptions& compute);

/// --theta FILE and --seed N (exclusive).
void add_theta_options(CLI::App& cmd, ComputeOptions& opts);
/// --threads N and --max-memory SIZE.
void add_engine_options(CLI::App& cmd, ComputeOptions& opts);

/// Option checks whose message names the value: a number >= 0, a number > 0 (CLI11's own
/// print the range of a double).
extern const CLI::Validator non_negative_number;
extern const CLI::Validator positive_number;
/// Strict integer checks (digits only, no sign, space or exponent, below 2^63): an integer >= 1
/// (CLI11's own would answer "0 not in range 0 to 1.8e308"); a seed (an integer
/// from 0 to 2^64 - 1: "-1" is refused, not wrapped); a value that is not empty (`--ff ''`
/// would otherwise mean the default network).
extern const CLI::Validator positive_integer;
extern const CLI::Validator seed_number;
extern const CLI::Validator non_empty;

/// `text` as an unsigned decimal integer (digits only, below 2^64), else nullopt.
std::optional<std::uint64_t> parse_unsigned(std::string_view text);

/// --prime P, checked to be a prime below 2^63 (the modular ranks of rank and prove).
void add_prime_option(CLI::App& cmd, std::uint64_t& prime, const std::string& description);

/// The options of a subcommand that computes on one network and can print one JSON object.
struct NetworkCommandOptions {
  NetworkOptions network;
  ComputeOptions compute;
  bool json = false;
};

/// Whether a subcommand takes theta (--theta FILE | --seed N).
enum class TakesTheta : bool { no, yes };

/// Adds subcommand `name` with, in this order: the network options, --theta and --seed (when
/// `theta` is yes), --threads and --max-memory, and --json described by `json_help`.
CLI::App* add_network_command(CLI::App& app, const std::string& name,
                              const std::string& description, NetworkCommandOptions& opts,
                              TakesTheta theta, const std::string& json_help);

/// --data FILE (required): the batch X of forward and linearize.
void add_data_option(CLI::App& cmd, std::string& path);

/// The data X (n x r) of --data FILE for `net` (.npy or text), read under --max-memory
/// (`compute`): FormatError when its width is not the number of data inputs, naming the file,
/// both numbers and `description`.
Eigen::MatrixXd read_data(const std::string& path, const Network& net,
                          const std::string& description, const ComputeOptions& compute);

/// theta for the network, and where it came from ("--theta FILE", "network file", "--seed 0").
/// `theta` views the network's own weights, which are not copied (an ONNX model's may be the
/// largest object of the program: the network must outlive it), or `owned` (read or drawn).
/// Move-only, so that the view never outlives its storage.
struct LoadedTheta {
  std::span<const double> theta;
  std::string source;
  std::vector<double> owned;

  LoadedTheta(std::span<const double> stored, std::string from)
      : theta(stored), source(std::move(from)) {}
  LoadedTheta(std::vector<double> values, std::string from)
      : source(std::move(from)), owned(std::move(values)) {
    theta = owned;
  }
  LoadedTheta(LoadedTheta&&) = default;  // a vector's move keeps its storage: the view holds
  LoadedTheta& operator=(LoadedTheta&&) = default;
  LoadedTheta(const LoadedTheta&) = delete;
  LoadedTheta& operator=(const LoadedTheta&) = delete;
  ~LoadedTheta() = default;
};
LoadedTheta load_theta(const Network& net, const ComputeOptions& opts);
/// The same for a loaded model: for a layer graph, --theta FILE (d numbers), --seed N, else
/// the graph's weights (an ONNX model's initializers), else --seed 0.
LoadedTheta load_theta(const LoadedModel& model, const ComputeOptions& opts);

/// Parses "8G", "512M", "1.5GiB", "1000000" (bytes); "" = 0 (the default limit).
std::size_t parse_memory_size(const std::string& text);

/// EngineOptions from the options, with a progress bar on stderr (terminal only) labelled
/// `label`, shown once the work has taken more than about a second.
EngineOptions engine_options(const ComputeOptions& opts, const std::string& label);

/// Records the process's resident memory before any work (the binary and its libraries: the
/// 64 MB the memory contract allows beyond the limit), so that engine_options() can leave the
/// work only what --max-memory has left once the model and data are loaded.
void note_memory_baseline();
/// Bytes resident now beyond that baseline (the loaded model, theta, data), 0 before it.
std::size_t loaded_bytes();
/// The memory limit of the work: --max-memory (0: the default) less loaded_bytes(), at least 1.
std::size_t work_memory(const ComputeOptions& opts);
/// " (what --max-memory leaves beside the 394.36 MiB the model and data hold)" for a memory
/// refusal (the bytes held when work_memory() last set a limit), or "" when it set none or
/// nothing was loaded: the limit a message names is the work's.
std::string memory_note();

/// A progress bar on stderr, drawn only when stderr is a terminal and the work has run for
/// about a second; cleared when done. A negative fraction means "running, extent unknown": the
/// label is shown with the seconds elapsed.
class ProgressBar {
 public:
  explicit ProgressBar(std::string label);
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  ~ProgressBar();
  void operator()(double fraction);

 private:
  void stop_ticker();

  std::string m_label;
  std::chrono::steady_clock::time_point m_start;
  bool m_enabled;
  bool m_drawn = false;
  int m_last_percent = -1;
  // Redraws "label ... N s" every half second while work of unknown extent runs in a library
  // call that reports nothing until it ends (LAPACK, FLINT).
  std::thread m_ticker;
  std::atomic<bool> m_ticking{false};
};

/// f() with a ProgressBar labelled `label` showing the seconds elapsed (work of unknown extent
/// that reports nothing: reading a file, unrolling, a single DP pass).
template <class F>
decltype(auto) with_progress(const std::string& label, F&& f) {
  ProgressBar bar(label);
  bar(-1.0);
  return f();
}

/// A display for the phases of long library work (Progress): one ProgressBar per phase,
/// labelled with the phase's name, on stderr when it is a terminal.
Progress phase_progress();

/// Seconds since `start`, for the timings the commands print.
double seconds_since(std::chrono::steady_clock::time_point start);

}  // namespace pathlift::cli

namespace pathlift {
struct CheckResult;
enum class CheckStatus;
}  // namespace pathlift

namespace pathlift::cli {
/// "pass  (max rel. error 1.2e-16, tol 1e-10, 9 entries)" or "n/a (...)" / "FAIL (...)".
std::string format_check(const CheckResult& r);

/// The verdict of check_identities' results: "failed" when one failed, else "out_of_range" when
/// one could not be run, else "passed".
CheckStatus checks_status(const std::vector<CheckResult>& results);

/// The last line of the checks' table: "all checks passed", "SOME CHECKS FAILED", ...
std::string checks_verdict(const std::vector<CheckResult>& results);

/// Throws CheckFailed (exit 1) naming the failed checks, else RangeError (exit 4) naming those
/// out of range, else returns.
void throw_unless_passed(const std::vector<CheckResult>& results);
}  // namespace pathlift::cli
