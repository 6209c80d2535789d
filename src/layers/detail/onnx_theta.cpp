// The ONNX importer's theta (onnx_import.hpp): the parameter blocks the layers read, laid out in
// the model's parameter order, and the warning for initializers the exporter made.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "pathlift/error.hpp"
#include "pathlift/limits.hpp"
#include "src/core/huge_pages.hpp"
#include "src/layers/detail/onnx_import.hpp"

namespace pathlift::detail {

std::vector<std::string> Importer::parameter_order() const {
  std::unordered_set<std::string> used;
  for (const Use& u : m_uses) {
    used.insert(u.param);
  }
  const auto first_use = [&](const std::string& name) {
    const auto it = m_first_use.find(name);
    return it != m_first_use.end() ? it->second : m_g.node_size();
  };
  std::vector<std::string> order;
  std::vector<int> latest;  // latest[j]: the largest first use of order[0..j]
  for (const auto& t : m_g.initializer()) {
    if (used.count(t.name()) != 0) {
      order.push_back(t.name());
      latest.push_back(std::max(latest.empty() ? -1 : latest.back(), first_use(t.name())));
    }
  }
  // Each alias goes before the first initializer whose first use is later than its own: the
  // first j with latest[j] > first_use(alias). Aliases before the same initializer keep the
  // order of m_aliases.
  std::vector<std::vector<std::string>> before(order.size() + 1);
  for (const std::string& alias : m_aliases) {
    if (used.count(alias) != 0) {
      const auto j =
          std::upper_bound(latest.begin(), latest.end(), first_use(alias)) - latest.begin();
      before[static_cast<std::size_t>(j)].push_back(alias);
    }
  }
  std::vector<std::string> result;
  result.reserve(used.size());
  for (std::size_t j = 0; j <= order.size(); ++j) {
    result.insert(result.end(), before[j].begin(), before[j].end());
    if (j < order.size()) {
      result.push_back(order[j]);
    }
  }
  return result;
}

void Importer::write_block(const Use& u, double* out) const {
  if (u.values) {
    std::copy(u.values->begin(), u.values->end(), out);
    return;
  }
  // The tensor's values, each checked finite, transposed from (in, out) to (out, in) when
  // asked: read in blocks straight into theta.
  const TensorProto& t = *u.tensor;
  std::size_t rows = 0;
  std::size_t cols = 0;
  if (u.transpose) {
    const std::vector<Index> dims = tensor_dims(t);
    rows = static_cast<std::size_t>(dims[0]);
    cols = static_cast<std::size_t>(dims[1]);
  }
  read_floats(m_model, t, [&](std::size_t first, std::span<const double> values) {
    for (std::size_t j = 0; j < values.size(); ++j) {
      const std::size_t k = first + j;
      const double x = values[j];
      if (!std::isfinite(x)) {
        throw NetworkError(fmt::format("ONNX initializer '{}' entry {} is not finite: {}",
                                       printable(t.name()), k, x));
      }
      out[u.transpose ? (k % cols) * rows + k / cols : k] = x;
    }
  });
}

std::vector<double> Importer::lay_out_theta() {
  const std::vector<std::string> order = parameter_order();
  std::unordered_map<std::string, std::vector<std::size_t>> uses_of;
  for (std::size_t k = 0; k < m_uses.size(); ++k) {
    uses_of[m_uses[k].param].push_back(k);
  }
  const auto size_of = [](const Use& u) {
    return u.values ? u.values->size() : static_cast<std::size_t>(tensor_entries(*u.tensor));
  };
  // The data of every tensor was checked against its dims: the sizes are the tensors'.
  std::size_t total = 0;
  for (const std::string& name : order) {
    total += size_of(m_uses[uses_of.at(name).front()]);
  }
  require_bytes(static_cast<double>(total) * sizeof(double), m_max_memory,
                fmt::format("the ONNX model's weights (d = {} in {} tensors, kept as doubles)",
                            total, order.size()));
  std::vector<double> theta;
  resize_huge(theta, total);
  std::vector<Index> offset_of(m_uses.size(), -1);
  std::size_t at = 0;
  for (const std::string& name : order) {
    const std::vector<std::size_t>& ks = uses_of.at(name);
    const Use& first = m_uses[ks.front()];
    const std::size_t size = size_of(first);
    write_block(first, theta.data() + at);
    for (const std::size_t k : ks) {
      const Use& u = m_uses[k];
      const bool same = u.values == first.values &&
                        (u.values || (u.tensor == first.tensor && u.transpose == first.transpose));
      if (!same) {
        std::vector<double> w(size_of(u));
        write_block(u, w.data());
        if (!std::equal(w.begin(), w.end(), theta.begin() + static_cast<std::ptrdiff_t>(at),
                        theta.begin() + static_cast<std::ptrdiff_t>(at + size))) {
          throw UnsupportedModel(fmt::format(
              "initializer '{}' is used by two layers with different values (a shared batch "
              "norm scale, or a weight both transposed and not)",
              printable(name)));
        }
      }
      offset_of[k] = static_cast<Index>(at);
    }
    at += size;
  }
  // Every layer's offsets: the weight's, and the bias's or -1.
  std::unordered_map<Index, std::pair<Index, Index>> offsets;
  for (std::size_t k = 0; k < m_uses.size(); ++k) {
    auto [it, fresh] = offsets.try_emplace(m_uses[k].layer, -1, -1);
    (m_uses[k].bias ? it->second.second : it->second.first) = offset_of[k];
  }
  for (const Use& u : m_uses) {
    const auto& [w, b] = offsets.at(u.layer);
    m_builder->set_offsets(u.layer, w, b);
  }
  return theta;
}

std::vector<std::string> Importer::exporter_warnings() const {
  // torch.onnx.export in eval mode folds a BatchNorm into the Conv before it and names the new
  // weight and bias "onnx::Conv_<n>"; a plain export names them after the parameters.
  std::vector<std::string> warnings;
  for (std::size_t k = 0; k < m_uses.size();) {
    const Index layer = m_uses[k].layer;
    std::vector<std::string> made;
    for (; k < m_uses.size() && m_uses[k].layer == layer; ++k) {
      const std::string& name = m_uses[k].tensor->name();
      if (name.starts_with("onnx::")) {
        made.push_back(fmt::format("'{}'", printable(name)));
      }
    }
    const int node = m_layer_node[static_cast<std::size_t>(layer)];
    const std::string& op = m_g.node(node).op_type();
    if (made.empty() || (op != "Conv" && op != "Gemm")) {
      continue;
    }
    warnings.push_back(fmt::format(
        "ONNX node {}: its initializer{} {} {} made by the exporter (a BatchNorm folded into the "
        "{}?): theta is not the PyTorch model's parameters, so its path-norm differs; export "
        "with training=torch.onnx.TrainingMode.PRESERVE and do_constant_folding=False to keep "
        "the BatchNorm",
        label(node), made.size() == 1 ? "" : "s", fmt::join(made, ", "),
        made.size() == 1 ? "was" : "were", op == "Conv" ? "convolution" : "linear layer"));
  }
  return warnings;
}

}  // namespace pathlift::detail
