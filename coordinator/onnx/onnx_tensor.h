// ONNX files and tensors as devmap reads and writes them: a model file
// parsed with its errors named, and TensorProto <-> HostTensor (values as
// doubles, which hold float32 and every shape integer exactly).
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

namespace devmap::onnx_io {

// A constant's dims and values, row-major. `integer`: from an integer
// ONNX type (shapes, indices), so arithmetic on it truncates.
struct HostTensor {
  std::vector<int64_t> dims;
  std::vector<double> values;
  bool integer = false;
  int64_t numel() const;
};

// Parses an ONNX model file. Throws devmap::Error (kInvalidInput) naming
// the file when it cannot be read or is not an ONNX model.
onnx::ModelProto read_model(const std::string& path);
// Parses a serialized TensorProto file (ONNX's test data, input_0.pb).
onnx::TensorProto read_tensor_file(const std::string& path);
// Writes `model` to `path` (a temporary file renamed into place). Throws
// devmap::Error when it cannot.
void write_model(const onnx::ModelProto& model, const std::string& path);

// The values of `t` (float, double, float16 excluded; every integer type;
// bool), from raw_data or the typed fields. Throws devmap::Error
// (kInvalidInput) with `where` for external data and unsupported types.
HostTensor tensor_values(const onnx::TensorProto& t, const std::string& where);
// A float32 initializer `name` holding `values` with `dims`.
onnx::TensorProto float_tensor(const std::string& name, const std::vector<int64_t>& dims,
                               const std::vector<float>& values);
// An int64 initializer `name` holding `values` (1-D).
onnx::TensorProto int64_tensor(const std::string& name, const std::vector<int64_t>& values);

}  // namespace devmap::onnx_io
