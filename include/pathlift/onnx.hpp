#pragma once
/// \file onnx.hpp
/// ONNX models as layer graphs (layers.hpp): the reader and the table of the operators it reads.
/// docs/layers.md ("ONNX") has the mapping's rules, docs/onnx-operators.md the table.

#include <string>
#include <string_view>
#include <vector>

#include "pathlift/layers.hpp"
#include "pathlift/options.hpp"
#include "pathlift/types.hpp"

namespace pathlift {

/// An ONNX operator (domain ai.onnx) that read_onnx reads.
struct OnnxOperator {
  std::string name;     ///< its op_type: "Conv"
  int first_opset = 1;  ///< the opsets read: first_opset to last_opset
  int last_opset = 1;
  int min_inputs = 0;  ///< the inputs and outputs over those opsets; -1: no bound
  int max_inputs = 0;
  int min_outputs = 0;
  int max_outputs = 0;
  std::string attributes;  ///< the attributes read, comma-separated ("" when none)
  std::string becomes;     ///< what it becomes in the layer graph
  bool folds = false;      ///< evaluated at import when its inputs are constants
};

/// The operators read_onnx reads, by name. The one list: an operator outside it is refused by
/// name, and the refusal lists these names.
std::vector<OnnxOperator> onnx_operators();

/// Reads an ONNX model (a file, or the serialized ModelProto bytes) into a layer graph.
/// `input_shape` (per sample, without batch) overrides the model's own input shape, which is
/// required when the model's is symbolic. The operators read are those of onnx_operators()
/// (docs/onnx-operators.md: what each becomes); constant subgraphs (shapes, pads, sizes) are
/// evaluated at import.
/// Parameters are the initializers in the file's order; theta follows that order, with
/// BatchNormalization's scale and bias standing for a and b (docs/layers.md) and an (in, out)
/// MatMul or Gemm transB = 0 weight transposed to (out, in). A parameter the exporter merged with
/// an equal one (an Identity of its initializer) is a block of its own placed before the first
/// initializer used after it, and initializers made by constant folding come last; so a
/// torch.onnx.export file gives model.parameters() order only when it has neither, or when the
/// modules run in the order they are registered (docs/layers.md, "ONNX": otherwise the same
/// values permuted; Python's theta_permutation gives the mapping).
/// Throws UnsupportedModel listing every unsupported operator (name and op type) at once;
/// FormatError for a file that is not ONNX, naming the tensor whose data does not match its
/// dims; TooLarge, before theta is allocated, when theta's d doubles exceed options.max_memory
/// (0: half of physical RAM), and likewise for the gathers' indices (8 bytes each: a small file
/// can ask for billions). A file is read under max_input_bytes(InputKind::binary,
/// options.max_memory) (io.hpp). Memory: the weights are read in blocks straight into theta,
/// from the file (read_onnx: its bytes are never held) or from `bytes` (parse_onnx: not
/// copied); besides theta, the import holds the model without its initializers' raw data, and
/// the gathers' indices (one per entry of each axis they pick along).
/// Complexity: O(file size + d + the gathers' indices).
LayerGraph read_onnx(const std::string& path, const std::vector<Index>& input_shape = {},
                     const EngineOptions& options = {});
LayerGraph parse_onnx(std::string_view bytes, const std::vector<Index>& input_shape = {},
                      const EngineOptions& options = {});

}  // namespace pathlift
