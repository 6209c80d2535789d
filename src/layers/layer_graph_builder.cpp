// LayerGraphBuilder (layer_graph_builder.hpp): the rules every layer graph follows, checked one
// layer at a time, and layer_shapes(), which replays a whole graph through them.

#include "pathlift/layer_graph_builder.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <limits>
#include <tuple>
#include <utility>

#include "pathlift/error.hpp"
#include "src/core/checked.hpp"
#include "src/layers/detail/layer_rules.hpp"
#include "src/layers/layer_kinds.hpp"

namespace pathlift {

using detail::Blocks;
using detail::checked_entries;
using detail::has_parameters;
using detail::LayerChecker;
using detail::LayerProblem;
using detail::shape_text;

namespace {}  // namespace

// ---------------------------------------------------------------------------------------------
// The builder

LayerGraphBuilder::LayerGraphBuilder(std::vector<Index> input_shape, std::string input_name,
                                     LayerNames names)
    : m_name_rule(names) {
  if (input_shape.empty() || input_shape.size() > 3) {
    throw NetworkError(
        fmt::format("the input shape {} must have 1 to 3 dimensions", shape_text(input_shape)));
  }
  try {
    checked_entries(input_shape, "the input shape");
  } catch (const LayerProblem& p) {
    throw NetworkError(p.what);
  }
  if (input_name.empty()) {
    throw NetworkError("layer 0 (input) has an empty name");
  }
  m_graph.input_shape = input_shape;
  Layer layer;
  layer.kind = LayerKind::input;
  layer.name = std::move(input_name);
  m_names.emplace(layer.name, 0);
  m_graph.layers.push_back(std::move(layer));
  m_shapes.push_back(std::move(input_shape));
  m_failed.push_back(false);
}

LayerOutput LayerGraphBuilder::input() const {
  return {0, m_shapes[0], true};
}

const std::vector<Index>& LayerGraphBuilder::shape(Index layer) const {
  return m_shapes.at(static_cast<std::size_t>(layer));
}

Index LayerGraphBuilder::find(std::string_view name) const {
  const auto it = m_names.find(std::string(name));
  return it == m_names.end() ? -1 : it->second;
}

void LayerGraphBuilder::fail(Index index, std::string what) {
  const Layer& l = m_graph.layers[static_cast<std::size_t>(index)];
  m_problems.push_back(
      fmt::format("layer {} '{}' ({}): {}", index, printable(l.name), to_string(l.kind), what));
  m_failed[static_cast<std::size_t>(index)] = true;
  m_shapes[static_cast<std::size_t>(index)].clear();
}

void LayerGraphBuilder::problem(std::string what, Problem kind) {
  m_problems.push_back(std::move(what));
  m_unsupported = m_unsupported || kind == Problem::unsupported;
}

void LayerGraphBuilder::throw_problems() const {
  if (m_problems.empty()) {
    return;
  }
  std::string message = m_problems.front();
  if (m_problems.size() > 1) {
    message = fmt::format("{} problems:", m_problems.size());
    for (const std::string& p : m_problems) {
      message += "\n  - " + p;
    }
  }
  if (m_unsupported) {
    throw UnsupportedModel(message);
  }
  throw NetworkError(message);
}

LayerOutput LayerGraphBuilder::add(Layer layer, const LayerParameters& parameters) {
  const auto index = static_cast<Index>(m_graph.layers.size());
  // The name first: every message names the layer.
  std::string problem;
  const bool reserved = layer.name.empty() || layer.name == "x";
  const auto taken = m_names.find(layer.name);
  if ((reserved || taken != m_names.end()) && m_name_rule == LayerNames::unique) {
    const std::string base = layer.name.empty() ? to_string(layer.kind) : layer.name;
    for (Index k = 2;; ++k) {
      std::string candidate = fmt::format("{}_{}", base, k);
      if (!m_names.contains(candidate)) {
        layer.name = std::move(candidate);
        break;
      }
    }
  } else if (layer.name.empty()) {
    problem = fmt::format("layer {} ({}) has an empty name", index, to_string(layer.kind));
  } else if (layer.name == "x") {
    problem = fmt::format("layer {} is named 'x', the name of the input entries' nodes: rename it",
                          index);
  } else if (taken != m_names.end()) {
    problem = fmt::format("duplicate layer name '{}' (layers {} and {})", printable(layer.name),
                          taken->second, index);
  }
  if (problem.empty()) {
    m_names.emplace(layer.name, index);
  }
  m_graph.layers.push_back(std::move(layer));
  m_shapes.emplace_back();
  m_failed.push_back(false);
  const Layer& l = m_graph.layers.back();
  if (!problem.empty()) {
    m_problems.push_back(std::move(problem));
    m_failed.back() = true;
    return {index, {}, false};
  }
  for (const Index ref : l.inputs) {
    if (ref >= 0 && ref < index && m_failed[static_cast<std::size_t>(ref)]) {
      m_failed.back() = true;  // one cause, reported at the layer that broke a rule
      return {index, {}, false};
    }
  }
  try {
    const LayerChecker checker(l, index, m_shapes);
    std::vector<Index> out = checker.check();
    checked_entries(out, "its output of shape");
    m_shapes.back() = std::move(out);
    if (has_parameters(l.kind)) {
      check_blocks(index, &parameters);
    }
  } catch (const LayerProblem& p) {
    fail(index, p.what);
    return {index, {}, false};
  }
  return {index, m_shapes.back(), true};
}

void LayerGraphBuilder::check_blocks(Index index, const LayerParameters* parameters) {
  const Layer& l = m_graph.layers[static_cast<std::size_t>(index)];
  const LayerChecker checker(l, index, m_shapes);
  const Blocks b = checker.blocks();
  const bool bn = detail::form_of(l.kind) == detail::Form::channel_affine;
  if (parameters != nullptr) {
    const std::vector<Index>& x = m_shapes[static_cast<std::size_t>(l.inputs[0])];
    if (const auto& w = parameters->weight;
        w && (bn ? detail::entries_of(w->shape) != b.weight : w->shape != b.weight_shape)) {
      checker.fail(
          bn ? fmt::format("scale '{}' of shape {} has {} entries, but the input of shape {} has "
                           "{} channels",
                           printable(w->name), shape_text(w->shape), detail::entries_of(w->shape),
                           shape_text(x), b.weight)
             : fmt::format("weight '{}' of shape {} does not fit an input of shape {}: the layer "
                           "needs a weight of shape {}",
                           printable(w->name), shape_text(w->shape), shape_text(x),
                           shape_text(b.weight_shape)));
    }
    if (const auto& bias = parameters->bias; bias && detail::entries_of(bias->shape) != b.bias) {
      checker.fail(fmt::format(
          "bias '{}' of shape {} has {} entries, but the layer has {} output "
          "channels",

          printable(bias->name), shape_text(bias->shape), detail::entries_of(bias->shape), b.bias));
    }
  }
  if (!m_num_params_known) {
    return;
  }
  const auto block = [&](const char* what, Index offset, Index size, bool required) {
    if (offset == -1 && !required) {
      return;
    }
    if (offset < 0) {
      checker.fail(fmt::format("{} offset {} is negative{}", what, offset,
                               required ? "" : " (-1 means no bias)"));
    }
    if (offset > m_graph.num_params || size > m_graph.num_params - offset) {
      checker.fail(
          fmt::format("{} block [{}, {}) ({} parameters) is outside theta (num_params = "
                      "{})",
                      what, offset, offset + size, size, m_graph.num_params));
    }
  };
  block(bn ? "weight (a)" : "weight", l.weight_offset, b.weight, true);
  block(bn ? "bias (b)" : "bias", l.bias_offset, b.bias, false);
}

void LayerGraphBuilder::output(Index layer) {
  m_graph.outputs.push_back(layer);
}

void LayerGraphBuilder::set_num_params(Index num_params) {
  if (num_params < 0) {
    throw NetworkError(fmt::format("num_params is negative: {}", num_params));
  }
  m_graph.num_params = num_params;
  m_num_params_known = true;
}

void LayerGraphBuilder::set_offsets(Index layer, Index weight_offset, Index bias_offset) {
  Layer& l = m_graph.layers.at(static_cast<std::size_t>(layer));
  l.weight_offset = weight_offset;
  l.bias_offset = bias_offset;
}

std::string LayerGraphBuilder::block_of(Index k) const {
  for (std::size_t i = 1; i < m_graph.layers.size(); ++i) {
    const Layer& l = m_graph.layers[i];
    if (m_failed[i] || !has_parameters(l.kind)) {
      continue;
    }
    const Blocks b = LayerChecker(l, static_cast<Index>(i), m_shapes).blocks();
    const bool bn = detail::form_of(l.kind) == detail::Form::channel_affine;
    for (const auto& [offset, size, what] :
         {std::tuple{l.weight_offset, b.weight, bn ? "a" : "weight"},
          std::tuple{l.bias_offset, b.bias, bn ? "b" : "bias"}}) {
      if (offset >= 0 && k >= offset && k - offset < size) {
        return fmt::format(" (entry {} of the {} of layer {} '{}')", k - offset, what, i,
                           printable(l.name));
      }
    }
  }
  return {};
}

LayerGraph LayerGraphBuilder::finish(Index num_params, std::optional<std::vector<double>> weights) {
  if (num_params >= 0 || !m_num_params_known) {
    set_num_params(std::max<Index>(num_params, 0));
  }
  // The blocks of the layers added before d was known (and again after a set_offsets()).
  for (std::size_t i = 1; i < m_graph.layers.size(); ++i) {
    if (!m_failed[i] && has_parameters(m_graph.layers[i].kind)) {
      try {
        check_blocks(static_cast<Index>(i), nullptr);
      } catch (const LayerProblem& p) {
        fail(static_cast<Index>(i), p.what);
      }
    }
  }
  if (m_graph.outputs.empty()) {
    m_problems.emplace_back("the layer graph has no output layer");
  }
  for (std::size_t j = 0; j < m_graph.outputs.size(); ++j) {
    const Index o = m_graph.outputs[j];
    if (o < 0 || std::cmp_greater_equal(o, m_graph.layers.size())) {
      m_problems.push_back(fmt::format("outputs[{}] refers to layer {}, not a layer (0..{})", j, o,
                                       m_graph.layers.size() - 1));
    }
  }
  if (weights) {
    check_weights(*weights);
    m_graph.weights = std::move(weights);
  }
  throw_problems();
  return std::move(m_graph);
}

void LayerGraphBuilder::check_weights(std::span<const double> weights) {
  if (std::cmp_not_equal(weights.size(), m_graph.num_params)) {
    m_problems.push_back(fmt::format("the weights have {} entries but num_params is {}",
                                     weights.size(), m_graph.num_params));
    return;
  }
  for (std::size_t k = 0; k < weights.size(); ++k) {
    if (!std::isfinite(weights[k])) {
      m_problems.push_back(fmt::format("weight {} is not finite: {}{}", k, weights[k],
                                       block_of(static_cast<Index>(k))));
      return;
    }
  }
}

}  // namespace pathlift
