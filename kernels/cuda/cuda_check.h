// Error checks for the CUDA runtime, cuDNN and cuBLAS: a failing call
// becomes a devmap::Error (kRuntime) that names the call and the library's
// own message, so a worker's ERROR tells the user what the device said.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

namespace devmap::cuda {

// Each throws devmap::Error "CUDA error in <what>: <message> (<code>)" (or
// cuDNN / cuBLAS) unless the status is success.
void check(cudaError_t status, const char* what);
void check(cudnnStatus_t status, const char* what);
void check(cublasStatus_t status, const char* what);

// After a kernel launch: throws when the launch itself failed (a bad
// configuration, no kernel image for this GPU). Errors of the running
// kernel surface at the next synchronising call.
void check_launch(const char* what);

}  // namespace devmap::cuda
