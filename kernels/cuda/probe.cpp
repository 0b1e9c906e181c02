#include "kernels/cuda/probe.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <sstream>

#include "core/base/format_bytes.h"
#include "kernels/cuda/probe_conv.h"
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
  p.cudnn_cudart_version = cudnnGetCudartVersion();
  int major = 0, minor = 0, patch = 0;
  if (cublasGetProperty(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(MINOR_VERSION, &minor) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(PATCH_LEVEL, &patch) == CUBLAS_STATUS_SUCCESS)
    p.cublas_version = major * 10000 + minor * 100 + patch;
  p.built_architectures = DEVMAP_CUDA_ARCHITECTURES;
  p.library_problem = cuda_library_problem();
}

// Creates and destroys a cuDNN and a cuBLAS handle on the current device and
// reads cuDNN's forward convolution algorithm count (the convolution
// sub-library) and runs one tiny convolution (probe_convolution_problem);
// empty, or what failed.
std::string handle_problem(GpuProbe& p) {
  cudnnHandle_t dnn = nullptr;
  cudnnStatus_t s = cudnnCreate(&dnn);
  if (s != CUDNN_STATUS_SUCCESS) return std::string("cudnnCreate failed: ") + cudnnGetErrorString(s);
  s = cudnnGetConvolutionForwardAlgorithmMaxCount(dnn, &p.conv_algorithms);
  const std::string conv = s == CUDNN_STATUS_SUCCESS ? probe_convolution_problem(dnn) : std::string();
  const cudnnStatus_t destroyed = cudnnDestroy(dnn);
  if (s != CUDNN_STATUS_SUCCESS)
    return std::string(
               "cuDNN's convolution library (libcudnn_cnn) does not answer: "
               "cudnnGetConvolutionForwardAlgorithmMaxCount: ") +
           cudnnGetErrorString(s);
  if (p.conv_algorithms <= 0) return "cuDNN offers no forward convolution algorithm";
  if (!conv.empty()) return conv;
  if (destroyed != CUDNN_STATUS_SUCCESS) return std::string("cudnnDestroy failed: ") + cudnnGetErrorString(destroyed);
  cublasHandle_t blas = nullptr;
  cublasStatus_t b = cublasCreate(&blas);
  if (b != CUBLAS_STATUS_SUCCESS) return std::string("cublasCreate failed: ") + cublasGetStatusString(b);
  b = cublasDestroy(blas);
  if (b != CUBLAS_STATUS_SUCCESS) return std::string("cublasDestroy failed: ") + cublasGetStatusString(b);
  return {};
}

}  // namespace

std::string cuda_version_problem(size_t cudnn_version, size_t cudnn_build_version, size_t cudnn_cudart_version,
                                 int runtime_version) {
  if (cudnn_version / 10000 != cudnn_build_version / 10000)
    return "cuDNN " + version_triple(cudnn_version) + " is loaded; this build needs cuDNN " +
           std::to_string(cudnn_build_version / 10000) + " (libcudnn.so." +
           std::to_string(cudnn_build_version / 10000) + ")";
  if (runtime_version > 0 && cudnn_cudart_version / 1000 != static_cast<size_t>(runtime_version) / 1000)
    return "the loaded cuDNN " + version_triple(cudnn_version) + " is built for CUDA " +
           cuda_version_string(static_cast<int>(cudnn_cudart_version)) + ", this build runs CUDA " +
           cuda_version_string(runtime_version) + " (install the cuDNN for CUDA " +
           std::to_string(runtime_version / 1000) + ", e.g. the nvidia-cudnn-cu" +
           std::to_string(runtime_version / 1000) + " wheel)";
  return {};
}

std::string cuda_library_problem() {
  int runtime = 0;
  if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) runtime = 0;
  std::string problem = cuda_version_problem(cudnnGetVersion(), CUDNN_VERSION, cudnnGetCudartVersion(), runtime);
  if (!problem.empty()) return problem;
  cudnnStatus_t s = cudnnOpsVersionCheck();
  if (s != CUDNN_STATUS_SUCCESS)
    return std::string("cuDNN's ops library (libcudnn_ops) is missing or does not match libcudnn: ") +
           cudnnGetErrorString(s);
  s = cudnnCnnVersionCheck();
  if (s != CUDNN_STATUS_SUCCESS)
    return std::string("cuDNN's convolution library (libcudnn_cnn) is missing or does not match libcudnn: ") +
           cudnnGetErrorString(s);
  return {};
}

std::string device_count_problem(int error, int device_count, int driver_version, int runtime_version) {
  const auto e = static_cast<cudaError_t>(error);
  if (e == cudaSuccess && device_count > 0) return {};
  // The error's name only: cudaErrorInsufficientDriver's text blames the
  // driver's version also where there is no driver.
  const std::string why = e == cudaSuccess ? std::string() : std::string(" (") + cudaGetErrorName(e) + ")";
  if (driver_version == 0)
    return "no NVIDIA driver: the CUDA driver library libcuda.so.1 is not loaded on this machine" + why +
           "; install the NVIDIA driver, or run on a machine with a GPU";
  if (e == cudaErrorInsufficientDriver)
    return "the NVIDIA driver supports CUDA " + cuda_version_string(driver_version) + ", this build needs CUDA " +
           cuda_version_string(runtime_version) + why + "; update the driver";
  if (e == cudaErrorNoDevice || e == cudaSuccess)
    return "no CUDA device: the NVIDIA driver (CUDA " + cuda_version_string(driver_version) +
           ") is loaded but sees no device" + why + " (is CUDA_VISIBLE_DEVICES empty or wrong?)";
  return "cudaGetDeviceCount failed: " + error_text(e);
}

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
  }
  p.reason = device_count_problem(static_cast<int>(e), p.device_count, p.driver_version, p.runtime_version);
  if (!p.reason.empty()) return p;
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
  if (!p.library_problem.empty()) {
    p.reason = p.library_problem;
    return p;
  }
  if (std::string problem = handle_problem(p); !problem.empty()) {
    (void)cudaGetLastError();
    p.reason = problem + " on gpu:" + std::to_string(ordinal);
    return p;
  }
  p.usable = true;
  return p;
}

std::string runtime_summary(int ordinal) {
  GpuProbe p;
  read_versions(p);
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, ordinal) == cudaSuccess) {
    p.name = prop.name;
    p.cc_major = prop.major;
    p.cc_minor = prop.minor;
  } else {
    (void)cudaGetLastError();
    p.name = "gpu:" + std::to_string(ordinal);
  }
  return p.name + " (sm_" + std::to_string(p.cc_major * 10 + p.cc_minor) + "), CUDA " +
         cuda_version_string(p.runtime_version) + ", cuDNN " + version_triple(p.cudnn_version) + ", cuBLAS " +
         version_triple(static_cast<size_t>(p.cublas_version));
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
    << version_triple(cudnn_build_version) << "; cuDNN's CUDA "
    << cuda_version_string(static_cast<int>(cudnn_cudart_version)) << ")\n"
    << "cuDNN libraries: "
    << (library_problem.empty() ? "ops and convolution sub-libraries load and match" : library_problem) << "\n"
    << "cuBLAS: " << version_triple(static_cast<size_t>(cublas_version)) << "\n"
    << "built for architectures: " << built_architectures << "\n";
  if (usable)
    o << "handles: cuDNN and cuBLAS created and destroyed; cuDNN forward convolution algorithms: " << conv_algorithms
      << "; a 2x2 convolution ran and gave the expected sums\n";
  return o.str();
}

}  // namespace devmap::cuda
