// Weights files (safetensors) as import writes and export reads them:
// "op.param" -> values, F32, and I64 for integer state.
#pragma once

#include <map>
#include <string>

#include "coordinator/onnx/onnx_tensor.h"

namespace devmap::onnx_io {

// Writes `weights` (HostTensor::integer ones as I64) in name order. Throws
// devmap::Error when the file cannot be written.
void write_weights(const std::string& path, const std::map<std::string, HostTensor>& weights);
// Reads every tensor of a safetensors file. Throws devmap::Error
// (kInvalidInput) naming the file when it is damaged or unreadable.
std::map<std::string, HostTensor> read_weights(const std::string& path);

}  // namespace devmap::onnx_io
