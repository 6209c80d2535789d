#include "common.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>

#include "matrix_io.hpp"
#include "pathlift/builtins.hpp"
#include "pathlift/checks.hpp"
#include "pathlift/error.hpp"
#include "pathlift/io.hpp"
#include "pathlift/layers.hpp"
#include "pathlift/limits.hpp"
#include "pathlift/options.hpp"
#include "pathlift/rank.hpp"
#include "pathlift/version.hpp"

namespace pathlift::cli {

nlohmann::ordered_json scaled_value_json(const ScaledReal& x) {
  return x.fits_double() ? nlohmann::ordered_json(x.value()) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json finite_or_null(double x) {
  return std::isfinite(x) ? nlohmann::ordered_json(x) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json scaled_log10_json(const ScaledReal& x) {
  return finite_or_null(x.log10());
}

nlohmann::ordered_json count_json(const Count& c) {
  return c.exact() ? nlohmann::ordered_json(c.value()) : finite_or_null(c.approx());
}

std::string scaled_text(const ScaledReal& x) {
  if (x.is_zero()) {
    return "0";
  }
  if (x.fits_double()) {
    return fmt::format("{:.10e}  (log10 {:.6f})", x.value(), x.log10());
  }
  return fmt::format("10^{:.10f}  (beyond double's range)", x.log10());
}

nlohmann::ordered_json json_header(std::string_view command, int layout_version,
                                   const std::string& network,
                                   const std::optional<std::string>& theta) {
  nlohmann::ordered_json j;
  j["format"] = fmt::format("pathlift-{}", command);
  j["version"] = layout_version;
  j["pathlift_version"] = version_string;
  j["network"] = network;
  j["theta"] = theta ? nlohmann::ordered_json(*theta) : nlohmann::ordered_json(nullptr);
  return j;
}

void print_json(nlohmann::ordered_json header, const std::string& body) {
  header.update(nlohmann::ordered_json::parse(body));
  print_json(header);
}

void print_json(const nlohmann::ordered_json& j) {
  fmt::print("{}\n", j.dump(2));
}

std::FILE* text_stream(const std::string& output) {
  return output.empty() ? stdout : stderr;
}

void require_one_stdout_result(bool json, const std::string& output) {
  if (json && output == "-") {
    throw std::invalid_argument(
        "--json and -o - would both write to stdout: write the data to a file, or drop --json");
  }
}

void add_network_options(CLI::App& cmd, NetworkOptions& opts) {
  auto* group = cmd.add_option_group("network", "Choose the network (default: --example fig1)");
  auto* file = group->add_option("--network", opts.file,
                                 "A model file, read by its content: pathlift-network JSON, or a "
                                 "layer graph (pathlift-layers JSON, ONNX), handled as --onnx is");
  auto* ff = group->add_option("--ff", opts.ff,
                               "Feed-forward ReLU network r,w1,...,wL,q (one bias per layer)");
  file->check(non_empty);
  ff->check(non_empty);
  group->add_flag("--no-bias", opts.no_bias, "With --ff: no bias nodes");
  auto* example = group->add_option(
      "--example", opts.example,
      "A built-in network: fig1, sketch-h0, sketch-h1, ff:r,w1,..,q, ff-nobias:r,..,q, "
      "random-dag:m,p,seed");
  auto* onnx = group->add_option(
      "--onnx", opts.onnx,
      "An ONNX model (Conv, Gemm, pools, BatchNormalization, Relu, Add, ...), read as a layer "
      "graph: norm, kernel --diag|--trace|--top-eig, rank and info compute on it without "
      "unrolling, "
      "the other commands unroll it into a DAG; its weights are theta's default");
  group->add_option("--input-shape", opts.input_shape,
                    "With --onnx: the input shape per sample, without the batch dimension "
                    "(e.g. 3,32,32); needed when the model's is symbolic");
  example->check(non_empty);
  onnx->check(non_empty);
  file->excludes(ff)->excludes(example)->excludes(onnx);
  ff->excludes(example)->excludes(onnx);
  example->excludes(onnx);
}

std::vector<Index> parse_input_shape(const std::string& text) {
  std::vector<Index> shape;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    const auto value = parse_unsigned(item);
    if (!value || *value < 1 ||
        *value > static_cast<std::uint64_t>(std::numeric_limits<Index>::max())) {
      throw std::invalid_argument(fmt::format(
          "--input-shape '{}': expected positive integers separated by commas, such as 3,32,32",
          printable(text)));
    }
    shape.push_back(static_cast<Index>(*value));
    start = comma + 1;
  }
  return shape;
}

namespace {

/// f(), a TooLarge from unrolling naming the commands that need no unrolling.
template <class F>
decltype(auto) with_unroll_hint(F&& f) {
  try {
    return f();
  } catch (const TooLarge& e) {
    throw TooLarge(
        fmt::format("{} (norm, kernel --diag|--trace|--top-eig, rank and info compute on "
                    "the layer graph without unrolling)",
                    e.what()),
        e.reason());
  }
}

LoadedModel read_model(const NetworkOptions& opts, std::size_t max_memory) {
  if (opts.no_bias && opts.ff.empty()) {
    throw std::invalid_argument("--no-bias goes with --ff");
  }
  if (!opts.input_shape.empty() && opts.onnx.empty() && opts.file.empty()) {
    throw std::invalid_argument("--input-shape goes with --onnx (an ONNX model)");
  }
  const std::string& file = opts.onnx.empty() ? opts.file : opts.onnx;
  if (!file.empty()) {
    ModelOptions mo;
    mo.engine.max_memory = max_memory;
    if (!opts.input_shape.empty()) {
      mo.input_shape = parse_input_shape(opts.input_shape);
    }
    try {
      return {load_model(file, mo), file};
    } catch (const InputShapeError& e) {
      if (!e.needed()) {
        throw std::invalid_argument(
            fmt::format("--input-shape goes with an ONNX model: {}", e.what()));
      }
      if (opts.input_shape.empty()) {
        throw InputShapeError(std::string(e.what()) + " with --input-shape", true);
      }
      throw;
    }
  }
  const std::string name = !opts.ff.empty()       ? (opts.no_bias ? "ff-nobias:" : "ff:") + opts.ff
                           : opts.example.empty() ? std::string("fig1")
                                                  : opts.example;
  return {Model(builtin_network(name)), name};
}

}  // namespace

const Network& LoadedModel::network(const ComputeOptions& compute) const {
  if (const Network* dag = model.dag()) {
    return *dag;
  }
  // The model keeps the DAG it unrolls, and this model the model.
  const EngineOptions options = engine_options(compute, "unrolling the layer graph");
  return *with_unroll_hint([&] { return model.unrolled(options); });
}

LoadedModel load_model(const NetworkOptions& opts, std::size_t max_memory) {
  LoadedModel m =
      with_progress("loading the network", [&] { return read_model(opts, max_memory); });
  // What the importer noticed (an ONNX export that folded batch norms into convolutions, so
  // that d and theta are not the PyTorch model's): one line each on stderr, for every command.
  if (const LayerGraph* g = m.model.layer_graph()) {
    for (const std::string& w : g->warnings) {
      fmt::print(stderr, "warning: {}\n", w);
    }
  }
  return m;
}

LoadedModel load_model(const NetworkOptions& opts, const ComputeOptions& compute) {
  return load_model(opts, parse_memory_size(compute.max_memory));
}

LoadedNetwork load_network(const NetworkOptions& opts) {
  return load_network(opts, ComputeOptions{});
}

LoadedNetwork load_network(const NetworkOptions& opts, const ComputeOptions& compute) {
  LoadedModel m = load_model(opts, compute);
  (void)m.network(compute);  // unrolled, with its hint and progress, and kept by the model
  return {m.model.unrolled(), std::move(m.description)};
}

void add_theta_options(CLI::App& cmd, ComputeOptions& opts) {
  auto* theta = cmd.add_option("--theta", opts.theta_file,
                               "Weights theta: a .npy or text file of d numbers (overrides the "
                               "network file's weights)");
  auto* seed = cmd.add_option("--seed", opts.seed,
                              "Weights theta drawn standard normal from this seed (default: the "
                              "network file's weights, else seed 0)")
                   ->check(seed_number);
  theta->excludes(seed);
}

void add_engine_options(CLI::App& cmd, ComputeOptions& opts) {
  cmd.add_option("--threads", opts.threads, "Threads (default: all cores)")
      ->check(non_negative_number);
  cmd.add_option("--max-memory", opts.max_memory,
                 "Refuse work needing more memory than this (e.g. 8G, 512M; default: half of "
                 "physical RAM)");
}

namespace {

/// The number text starts with (std::stod) and the characters it takes; {0, 0} when none.
std::pair<double, std::size_t> leading_number(const std::string& text) {
  std::size_t used = 0;
  try {
    const double value = std::stod(text, &used);
    return {value, used};
  } catch (const std::exception&) {
    return {0.0, 0};
  }
}

CLI::Validator number_check(bool strict) {
  const char* want = strict ? "a number > 0" : "a number >= 0";
  return {[strict, want](const std::string& text) -> std::string {
            const auto [value, used] = leading_number(text);
            const bool ok =
                used == text.size() && std::isfinite(value) && (strict ? value > 0 : value >= 0);
            return ok ? std::string() : fmt::format("'{}' is not {}", text, want);
          },
          strict ? "POSITIVE" : "NONNEGATIVE"};
}

}  // namespace

const CLI::Validator non_negative_number = number_check(false);
const CLI::Validator positive_number = number_check(true);

std::optional<std::uint64_t> parse_unsigned(std::string_view text) {
  std::uint64_t value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || text[0] == '-' || text[0] == '+' || ec != std::errc() ||
      ptr != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

namespace {

CLI::Validator integer_check(std::uint64_t least) {
  return {[least](const std::string& text) -> std::string {
            const auto value = parse_unsigned(text);
            const bool ok = value && *value >= least &&
                            *value <= static_cast<std::uint64_t>(std::numeric_limits<Index>::max());
            return ok ? std::string()
                      : fmt::format("'{}' is not an integer >= {} (digits only, below 2^63)",
                                    printable(text), least);
          },
          least == 0 ? "UINT" : "POSITIVE_INT"};
}

}  // namespace

const CLI::Validator positive_integer = integer_check(1);
const CLI::Validator seed_number{[](const std::string& text) -> std::string {
                                   return parse_unsigned(text)
                                              ? std::string()
                                              : fmt::format(
                                                    "'{}' is not a seed: an integer from "
                                                    "0 to 2^64 - 1",
                                                    printable(text));
                                 },
                                 "SEED"};
const CLI::Validator non_empty{
    [](const std::string& text) { return text.empty() ? std::string("the value is empty") : ""; },
    ""};

void add_prime_option(CLI::App& cmd, std::uint64_t& prime, const std::string& description) {
  cmd.add_option("--prime", prime, description)->check([](const std::string& text) -> std::string {
    const auto p = parse_unsigned(text);
    if (!p) {
      return fmt::format("'{}' is not a number (digits only)", printable(text));
    }
    return (*p < (std::uint64_t{1} << 63) && is_prime(*p))
               ? ""
               : fmt::format("{} is not a prime below 2^63", *p);
  });
}

CLI::App* add_network_command(CLI::App& app, const std::string& name,
                              const std::string& description, NetworkCommandOptions& opts,
                              TakesTheta theta, const std::string& json_help) {
  auto* cmd = app.add_subcommand(name, description);
  add_network_options(*cmd, opts.network);
  if (theta == TakesTheta::yes) {
    add_theta_options(*cmd, opts.compute);
  }
  add_engine_options(*cmd, opts.compute);
  cmd->add_flag("--json", opts.json, json_help);
  return cmd;
}

void add_data_option(CLI::App& cmd, std::string& path) {
  cmd.add_option("--data", path,
                 "Data X, n x r (.npy or .csv/.txt): one sample a row, one column per data "
                 "input in node order, bias nodes excluded")
      ->required();
}

Eigen::MatrixXd read_data(const std::string& path, const Network& net,
                          const std::string& description, const ComputeOptions& compute) {
  Eigen::MatrixXd X = read_matrix(path, true, parse_memory_size(compute.max_memory));
  const auto r = static_cast<Index>(net.data_inputs().size());
  if (X.cols() != r) {
    throw FormatError(
        fmt::format("'{}' has {} columns but the network {} has {} data inputs (bias nodes "
                    "excluded)",
                    path, X.cols(), description, r));
  }
  return X;
}

namespace {

/// theta from --theta FILE (d numbers), --seed N, else the stored weights, else --seed 0.
LoadedTheta choose_theta(Index d, const std::optional<std::span<const double>>& stored,
                         const std::function<void(std::size_t)>& check_size,
                         const ComputeOptions& opts) {
  if (!opts.theta_file.empty()) {
    std::vector<double> theta = [&] {
      try {
        return read_vector(opts.theta_file, true, parse_memory_size(opts.max_memory));
      } catch (const FormatError& e) {  // the reader names the file; this names the option
        throw FormatError(fmt::format("{}: {}", opts.theta_flag, e.what()));
      }
    }();
    try {
      check_size(theta.size());
    } catch (const std::invalid_argument& e) {  // the count's message, with the file's name
      throw std::invalid_argument(
          fmt::format("{} {}: {}", opts.theta_flag, opts.theta_file, e.what()));
    }
    return {std::move(theta), opts.theta_flag + " " + opts.theta_file};
  }
  if (opts.seed) {
    return {normal_weights(d, *opts.seed), fmt::format("--seed {}", *opts.seed)};
  }
  if (stored) {
    return {*stored, "the network file's weights"};
  }
  return {normal_weights(d, 0), "standard normal, --seed 0"};
}

}  // namespace

LoadedTheta load_theta(const Network& net, const ComputeOptions& opts) {
  const auto stored = net.has_weights() ? std::optional(net.weights()) : std::nullopt;
  return choose_theta(
      net.num_params(), stored, [&](std::size_t n) { check_theta_size(net, n, opts.theta_name); },
      opts);
}

LoadedTheta load_theta(const LoadedModel& loaded, const ComputeOptions& opts) {
  const Model& m = loaded.model;
  if (const Network* net = m.dag()) {
    return load_theta(*net, opts);
  }
  const auto stored = m.has_weights() ? std::optional(m.weights()) : std::nullopt;
  const Index d = m.num_params();
  return choose_theta(
      d, stored,
      [&](std::size_t n) {
        if (n != static_cast<std::size_t>(d)) {
          throw std::invalid_argument(fmt::format(
              "{} has {} entries but the network has {} parameters", opts.theta_name, n, d));
        }
      },
      opts);
}

std::size_t parse_memory_size(const std::string& text) {
  if (text.empty()) {
    return 0;
  }
  const auto bad = [&](std::string_view why) {
    return std::invalid_argument(
        fmt::format("--max-memory '{}': {} (expected a positive size such as 8G, 512M, 1.5G or "
                    "1000000 bytes)",
                    printable(text), why));
  };
  // digits [. digits] then a unit: no sign, exponent, space or other trailing text.
  const std::size_t int_end = text.find_first_not_of("0123456789");
  std::size_t number_end = int_end == std::string::npos ? text.size() : int_end;
  if (number_end < text.size() && text[number_end] == '.') {
    number_end = std::min(text.find_first_not_of("0123456789", number_end + 1), text.size());
  }
  if (number_end == 0 || text[0] == '.' || text[number_end - 1] == '.') {
    throw bad("not a number");
  }
  std::string unit = text.substr(number_end);
  for (char& c : unit) {
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  int power = -1;  // of 1024
  if (unit.empty() || unit == "B") {
    power = 0;
  } else if (unit.size() <= 3 &&
             (unit.size() == 1 || unit.substr(1) == "B" || unit.substr(1) == "IB")) {
    const auto at = std::string_view("KMGT").find(unit[0]);
    power = at == std::string_view::npos ? -1 : static_cast<int>(at) + 1;
  }
  if (power < 0) {
    throw bad(fmt::format("unknown unit '{}' (B, K, M, G or T)", printable(unit)));
  }
  // Exact: the integer part times 1024^power, plus the fraction's share, overflow-checked.
  std::uint64_t bytes = 0;
  const auto whole = text.substr(0, std::min(int_end, number_end));
  const auto [ptr, ec] = std::from_chars(whole.data(), whole.data() + whole.size(), bytes);
  (void)ptr;
  const std::uint64_t scale = std::uint64_t{1} << (10 * power);
  if (ec != std::errc() || __builtin_mul_overflow(bytes, scale, &bytes)) {
    throw bad("too large");
  }
  if (number_end > whole.size()) {
    const double fraction = std::stod("0" + text.substr(whole.size(), number_end - whole.size()));
    if (power == 0 && fraction != 0) {
      throw bad("a fraction of a byte");
    }
    if (__builtin_add_overflow(
            bytes, static_cast<std::uint64_t>(fraction * static_cast<double>(scale)), &bytes)) {
      throw bad("too large");
    }
  }
  if (bytes == 0) {
    throw bad("less than one byte");
  }
  if (bytes > std::numeric_limits<std::size_t>::max()) {
    throw bad("too large");
  }
  return static_cast<std::size_t>(bytes);
}

namespace {

/// The resident set of this process in bytes (/proc/self/statm), 0 when unknown.
std::size_t resident_set_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) {
    return 0;
  }
  unsigned long long size = 0;
  unsigned long long resident = 0;
  const int got = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  const long page = sysconf(_SC_PAGESIZE);
  return got == 2 && page > 0 ? static_cast<std::size_t>(resident) * static_cast<std::size_t>(page)
                              : 0;
}

std::size_t g_memory_baseline = 0;
std::size_t g_memory_held = 0;  // loaded_bytes() when the work's limit was last set

}  // namespace

void note_memory_baseline() {
  g_memory_baseline = resident_set_bytes();
}

std::size_t loaded_bytes() {
  if (g_memory_baseline == 0) {
    return 0;
  }
  const std::size_t now = resident_set_bytes();
  return now > g_memory_baseline ? now - g_memory_baseline : 0;
}

std::size_t work_memory(const ComputeOptions& opts) {
  // --max-memory bounds the whole process: the work gets what the loaded model and data left.
  // Blocks kept for reuse by an earlier pass (types.hpp, up to 1 GiB) are resident but not
  // held: handed back first, so that they count neither as held nor twice.
  (void)release_cached_buffers();
  const std::size_t limit = effective_max_memory(parse_memory_size(opts.max_memory));
  const std::size_t held = loaded_bytes();
  g_memory_held = held;
  return held < limit ? limit - held : 1;
}

std::string memory_note() {
  // What was held when the limit was set: by the time a refusal is printed, the model may be
  // freed.
  const std::size_t held = g_memory_held;
  return held == 0
             ? std::string()
             : fmt::format(" (what --max-memory leaves beside the {} the model and data hold)",
                           format_bytes(static_cast<double>(held)));
}

EngineOptions engine_options(const ComputeOptions& opts, const std::string& label) {
  EngineOptions e;
  e.threads = opts.threads;
  (void)resolve_threads(e.threads);  // refuses more than the machine can run, before the work
  e.max_memory = work_memory(opts);
  auto bar = std::make_shared<ProgressBar>(label);
  e.progress = [bar](std::string_view /*phase*/, double fraction) { (*bar)(fraction); };
  return e;
}

ProgressBar::ProgressBar(std::string label)
    : m_label(std::move(label)),
      m_start(std::chrono::steady_clock::now()),
      m_enabled(isatty(STDERR_FILENO) != 0) {}

ProgressBar::~ProgressBar() {
  stop_ticker();
  if (m_drawn) {  // work that ended without reporting 1.0
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
}

void ProgressBar::stop_ticker() {
  if (m_ticker.joinable()) {
    m_ticking = false;
    m_ticker.join();
  }
}

void ProgressBar::operator()(double fraction) {
  if (!m_enabled) {
    return;
  }
  if (fraction < 0) {
    if (!m_ticker.joinable()) {
      m_ticking = true;
      m_ticker = std::thread([this] {
        while (m_ticking) {
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          const double s = seconds_since(m_start);
          if (m_ticking && s >= 1.0 && static_cast<int>(s * 10) % 5 == 0) {
            std::fprintf(stderr, "\r%s ... %.0f s", m_label.c_str(), s);
            std::fflush(stderr);
            m_drawn = true;
          }
        }
      });
    }
    return;
  }
  stop_ticker();
  if (fraction >= 1.0) {
    if (m_drawn) {
      std::fprintf(stderr, "\r\033[K");  // clear the line
      std::fflush(stderr);
      m_drawn = false;
    }
    return;
  }
  if (seconds_since(m_start) < 1.0) {
    return;
  }
  const int percent = static_cast<int>(fraction * 100.0);
  if (percent == m_last_percent) {
    return;
  }
  m_last_percent = percent;
  constexpr int width = 30;
  const int filled = percent * width / 100;
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.append(static_cast<std::size_t>(width - filled), '.');
  std::fprintf(stderr, "\r%s [%s] %3d%%", m_label.c_str(), bar.c_str(), percent);
  std::fflush(stderr);
  m_drawn = true;
}

Progress phase_progress() {
  struct State {
    std::string phase;
    std::unique_ptr<ProgressBar> bar;
  };
  auto state = std::make_shared<State>();
  return [state](std::string_view phase, double fraction) {
    if (!state->bar || state->phase != phase) {
      if (state->bar) {
        (*state->bar)(1.0);
      }
      state->phase = std::string(phase);
      state->bar = std::make_unique<ProgressBar>(state->phase);
    }
    (*state->bar)(fraction);
  };
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string format_check(const CheckResult& r) {
  switch (r.status) {
    case CheckStatus::not_applicable:
      return fmt::format("n/a   ({})", r.note);
    case CheckStatus::out_of_range:
      return fmt::format("OUT OF RANGE  ({})", r.note);
    case CheckStatus::passed:
    case CheckStatus::failed:
      break;
  }
  return fmt::format("{}  (max rel. error {:.1e}, tol {:.0e}, {} entries)",
                     r.status == CheckStatus::passed ? "pass" : "FAIL", r.max_error, r.tolerance,
                     r.entries);
}

CheckStatus checks_status(const std::vector<CheckResult>& results) {
  if (std::any_of(results.begin(), results.end(),
                  [](const CheckResult& r) { return r.status == CheckStatus::failed; })) {
    return CheckStatus::failed;
  }
  return any_out_of_range(results) ? CheckStatus::out_of_range : CheckStatus::passed;
}

std::string checks_verdict(const std::vector<CheckResult>& results) {
  switch (checks_status(results)) {
    case CheckStatus::passed:
    case CheckStatus::not_applicable:
      return "all checks passed";
    case CheckStatus::failed:
      return "SOME CHECKS FAILED";
    case CheckStatus::out_of_range:
      break;
  }
  return "SOME CHECKS NOT RUN: the magnitudes at theta are beyond float64";
}

void throw_unless_passed(const std::vector<CheckResult>& results) {
  const CheckStatus status = checks_status(results);
  if (status != CheckStatus::failed && status != CheckStatus::out_of_range) {
    return;
  }
  std::vector<std::string> names;
  for (const auto& r : results) {
    if (r.status == status) {
      names.push_back(r.name);
    }
  }
  if (status == CheckStatus::failed) {
    throw CheckFailed(fmt::format("{} of {} checks failed: {}", names.size(), results.size(),
                                  fmt::join(names, ", ")));
  }
  const auto it = std::find_if(results.begin(), results.end(), [](const CheckResult& r) {
    return r.status == CheckStatus::out_of_range;
  });
  throw RangeError(fmt::format("{} of {} checks not run ({}): {}", names.size(), results.size(),
                               fmt::join(names, ", "), it->note));
}

}  // namespace pathlift::cli
