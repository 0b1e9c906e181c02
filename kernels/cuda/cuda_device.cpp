#include "kernels/cuda/cuda_device.h"

#include <cstdlib>

#include "core/base/error.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/probe.h"

namespace devmap::cuda {

CudaDevice::~CudaDevice() {
  destroy();
}

void CudaDevice::destroy() noexcept {
  // Errors here are ignored (the process is ending, the device is already
  // broken, or ensure() is unwinding with the error that matters).
  if (stream_ == nullptr && cudnn_ == nullptr && cublas_ == nullptr && host_scratch_ == nullptr) return;
  (void)cudaSetDevice(ordinal_);
  if (stream_ != nullptr) (void)cudaStreamSynchronize(stream_);
  if (cublas_ != nullptr) (void)cublasDestroy(cublas_);
  if (cudnn_ != nullptr) (void)cudnnDestroy(cudnn_);
  if (host_scratch_ != nullptr) (void)cudaFreeHost(host_scratch_);
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
  cublas_ = nullptr;
  cudnn_ = nullptr;
  host_scratch_ = nullptr;
  stream_ = nullptr;
  cublas_workspace_bytes_ = 0;
  ready_ = false;
}

void CudaDevice::ensure() {
  if (ready_) return;
  const GpuProbe probe = probe_gpu(ordinal_);
  if (!probe.usable) throw_runtime(name() + ": no usable GPU: " + probe.reason);
  try {
    check(cudaSetDevice(ordinal_), "cudaSetDevice");
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaHostAlloc(&host_scratch_, 64, cudaHostAllocDefault), "cudaHostAlloc (status words)");
    check(cudnnCreate(&cudnn_), "cudnnCreate");
    check(cudnnSetStream(cudnn_, stream_), "cudnnSetStream");
    check(cublasCreate(&cublas_), "cublasCreate");
    check(cublasSetStream(cublas_, stream_), "cublasSetStream");
    check(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    check(cublasSetAtomicsMode(cublas_, CUBLAS_ATOMICS_NOT_ALLOWED), "cublasSetAtomicsMode");
    check(cublasSetPointerMode(cublas_, CUBLAS_POINTER_MODE_HOST), "cublasSetPointerMode");
  } catch (...) {
    destroy();
    throw;
  }
  ready_ = true;
}

void CudaDevice::set_cublas_workspace(void* p, size_t bytes) {
  check(cublasSetWorkspace(cublas(), p, bytes), "cublasSetWorkspace");
  cublas_workspace_bytes_ = p != nullptr ? bytes : 0;
}

cudaStream_t CudaDevice::stream() {
  ensure();
  return stream_;
}

cudnnHandle_t CudaDevice::cudnn() {
  ensure();
  return cudnn_;
}

cublasHandle_t CudaDevice::cublas() {
  ensure();
  return cublas_;
}

void* CudaDevice::host_scratch() {
  ensure();
  return host_scratch_;
}

void CudaDevice::synchronize(const char* what) {
  check(cudaStreamSynchronize(stream()), what);
}

int parse_gpu_ordinal(const std::string& device) {
  const std::string prefix = "gpu:";
  bool ok = device.size() > prefix.size() && device.compare(0, prefix.size(), prefix) == 0 &&
            device.size() - prefix.size() <= 4;
  for (size_t i = prefix.size(); ok && i < device.size(); ++i) ok = device[i] >= '0' && device[i] <= '9';
  if (!ok) throw_invalid("bad GPU device name '" + device + "' (expected gpu:N, e.g. gpu:0)");
  return std::atoi(device.c_str() + prefix.size());
}

}  // namespace devmap::cuda
