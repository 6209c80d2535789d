// Model and load_model() (model.hpp): a DAG or a layer graph, and the one reader of every model
// file format.

#include "pathlift/model.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>

#include "pathlift/error.hpp"
#include "pathlift/io.hpp"
#include "pathlift/onnx.hpp"
#include "src/core/enum_names.hpp"
#include "src/network/theta_check.hpp"

namespace pathlift {

namespace {

constexpr std::array k_format_names{detail::EnumName<ModelFormat>{ModelFormat::network, "network"},
                                    detail::EnumName<ModelFormat>{ModelFormat::layers, "layers"},
                                    detail::EnumName<ModelFormat>{ModelFormat::onnx, "onnx"}};

/// Stops a SAX parse at the top-level "format" value: a file's format is known without
/// building the document (the writers put "format" first, and a reader of a 1 GB file should
/// not parse it twice).
class FormatKeyScanner : public nlohmann::json::json_sax_t {
 public:
  std::optional<std::string> format;

  bool null() override { return value(); }
  bool boolean(bool /*val*/) override { return value(); }
  bool number_integer(number_integer_t /*val*/) override { return value(); }
  bool number_unsigned(number_unsigned_t /*val*/) override { return value(); }
  bool number_float(number_float_t /*val*/, const string_t& /*s*/) override { return value(); }
  bool string(string_t& val) override {
    if (m_depth == 1 && m_at_format) {
      format = val;
      return false;
    }
    return value();
  }
  bool binary(binary_t& /*val*/) override { return value(); }
  bool start_object(std::size_t /*n*/) override { return open(); }
  bool key(string_t& val) override {
    m_at_format = m_depth == 1 && val == "format";
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t /*n*/) override { return open(); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t /*pos*/, const std::string& /*tok*/,
                   const nlohmann::json::exception& /*e*/) override {
    return false;  // the format's own reader reports it
  }

 private:
  bool value() { return !(m_depth == 1 && m_at_format); }  // a non-string format: stop
  bool open() {
    // Deeper than any pathlift file: the reader refuses it with its own message.
    if ((m_depth == 1 && m_at_format) || m_depth > 64) {
      return false;
    }
    ++m_depth;
    return true;
  }
  bool close() {
    --m_depth;
    return m_depth > 0;
  }

  int m_depth = 0;
  bool m_at_format = false;
};

bool looks_like_json(std::string_view bytes) {
  for (const char c : bytes) {
    if (std::isspace(static_cast<unsigned char>(c)) == 0) {
      return c == '{' || c == '[';
    }
  }
  return false;
}

/// What a file holds, from its first bytes (JSON or not): its read limit, and whether it is an
/// ONNX model in a regular file (read in place by read_onnx). Anything that is not a readable
/// regular file gets the binary limit; reading it reports what is wrong. A head of nothing but
/// white space may be JSON.
struct Sniffed {
  InputKind kind = InputKind::binary;
  bool onnx_file = false;
};

Sniffed sniff(const std::string& path) {
  // A FIFO or a device is not opened here: opening and closing a FIFO's read end would break
  // its writer's pipe before the reader proper opens it (which then waits for a writer).
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return {};
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return {};
  }
  std::array<char, 256> head{};
  ssize_t got = 0;
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (regular) {
    got = std::max<ssize_t>(::read(fd, head.data(), head.size()), 0);
  }
  ::close(fd);
  const std::string_view text(head.data(), static_cast<std::size_t>(got));
  const bool blank = got == static_cast<ssize_t>(head.size()) &&
                     text.find_first_not_of(" \t\n\r\f\v") == std::string_view::npos;
  if (got > 0 && (blank || looks_like_json(text))) {
    return {InputKind::json, false};
  }
  return {InputKind::binary, regular};
}

template <class E>
[[noreturn]] void rethrow_naming(const std::string& path, const E& e) {
  throw E(fmt::format("{}: {}", printable(path, 200), e.what()));
}

[[noreturn]] void rethrow_naming(const std::string& path, const InputShapeError& e) {
  throw InputShapeError(fmt::format("{}: {}", printable(path, 200), e.what()), e.needed());
}

}  // namespace

std::string to_string(ModelFormat format) {
  return std::string(detail::enum_name(k_format_names, format));
}

// ---------------------------------------------------------------------------------------------
// Model

struct Model::Cache {
  std::mutex mutex;
  std::optional<UnrolledSize> size;
  std::shared_ptr<const Network> unrolled;
};

Model::Model(Network net) : Model(std::make_shared<const Network>(std::move(net))) {}

Model::Model(std::shared_ptr<const Network> net)
    : m_dag(std::move(net)), m_cache(std::make_shared<Cache>()) {
  if (m_dag == nullptr) {
    throw std::invalid_argument("Model: a null network");
  }
}

