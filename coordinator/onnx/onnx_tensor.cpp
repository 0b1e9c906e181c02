#include "coordinator/onnx/onnx_tensor.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "coordinator/util/atomic_file.h"
#include "core/base/error.h"

namespace devmap::onnx_io {
namespace {

std::string read_bytes(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_invalid(path + ": cannot open the " + std::string(what) + ": " + std::strerror(errno));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

template <class T>
void append_raw(const std::string& raw, std::vector<double>& out) {
  const size_t n = raw.size() / sizeof(T);
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
    out.push_back(static_cast<double>(v));
  }
}

}  // namespace

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

onnx::ModelProto read_model(const std::string& path) {
  const std::string bytes = read_bytes(path, "ONNX model");
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes) || !model.has_graph())
    throw_invalid(path + ": not an ONNX model (protobuf ModelProto with a graph)");
  return model;
}

onnx::TensorProto read_tensor_file(const std::string& path) {
  onnx::TensorProto t;
  if (!t.ParseFromString(read_bytes(path, "tensor"))) throw_invalid(path + ": not an ONNX TensorProto");
  return t;
}

void write_model(const onnx::ModelProto& model, const std::string& path) {
  AtomicFile file(path, "ONNX model");
  if (!model.SerializeToOstream(&file.stream())) throw_runtime("cannot write the ONNX model " + path);
  file.commit();
}

HostTensor tensor_values(const onnx::TensorProto& t, const std::string& where) {
  using TP = onnx::TensorProto;
  if (t.data_location() == TP::EXTERNAL)
    throw_invalid(where + ": tensor '" + t.name() + "' keeps its data in an external file, which devmap does not read");
  HostTensor h;
  h.dims.assign(t.dims().begin(), t.dims().end());
  const std::string& raw = t.raw_data();
  const bool has_raw = t.has_raw_data();
  switch (t.data_type()) {
    case TP::FLOAT:
      if (has_raw)
        append_raw<float>(raw, h.values);
      else
        h.values.assign(t.float_data().begin(), t.float_data().end());
      break;
    case TP::DOUBLE:
      if (has_raw)
        append_raw<double>(raw, h.values);
      else
        h.values.assign(t.double_data().begin(), t.double_data().end());
      break;
    case TP::INT64:
      h.integer = true;
      if (has_raw)
        append_raw<int64_t>(raw, h.values);
      else
        for (int64_t v : t.int64_data()) h.values.push_back(static_cast<double>(v));
      break;
    case TP::INT32:
    case TP::INT16:
    case TP::INT8:
    case TP::UINT8:
    case TP::UINT16:
    case TP::BOOL:
      h.integer = true;
      if (has_raw) {
        if (t.data_type() == TP::INT32)
          append_raw<int32_t>(raw, h.values);
        else if (t.data_type() == TP::INT16)
          append_raw<int16_t>(raw, h.values);
        else if (t.data_type() == TP::INT8)
          append_raw<int8_t>(raw, h.values);
        else if (t.data_type() == TP::UINT16)
          append_raw<uint16_t>(raw, h.values);
        else
          append_raw<uint8_t>(raw, h.values);
      } else {
        for (int32_t v : t.int32_data()) h.values.push_back(v);
      }
      break;
    default:
      throw_invalid(where + ": tensor '" + t.name() + "' has ONNX data type " + std::to_string(t.data_type()) +
                    ", which devmap does not read (float, double and integers)");
  }
  if (static_cast<int64_t>(h.values.size()) != h.numel())
    throw_invalid(where + ": tensor '" + t.name() + "' holds " + std::to_string(h.values.size()) + " values for its " +
                  std::to_string(h.numel()) + " elements");
  return h;
}

onnx::TensorProto float_tensor(const std::string& name, const std::vector<int64_t>& dims,
                               const std::vector<float>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  return t;
}

onnx::TensorProto int64_tensor(const std::string& name, const std::vector<int64_t>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::INT64);
  t.add_dims(static_cast<int64_t>(values.size()));
  t.set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(int64_t)));
  return t;
}

}  // namespace devmap::onnx_io
