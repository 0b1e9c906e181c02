// CudaDevice: one GPU as a worker drives it: the CUDA device, the worker's
// single stream, and the cuDNN and cuBLAS handles bound to that stream.
// Every kernel of kernels/cuda and CudaMemory issue their work on this one
// stream, so the order of operations is the order of the calls and no
// event is needed between them.
//
// Initialisation is lazy (the first accessor call), so a worker can be
// built and asked for --help on a machine without a GPU; it throws
// devmap::Error "gpu:N: no usable GPU: <reason>" there. Not thread-safe:
// one thread (the worker's) drives a device.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstdint>
#include <string>

namespace devmap::cuda {

class CudaDevice {
 public:
  explicit CudaDevice(int ordinal = 0) : ordinal_(ordinal) {}
  ~CudaDevice();
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  int ordinal() const { return ordinal_; }
  std::string name() const { return "gpu:" + std::to_string(ordinal_); }

  // Selects the device and creates the stream and handles once. cuBLAS
  // runs with its default math (FP32 FMA, no TF32) and atomics disallowed
  // (deterministic GEMMs); cuDNN's convolutions ask for FMA math
  // (conv_plan.h). Nothing is set in the environment. When a step fails,
  // what was created so far is destroyed, so a later call starts afresh.
  void ensure();
  cudaStream_t stream();
  cudnnHandle_t cudnn();
  cublasHandle_t cublas();

  // Gives cuBLAS its one workspace (`bytes` at `p`, 256-byte aligned) for
  // every call from now on; CudaMemory does this when it starts, from its
  // pool. The stream is bound to the cuBLAS handle once, in ensure(), and
  // never again: cublasSetStream would reset the workspace to cuBLAS's own.
  void set_cublas_workspace(void* p, size_t bytes);
  // The workspace cuBLAS has (0: none given, cuBLAS would use its own pool).
  size_t cublas_workspace_bytes() const { return cublas_workspace_bytes_; }

  // Waits for the stream; throws devmap::Error naming `what` when a kernel
  // issued earlier failed.
  void synchronize(const char* what);

  // 64 bytes of pinned host memory for small device-to-host reads (status
  // words), valid after ensure().
  void* host_scratch();

 private:
  int ordinal_;
  bool ready_ = false;
  cudaStream_t stream_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  void* host_scratch_ = nullptr;
  size_t cublas_workspace_bytes_ = 0;

  void destroy() noexcept;  // whatever ensure() made, in reverse order
};

// "gpu:3" -> 3; throws devmap::Error (kInvalidInput) for anything else.
int parse_gpu_ordinal(const std::string& device);

}  // namespace devmap::cuda
