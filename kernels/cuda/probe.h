// probe_gpu(): whether this process can run the GPU worker's kernels on a
// device, and what that device is. Used by `worker_gpu --probe` (which the
// coordinator can run to decide soft placement without linking CUDA), by
// CudaDevice before it creates anything, and by the GPU tests to skip.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace devmap::cuda {

struct GpuProbe {
  bool usable = false;
  std::string reason;  // why not, when !usable ("CUDA driver version is insufficient ...")
  int ordinal = 0;
  int device_count = 0;
  std::string name;  // "NVIDIA H100 80GB HBM3"
  int cc_major = 0, cc_minor = 0;
  uint64_t total_bytes = 0, free_bytes = 0;
  int driver_version = 0;           // CUDA version the driver supports, 13000 = 13.0 (0: no driver)
  int runtime_version = 0;          // CUDA runtime this build links
  size_t cudnn_version = 0;         // cudnnGetVersion(): 91900 = 9.19.0
  size_t cudnn_build_version = 0;   // CUDNN_VERSION of the headers built against
  size_t cudnn_cudart_version = 0;  // cudnnGetCudartVersion(): the CUDA runtime cuDNN was built for, 13010 = 13.1
  // Why cuDNN's libraries do not fit this build (a wrong major version, a
  // sub-library that is missing or mismatched, a CUDA runtime of another
  // major version); empty when they fit. Known without a device.
  std::string library_problem;
  int conv_algorithms = 0;          // cuDNN's forward convolution algorithm count, read through a handle (usable only)
  int cublas_version = 0;           // 130100 = 13.1.0
  std::string built_architectures;  // CMAKE_CUDA_ARCHITECTURES of this build, "80,90"

  // Lines for `worker_gpu --probe`: the device, its memory and the versions,
  // or "no usable GPU: <reason>" followed by the versions that are known.
  std::string describe() const;
};

// Probes device `ordinal` (an index among the visible devices): counts the
// devices, reads the device's properties and free memory (this creates the
// device's primary context), launches a one-thread kernel to check that
// this build has code for the device, checks cuDNN's libraries against the
// build (cuda_library_problem), then creates a cuDNN and a cuBLAS handle,
// asks cuDNN for its convolution algorithm count (which needs the
// convolution sub-library, libcudnn_cnn), runs one tiny convolution
// (probe_conv.h) and destroys both. Never throws;
// a failure is usable == false with the reason, and a CUDA error is
// cleared.
GpuProbe probe_gpu(int ordinal = 0);

// "NAME (sm_XY), CUDA a.b, cuDNN x.y.z, cuBLAS x.y.z" for a running
// worker's READY: the device's properties and the libraries' versions,
// read without allocating or launching anything (the worker's pool already
// holds the device's memory by then).
std::string runtime_summary(int ordinal);

// Whether the cuDNN this process loaded fits the build, without a device:
// its major version is the headers' (cudnnGetVersion against
// CUDNN_VERSION), its ops and convolution sub-libraries load and match it
// (cudnnOpsVersionCheck, cudnnCnnVersionCheck), and it was built for the
// CUDA runtime's major version (cudnnGetCudartVersion). Empty when it fits,
// else the reason.
std::string cuda_library_problem();
// The version part of that check, for the given numbers: empty, or the
// reason ("cuDNN 8.9.7 is loaded; this build needs cuDNN 9").
std::string cuda_version_problem(size_t cudnn_version, size_t cudnn_build_version, size_t cudnn_cudart_version,
                                 int runtime_version);

// Why cudaGetDeviceCount found no usable device: `error` is its result (as
// an int, a cudaError_t), `device_count` what it counted, `driver_version`
// cudaDriverGetVersion's answer (0: no driver) and `runtime_version` the
// runtime's. No driver (libcuda is not there, whatever the error), a driver
// too old for the runtime, a driver that sees no device, or another error
// by its name; empty when a device is there (error 0, count > 0).
std::string device_count_problem(int error, int device_count, int driver_version, int runtime_version);

// 13000 -> "13.0", 12040 -> "12.4"; 0 -> "none".
std::string cuda_version_string(int version);
// 91900 -> "9.19.0" (cuDNN), 130100 -> "13.1.0" (cuBLAS).
std::string version_triple(size_t version);

}  // namespace devmap::cuda
