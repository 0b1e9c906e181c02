// devmap graph + weights -> ONNX model (devmap export): the forward graph
// as it predicts (batch_norm with its running statistics), for ONNX
// Runtime. Input ops become graph inputs with a symbolic batch "N"; labels,
// losses, metrics and argmax are left out; the outputs are the loss's
// class scores and every op nothing else reads.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <string>

#include "coordinator/onnx/onnx_tensor.h"
#include "core/graph/graph.h"

namespace devmap::onnx_io {

// Opset 13 (17 where a layer_norm needs LayerNormalization). `weights`
// holds every parameter of `graph` ("op.param"). Throws devmap::Error
// (kInvalidInput) naming the op for an op ONNX export does not cover and
// for a missing or misshapen weight.
onnx::ModelProto export_model(const Graph& graph, const std::map<std::string, HostTensor>& weights);

}  // namespace devmap::onnx_io
