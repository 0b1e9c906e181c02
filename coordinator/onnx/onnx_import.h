// ONNX model -> devmap graph and weights (devmap import): every node maps
// to devmap ops where it can (import_*.cpp, one file per family of ONNX
// ops); every node that cannot is listed with what devmap would need, all
// of them at once. docs/ONNX.md lists the operators and their conditions.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <string>
#include <vector>

#include "coordinator/onnx/onnx_tensor.h"
#include "core/graph/graph.h"

namespace devmap::onnx_io {

struct ImportOptions {
  // Values for graph inputs, used where a node needs a constant (a Conv's
  // weights, a Reshape's shape): ONNX's node tests pass weights as inputs.
  // A bound input a node reads as data stays an input op.
  std::map<std::string, HostTensor> bound_inputs;
};

struct UnsupportedNode {
  std::string node;     // the node's name, else "OpType #index"
  std::string op_type;  // "LSTM"
  std::string need;     // "needs a recurrent op"
};

struct ImportedModel {
  Graph graph;  // input ops first where the model reads them; shapes inferred
  // Parameters and state in devmap's names ("op.param") and layouts, each
  // shaped as the op's ParamSpec.
  std::map<std::string, HostTensor> weights;
  std::vector<std::string> input_names;                // the ONNX graph inputs read as data, parallel to...
  std::vector<int> input_nodes;                        // ...their input ops
  std::vector<std::string> output_names;               // the ONNX graph outputs, parallel to...
  std::vector<int> output_nodes;                       // ...the ops computing them (-1: a constant output)
  std::map<std::string, HostTensor> output_constants;  // the outputs folded to constants, by ONNX name
  std::vector<UnsupportedNode> unsupported;            // empty when the whole model imported
  // What the layout pass folded (layout_pass.h), one line each: an NHWC
  // input now read as NCHW, a Transpose folded into a dense layer's weights.
  std::vector<std::string> layout_notes;
  int64_t opset = 0;     // of the default domain
  std::string producer;  // "pytorch 1.13.1"
};

// Maps `model`'s graph, after folding tf2onnx's NHWC transposes where
// layout_pass.h can (the input then reads NCHW images). Never throws for an unsupported node: they are all
// in `unsupported` (the graph then holds what did import). Throws
// devmap::Error (kInvalidInput) for a malformed model.
ImportedModel import_model(const onnx::ModelProto& model, const ImportOptions& options = {});

// The ONNX op types import has a mapper for (each with its conditions).
std::vector<std::string> imported_op_types();

// "FILE: 2 nodes devmap cannot import: lstm1 (LSTM: needs a recurrent
// op), loop1 (Loop: needs control flow)".
std::string unsupported_message(const std::string& file, const std::vector<UnsupportedNode>& nodes);

// The opsets import accepts for the default domain: those torch.onnx.export
// (14) and tf2onnx (13, 15) write by default, and older ones (ONNX's node
// tests are written at each op's first opset); 18 changed how Reduce* and
// Pad take their axes, which no importer here reads yet.
inline constexpr int64_t kMinOpset = 1, kMaxOpset = 17;

}  // namespace devmap::onnx_io
