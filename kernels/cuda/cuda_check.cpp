#include "kernels/cuda/cuda_check.h"

#include <string>

#include "core/base/error.h"

namespace devmap::cuda {

void check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  (void)cudaGetLastError();  // clear a sticky launch error so later calls report their own
  throw_runtime(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(status) + " (" +
                cudaGetErrorName(status) + ")");
}

void check(cudnnStatus_t status, const char* what) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  throw_runtime(std::string("cuDNN error in ") + what + ": " + cudnnGetErrorString(status) + " (" +
                std::to_string(static_cast<int>(status)) + ")");
}

void check(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw_runtime(std::string("cuBLAS error in ") + what + ": " + cublasGetStatusString(status) + " (" +
                cublasGetStatusName(status) + ")");
}

void check_launch(const char* what) {
  check(cudaGetLastError(), what);
}

}  // namespace devmap::cuda
