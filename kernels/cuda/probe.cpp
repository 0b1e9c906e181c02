#include "kernels/cuda/probe.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <sstream>

#include "core/format_bytes.h"
#include "kernels/cuda/probe_kernel.h"

#ifndef DEVMAP_CUDA_ARCHITECTURES
#define DEVMAP_CUDA_ARCHITECTURES "unknown"
#endif

namespace devmap::cuda {
namespace {

std::string error_text(cudaError_t e) {
  return std::string(cudaGetErrorString(e)) + " (" + cudaGetErrorName(e) + ")";
}

// The lowest architecture this build has code for ("80,90" -> 80), 0 when unknown.
int lowest_built_architecture(const std::string& list) {
  int lowest = 0;
  std::istringstream in(list);
  for (std::string item; std::getline(in, item, ',');) {
    int arch = 0;
    for (char c : item) {
      if (c < '0' || c > '9') break;
      arch = arch * 10 + (c - '0');
    }
    if (arch > 0 && (lowest == 0 || arch < lowest)) lowest = arch;
  }
  return lowest;
}

// Fills the versions that need no device.
void read_versions(GpuProbe& p) {
  if (cudaDriverGetVersion(&p.driver_version) != cudaSuccess) p.driver_version = 0;
  if (cudaRuntimeGetVersion(&p.runtime_version) != cudaSuccess) p.runtime_version = 0;
  p.cudnn_version = cudnnGetVersion();
  p.cudnn_build_version = CUDNN_VERSION;
  int major = 0, minor = 0, patch = 0;
  if (cublasGetProperty(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(MINOR_VERSION, &minor) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(PATCH_LEVEL, &patch) == CUBLAS_STATUS_SUCCESS)
    p.cublas_version = major * 10000 + minor * 100 + patch;
  p.built_architectures = DEVMAP_CUDA_ARCHITECTURES;
}

}  // namespace

std::string cuda_version_string(int version) {
  if (version <= 0) return "none";
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

std::string version_triple(size_t version) {
  if (version == 0) return "none";
  return std::to_string(version / 10000) + "." + std::to_string(version % 10000 / 100) + "." +
         std::to_string(version % 100);
}

GpuProbe probe_gpu(int ordinal) {
  GpuProbe p;
  p.ordinal = ordinal;
  read_versions(p);
  cudaError_t e = cudaGetDeviceCount(&p.device_count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    p.device_count = 0;
    p.reason = error_text(e);
    if (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice)
      p.reason += p.driver_version == 0 ? "; no NVIDIA driver is loaded on this machine"
                                        : "; the driver supports CUDA " + cuda_version_string(p.driver_version) +
                                              ", this build needs " + cuda_version_string(p.runtime_version);
    return p;
  }
  if (p.device_count == 0) {
    p.reason = "no CUDA device is visible (CUDA_VISIBLE_DEVICES?)";
    return p;
  }
  if (ordinal < 0 || ordinal >= p.device_count) {
    p.reason = "gpu:" + std::to_string(ordinal) + " does not exist; " + std::to_string(p.device_count) +
               " device(s) are visible (gpu:0 .. gpu:" + std::to_string(p.device_count - 1) + ")";
    return p;
  }
  cudaDeviceProp prop{};
  if ((e = cudaGetDeviceProperties(&prop, ordinal)) != cudaSuccess) {
    (void)cudaGetLastError();
    p.reason = "cannot read the properties of gpu:" + std::to_string(ordinal) + ": " + error_text(e);
    return p;
  }
  p.name = prop.name;
  p.cc_major = prop.major;
  p.cc_minor = prop.minor;
  p.total_bytes = prop.totalGlobalMem;
  const int lowest = lowest_built_architecture(p.built_architectures);
  if (lowest > 0 && p.cc_major * 10 + p.cc_minor < lowest) {
    p.reason = p.name + " has compute capability " + std::to_string(p.cc_major) + "." + std::to_string(p.cc_minor) +
               "; this build targets " + p.built_architectures +
               " (rebuild with -DCMAKE_CUDA_ARCHITECTURES=" + std::to_string(p.cc_major * 10 + p.cc_minor) + ")";
    return p;
  }
  size_t free = 0, total = 0;
  if ((e = cudaSetDevice(ordinal)) != cudaSuccess || (e = cudaMemGetInfo(&free, &total)) != cudaSuccess) {
    (void)cudaGetLastError();
    p.reason = "cannot create a context on gpu:" + std::to_string(ordinal) + ": " + error_text(e);
    return p;
  }
  p.free_bytes = free;
  p.total_bytes = total;
  int* answer = nullptr;
  if ((e = cudaMalloc(reinterpret_cast<void**>(&answer), sizeof(int))) == cudaSuccess) {
    e = run_probe_kernel(answer);
    (void)cudaFree(answer);
  }
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    p.reason = "a test kernel failed on gpu:" + std::to_string(ordinal) + ": " + error_text(e);
    return p;
  }
  p.usable = true;
  return p;
}

std::string GpuProbe::describe() const {
  std::ostringstream o;
  if (usable) {
    o << "gpu:" << ordinal << ": " << name << ", compute capability " << cc_major << "." << cc_minor << "\n"
      << "memory: " << format_bytes(total_bytes) << " total, " << format_bytes(free_bytes) << " free\n";
  } else {
    o << "no usable GPU: " << reason << "\n";
  }
  o << "devices visible: " << device_count << "\n"
    << "CUDA driver: " << cuda_version_string(driver_version) << ", runtime: " << cuda_version_string(runtime_version)
    << "\n"
    << "cuDNN: " << version_triple(cudnn_version) << " (cudnnGetVersion " << cudnn_version << "; built against "
    << version_triple(cudnn_build_version) << ")\n"
    << "cuBLAS: " << version_triple(static_cast<size_t>(cublas_version)) << "\n"
    << "built for architectures: " << built_architectures << "\n";
  return o.str();
}

}  // namespace devmap::cuda
