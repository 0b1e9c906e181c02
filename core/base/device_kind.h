// The kinds of device a worker runs ops on. Core names them so that an op
// schema can say which kinds have a kernel for it (OpSchema::runs_on).
#pragma once

namespace devmap {

enum class DeviceKind { kCpu, kGpu };

inline const char* device_kind_name(DeviceKind kind) {
  return kind == DeviceKind::kCpu ? "cpu" : "gpu";
}

}  // namespace devmap
