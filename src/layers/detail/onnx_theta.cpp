// The ONNX importer's theta (onnx_import.hpp): the parameter blocks the layers read, laid out in
// the model's parameter order, and the warning for initializers the exporter made.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "pathlift/error.hpp"
#include "src/core/detail/huge_pages.hpp"
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

namespace {

/// The values a use puts in theta: computed, or the tensor's (transposed from (in, out) to
/// (out, in) when asked), each checked finite.
std::vector<double> block_values(const TensorProto* tensor, bool transpose,
                                 const std::shared_ptr<std::vector<double>>& computed) {
  if (computed) {
    return *computed;
  }
  std::vector<double> v = float_values(*tensor);
  for (std::size_t k = 0; k < v.size(); ++k) {
    if (!std::isfinite(v[k])) {
      throw NetworkError(fmt::format("ONNX initializer '{}' entry {} is not finite: {}",
                                     printable(tensor->name()), k, v[k]));
    }
  }
  if (!transpose) {
    return v;
  }
  const std::vector<Index> dims = tensor_dims(*tensor);
  const auto in = static_cast<std::size_t>(dims[0]);
  const auto out = static_cast<std::size_t>(dims[1]);
  std::vector<double> t(v.size());
  for (std::size_t i = 0; i < in; ++i) {
    for (std::size_t o = 0; o < out; ++o) {
      t[o * in + i] = v[i * out + o];
    }
  }
  return t;
}

}  // namespace

std::vector<double> Importer::lay_out_theta() {
  const std::vector<std::string> order = parameter_order();
  std::unordered_map<std::string, std::vector<std::size_t>> uses_of;
  for (std::size_t k = 0; k < m_uses.size(); ++k) {
    uses_of[m_uses[k].param].push_back(k);
  }
  std::size_t total = 0;
  for (const std::string& name : order) {
    const Use& u = m_uses[uses_of.at(name).front()];
    total += u.values ? u.values->size() : static_cast<std::size_t>(tensor_entries(*u.tensor));
  }
  std::vector<double> theta;
  reserve_huge(theta, total);
  std::vector<Index> offset_of(m_uses.size(), -1);
  for (const std::string& name : order) {
    const std::vector<std::size_t>& ks = uses_of.at(name);
    const Use& first = m_uses[ks.front()];
    const auto offset = static_cast<Index>(theta.size());
    const std::vector<double> v = block_values(first.tensor, first.transpose, first.values);
    theta.insert(theta.end(), v.begin(), v.end());
    for (const std::size_t k : ks) {
      const Use& u = m_uses[k];
      const bool same = u.values == first.values &&
                        (u.values || (u.tensor == first.tensor && u.transpose == first.transpose));
      if (!same) {
        const std::vector<double> w = block_values(u.tensor, u.transpose, u.values);
        if (w != v) {
          throw UnsupportedModel(fmt::format(
              "initializer '{}' is used by two layers with different values (a shared batch "
              "norm scale, or a weight both transposed and not)",
              printable(name)));
        }
      }
      offset_of[k] = offset;
    }
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