Model::Model(LayerGraph graph)
    : m_graph(std::make_shared<const LayerGraph>(std::move(graph))),
      m_cache(std::make_shared<Cache>()) {
  (void)layer_shapes(*m_graph);
}

const Network* Model::dag() const {
  return m_dag.get();
}

Index Model::num_params() const {
  return m_graph ? m_graph->num_params : m_dag->num_params();
}

bool Model::has_weights() const {
  return m_graph ? m_graph->weights.has_value() : m_dag->has_weights();
}

std::span<const double> Model::weights() const {
  if (!has_weights()) {
    throw std::logic_error("Model::weights: the model holds no weights");
  }
  return m_graph ? std::span<const double>(*m_graph->weights) : m_dag->weights();
}

const std::vector<std::string>& Model::warnings() const {
  static const std::vector<std::string> none;
  return m_graph ? m_graph->warnings : none;
}

UnrolledSize Model::size(const EngineOptions& options) const {
  if (m_dag) {
    return {m_dag->num_nodes(), m_dag->num_edges()};
  }
  const std::lock_guard lock(m_cache->mutex);
  if (!m_cache->size) {
    m_cache->size = m_cache->unrolled ? UnrolledSize{m_cache->unrolled->num_nodes(),
                                                     m_cache->unrolled->num_edges()}
                                      : unrolled_size(*m_graph, options);
  }
  return *m_cache->size;
}

bool Model::is_unrolled() const {
  if (m_dag) {
    return true;
  }
  const std::lock_guard lock(m_cache->mutex);
  return m_cache->unrolled != nullptr;
}

std::shared_ptr<const Network> Model::unrolled(const EngineOptions& options) const {
  if (m_dag) {
    return m_dag;
  }
  const std::lock_guard lock(m_cache->mutex);
  if (!m_cache->unrolled) {
    m_cache->unrolled = std::make_shared<const Network>(unroll(*m_graph, options));
  }
  return m_cache->unrolled;
}

namespace {
template <class T>
void check_model_theta(const Model& model, std::span<const T> theta) {
  if (const Network* net = model.dag()) {
    check_theta(*net, theta);
  } else {
    detail::check_parameter_count(theta.size(), model.num_params(), "theta", "parameters");
    detail::check_parameters(theta, model.num_params(), nullptr, "theta");
  }
}
}  // namespace

void check_theta(const Model& model, std::span<const double> theta) {
  check_model_theta(model, theta);
}

void check_theta(const Model& model, std::span<const float> theta) {
  check_model_theta(model, theta);
}

// ---------------------------------------------------------------------------------------------
// Reading

ModelFormat model_format(std::string_view bytes) {
  if (!looks_like_json(bytes)) {
    return ModelFormat::onnx;
  }
  FormatKeyScanner scanner;
  nlohmann::json::sax_parse(bytes, &scanner, nlohmann::json::input_format_t::json, false);
  return scanner.format == "pathlift-layers" ? ModelFormat::layers : ModelFormat::network;
}

Model parse_model(std::string_view bytes, const ModelOptions& options) {
  const ModelFormat format = model_format(bytes);
  if (format != ModelFormat::onnx && !options.input_shape.empty()) {
    throw InputShapeError(
        fmt::format(
            "an input shape is for ONNX models; this is a pathlift-{} file, whose input is fixed",
            format == ModelFormat::layers ? "layers" : "network"),
        false);
  }
  switch (format) {
    case ModelFormat::network:
      return Model(parse_network(bytes));
    case ModelFormat::layers:
      return Model(parse_layer_graph(bytes));
    case ModelFormat::onnx:
      return Model(parse_onnx(bytes, options.input_shape, options.engine));
  }
  throw std::logic_error("parse_model: unknown format");
}

Model load_model(const std::string& path, const ModelOptions& options) {
  const Sniffed sniffed = sniff(path);
  if (sniffed.onnx_file) {
    // Read in place (read_onnx names the file in its errors): the weights go from the file to
    // theta, the file's bytes never held beside them.
    LayerGraph graph = read_onnx(path, options.input_shape, options.engine);
    try {
      return Model(std::move(graph));
    } catch (const NetworkError& e) {
      rethrow_naming(path, e);
    }
  }
  const InputKind kind = sniffed.kind;
  const std::string bytes = read_input_file(path, max_input_bytes(kind, options.engine.max_memory),
                                            "model file", StreamFormat::json_or_onnx);
  try {
    return parse_model(bytes, options);
  } catch (const InputShapeError& e) {
    rethrow_naming(path, e);
  } catch (const FormatError& e) {
    rethrow_naming(path, e);
  } catch (const UnsupportedModel& e) {
    rethrow_naming(path, e);
  } catch (const NetworkError& e) {
    rethrow_naming(path, e);
  }
}

}  // namespace pathlift
