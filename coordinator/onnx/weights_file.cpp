#include "coordinator/onnx/weights_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "coordinator/util/atomic_file.h"
#include "core/base/error.h"
#include "core/graph/safetensors.h"

namespace devmap::onnx_io {

void write_weights(const std::string& path, const std::map<std::string, HostTensor>& weights) {
  std::vector<SafetensorsTensor> tensors;
  for (const auto& [name, t] : weights)
    tensors.push_back({name, Shape(t.dims), t.integer ? FileDtype::kI64 : FileDtype::kF32});
  const SafetensorsLayout layout = make_safetensors_layout(tensors, {{"format", "pt"}});
  AtomicFile file(path, "weights");
  std::ostream& out = file.stream();
  out << safetensors_head(layout);
  for (const SafetensorsEntry& e : layout.entries) {
    const HostTensor& t = weights.at(e.name);
    if (e.dtype == FileDtype::kI64) {
      std::vector<int64_t> v(t.values.begin(), t.values.end());
      out.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(int64_t)));
    } else {
      std::vector<float> v(t.values.begin(), t.values.end());
      out.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
    }
  }
  file.commit();
}

std::map<std::string, HostTensor> read_weights(const std::string& path) {
  const SafetensorsLayout layout = read_safetensors_layout(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_invalid(path + ": cannot open the weights: " + std::strerror(errno));
  std::map<std::string, HostTensor> out;
  for (const SafetensorsEntry& e : layout.entries) {
    std::string bytes(e.end - e.begin, '\0');
    in.seekg(static_cast<std::streamoff>(layout.data_start + e.begin));
    if (!in.read(bytes.data(), static_cast<std::streamsize>(bytes.size())))
      throw_invalid(path + ": cannot read tensor '" + e.name + "'");
    HostTensor& t = out[e.name];
    t.dims = e.shape.dims();
    t.integer = e.dtype == FileDtype::kI64;
    const size_t n = bytes.size() / file_dtype_bytes(e.dtype);
    t.values.resize(n);
    for (size_t i = 0; i < n; ++i) {
      if (t.integer) {
        int64_t v;
        std::memcpy(&v, bytes.data() + i * 8, 8);
        t.values[i] = static_cast<double>(v);
      } else {
        float v;
        std::memcpy(&v, bytes.data() + i * 4, 4);
        t.values[i] = static_cast<double>(v);
      }
    }
  }
  return out;
}

}  // namespace devmap::onnx_io
